"""The Kafka APIs fastkc speaks, in the compact form of fastkc/protocol/schema.py.

Written from Kafka's published message specs (clients/src/main/resources/
common/message/*.json, as shipped inside the kafka-clients jar) and checked
against them by tests/unit/test_protocol_specs.py: version ranges, flexible
versions, field names, types, per-field versions, nullability, tags and
defaults. Ranges are those of Kafka 4.3's specs, which cover every version a
consumer needs against 2.1-4.3 brokers (4.x removed the oldest versions;
older brokers answer the versions listed here too).
"""
from fastkc.protocol.schema import Api, declare

API_VERSIONS = declare(
    "ApiVersions", 18, "0-4", "3+",
    request="""
client_software_name     string  3+
client_software_version  string  3+
""",
    response="""
error_code                 int16   0+
api_keys                   []      0+
  api_key                  int16   0+
  min_version              int16   0+
  max_version              int16   0+
throttle_time_ms           int32   1+
supported_features         []      3+  tag=0
  name                     string  3+
  min_version              int16   3+
  max_version              int16   3+
finalized_features_epoch   int64   3+  tag=1 default=-1
finalized_features         []      3+  tag=2
  name                     string  3+
  max_version_level        int16   3+
  min_version_level        int16   3+
zk_migration_ready         bool    3+  tag=3 default=false
""",
)

METADATA = declare(
    "Metadata", 3, "0-13", "9+",
    request="""
topics                                 []     0+  null=1+
  topic_id                             uuid   10+
  name                                 string 0+  null=10+
allow_auto_topic_creation              bool   4+  default=true
include_cluster_authorized_operations  bool   8-10
include_topic_authorized_operations    bool   8+
""",
    response="""
throttle_time_ms               int32   3+
brokers                        []      0+
  node_id                      int32   0+
  host                         string  0+
  port                         int32   0+
  rack                         string  1+  null=1+ default=null
cluster_id                     string  2+  null=2+ default=null
controller_id                  int32   1+  default=-1
topics                         []      0+
  error_code                   int16   0+
  name                         string  0+  null=12+
  topic_id                     uuid    10+
  is_internal                  bool    1+  default=false
  partitions                   []      0+
    error_code                 int16   0+
    partition_index            int32   0+
    leader_id                  int32   0+
    leader_epoch               int32   7+  default=-1
    replica_nodes              [int32] 0+
    isr_nodes                  [int32] 0+
    offline_replicas           [int32] 5+
  topic_authorized_operations  int32   8+  default=-2147483648
cluster_authorized_operations  int32   8-10 default=-2147483648
error_code                     int16   13+
""",
)

LIST_OFFSETS = declare(
    "ListOffsets", 2, "1-11", "6+",
    request="""
replica_id                int32   0+
isolation_level           int8    2+
topics                    []      0+
  name                    string  0+
  partitions              []      0+
    partition_index       int32   0+
    current_leader_epoch  int32   4+  default=-1
    timestamp             int64   0+
timeout_ms                int32   10+
""",
    response="""
throttle_time_ms     int32   2+
topics               []      0+
  name               string  0+
  partitions         []      0+
    partition_index  int32   0+
    error_code       int16   0+
    timestamp        int64   1+  default=-1
    offset           int64   1+  default=-1
    leader_epoch     int32   4+  default=-1
""",
)

FETCH = declare(
    "Fetch", 1, "4-18", "12+",
    request="""
cluster_id                 string  12+   null=12+ tag=0 default=null
replica_id                 int32   0-14  default=-1
replica_state              {}      15+   tag=1
  replica_id               int32   15+   default=-1
  replica_epoch            int64   15+   default=-1
max_wait_ms                int32   0+
min_bytes                  int32   0+
max_bytes                  int32   3+    default=0x7fffffff
isolation_level            int8    4+    default=0
session_id                 int32   7+    default=0
session_epoch              int32   7+    default=-1
topics                     []      0+
  topic                    string  0-12
  topic_id                 uuid    13+
  partitions               []      0+
    partition              int32   0+
    current_leader_epoch   int32   9+    default=-1
    fetch_offset           int64   0+
    last_fetched_epoch     int32   12+   default=-1
    log_start_offset       int64   5+    default=-1
    partition_max_bytes    int32   0+
    replica_directory_id   uuid    17+   tag=0
    high_watermark         int64   18+   tag=1 default=0x7fffffffffffffff
forgotten_topics_data      []      7+
  topic                    string  7-12
  topic_id                 uuid    13+
  partitions               [int32] 7+
rack_id                    string  11+   default=''
""",
    response="""
throttle_time_ms            int32   1+
error_code                  int16   7+
session_id                  int32   7+   default=0
responses                   []      0+
  topic                     string  0-12
  topic_id                  uuid    13+
  partitions                []      0+
    partition_index         int32   0+
    error_code              int16   0+
    high_watermark          int64   0+
    last_stable_offset      int64   4+   default=-1
    log_start_offset        int64   5+   default=-1
    diverging_epoch         {}      12+  tag=0
      epoch                 int32   12+  default=-1
      end_offset            int64   12+  default=-1
    current_leader          {}      12+  tag=1
      leader_id             int32   12+  default=-1
      leader_epoch          int32   12+  default=-1
    snapshot_id             {}      12+  tag=2
      end_offset            int64   0+   default=-1
      epoch                 int32   0+   default=-1
    aborted_transactions    []      4+   null=4+
      producer_id           int64   4+
      first_offset          int64   4+
    preferred_read_replica  int32   11+  default=-1
    records                 records 0+   null=0+
node_endpoints              []      16+  tag=0
  node_id                   int32   16+
  host                      string  16+
  port                      int32   16+
  rack                      string  16+  null=16+ default=null
""",
)

OFFSET_FOR_LEADER_EPOCH = declare(
    "OffsetForLeaderEpoch", 23, "2-4", "4+",
    request="""
replica_id                int32   3+  default=-2
topics                    []      0+
  topic                   string  0+
  partitions              []      0+
    partition             int32   0+
    current_leader_epoch  int32   2+  default=-1
    leader_epoch          int32   0+
""",
    response="""
throttle_time_ms    int32   2+
topics              []      0+
  topic             string  0+
  partitions        []      0+
    error_code      int16   0+
    partition       int32   0+
    leader_epoch    int32   1+  default=-1
    end_offset      int64   0+  default=-1
""",
)

FIND_COORDINATOR = declare(
    "FindCoordinator", 10, "0-6", "3+",
    request="""
key               string    0-3
key_type          int8      1+  default=0
coordinator_keys  [string]  4+
""",
    response="""
throttle_time_ms  int32   1+
error_code        int16   0-3
error_message     string  1-3  null=1-3
node_id           int32   0-3
host              string  0-3
port              int32   0-3
coordinators      []      4+
  key             string  4+
  node_id         int32   4+
  host            string  4+
  port            int32   4+
  error_code      int16   4+
  error_message   string  4+  null=4+
""",
)

JOIN_GROUP = declare(
    "JoinGroup", 11, "0-9", "6+",
    request="""
group_id              string  0+
session_timeout_ms    int32   0+
rebalance_timeout_ms  int32   1+  default=-1
member_id             string  0+
group_instance_id     string  5+  null=5+ default=null
protocol_type         string  0+
protocols             []      0+
  name                string  0+
  metadata            bytes   0+
reason                string  8+  null=8+ default=null
""",
    response="""
throttle_time_ms       int32   2+
error_code             int16   0+
generation_id          int32   0+  default=-1
protocol_type          string  7+  null=7+ default=null
protocol_name          string  0+  null=7+
leader                 string  0+
skip_assignment        bool    9+  default=false
member_id              string  0+
members                []      0+
  member_id            string  0+
  group_instance_id    string  5+  null=5+ default=null
  metadata             bytes   0+
""",
)

SYNC_GROUP = declare(
    "SyncGroup", 14, "0-5", "4+",
    request="""
group_id           string  0+
generation_id      int32   0+
member_id          string  0+
group_instance_id  string  3+  null=3+ default=null
protocol_type      string  5+  null=5+ default=null
protocol_name      string  5+  null=5+ default=null
assignments        []      0+
  member_id        string  0+
  assignment       bytes   0+
""",
    response="""
throttle_time_ms  int32   1+
error_code        int16   0+
protocol_type     string  5+  null=5+ default=null
protocol_name     string  5+  null=5+ default=null
assignment        bytes   0+
""",
)

HEARTBEAT = declare(
    "Heartbeat", 12, "0-4", "4+",
    request="""
group_id           string  0+
generation_id      int32   0+
member_id          string  0+
group_instance_id  string  3+  null=3+ default=null
""",
    response="""
throttle_time_ms  int32  1+
error_code        int16  0+
""",
)

LEAVE_GROUP = declare(
    "LeaveGroup", 13, "0-5", "4+",
    request="""
group_id             string  0+
member_id            string  0-2
members              []      3+
  member_id          string  3+
  group_instance_id  string  3+  null=3+ default=null
  reason             string  5+  null=5+ default=null
""",
    response="""
throttle_time_ms     int32   1+
error_code           int16   0+
members              []      3+
  member_id          string  3+
  group_instance_id  string  3+  null=3+
  error_code         int16   3+
""",
)

OFFSET_FETCH = declare(
    "OffsetFetch", 9, "1-10", "6+",
    request="""
group_id               string   0-7
topics                 []       0-7  null=2-7
  name                 string   0-7
  partition_indexes    [int32]  0-7
groups                 []       8+
  group_id             string   8+
  member_id            string   9+   null=9+ default=null
  member_epoch         int32    9+   default=-1
  topics               []       8+   null=8+
    name               string   8-9
    topic_id           uuid     10+
    partition_indexes  [int32]  8+
require_stable         bool     7+   default=false
""",
    response="""
throttle_time_ms              int32   3+
topics                        []      0-7
  name                        string  0-7
  partitions                  []      0-7
    partition_index           int32   0-7
    committed_offset          int64   0-7
    committed_leader_epoch    int32   5-7  default=-1
    metadata                  string  0-7  null=0-7
    error_code                int16   0-7
error_code                    int16   2-7  default=0
groups                        []      8+
  group_id                    string  8+
  topics                      []      8+
    name                      string  8-9
    topic_id                  uuid    10+
    partitions                []      8+
      partition_index         int32   8+
      committed_offset        int64   8+
      committed_leader_epoch  int32   8+   default=-1
      metadata                string  8+   null=8+
      error_code              int16   8+
  error_code                  int16   8+   default=0
""",
)

OFFSET_COMMIT = declare(
    "OffsetCommit", 8, "2-10", "8+",
    request="""
group_id                        string  0+
generation_id_or_member_epoch   int32   1+   default=-1
member_id                       string  1+
group_instance_id               string  7+   null=7+ default=null
retention_time_ms               int64   2-4  default=-1
topics                          []      0+
  name                          string  0-9
  topic_id                      uuid    10+
  partitions                    []      0+
    partition_index             int32   0+
    committed_offset            int64   0+
    committed_leader_epoch      int32   6+   default=-1
    committed_metadata          string  0+   null=0+
""",
    response="""
throttle_time_ms     int32   3+
topics               []      0+
  name               string  0-9
  topic_id           uuid    10+
  partitions         []      0+
    partition_index  int32   0+
    error_code       int16   0+
""",
)

CONSUMER_GROUP_HEARTBEAT = declare(
    "ConsumerGroupHeartbeat", 68, "0-1", "0+",
    request="""
group_id                 string    0+
member_id                string    0+
member_epoch             int32     0+
instance_id              string    0+  null=0+ default=null
rack_id                  string    0+  null=0+ default=null
rebalance_timeout_ms     int32     0+  default=-1
subscribed_topic_names   [string]  0+  null=0+ default=null
subscribed_topic_regex   string    1+  null=1+ default=null
server_assignor          string    0+  null=0+ default=null
topic_partitions         []        0+  null=0+ default=null
  topic_id               uuid      0+
  partitions             [int32]   0+
""",
    response="""
throttle_time_ms         int32    0+
error_code               int16    0+
error_message            string   0+  null=0+ default=null
member_id                string   0+  null=0+ default=null
member_epoch             int32    0+
heartbeat_interval_ms    int32    0+
assignment               {}       0+  null=0+ default=null
  topic_partitions       []       0+
    topic_id             uuid     0+
    partitions           [int32]  0+
""",
)

SASL_HANDSHAKE = declare(
    "SaslHandshake", 17, "0-1", "none",
    request="""
mechanism  string  0+
""",
    response="""
error_code  int16     0+
mechanisms  [string]  0+
""",
)

SASL_AUTHENTICATE = declare(
    "SaslAuthenticate", 36, "0-2", "2+",
    request="""
auth_bytes  bytes  0+
""",
    response="""
error_code           int16   0+
error_message        string  0+  null=0+
auth_bytes           bytes   0+
session_lifetime_ms  int64   1+  default=0
""",
)

CREATE_TOPICS = declare(
    "CreateTopics", 19, "2-7", "5+",
    request="""
topics                  []       0+
  name                  string   0+
  num_partitions        int32    0+
  replication_factor    int16    0+
  assignments           []       0+
    partition_index     int32    0+
    broker_ids          [int32]  0+
  configs               []       0+
    name                string   0+
    value               string   0+  null=0+
timeout_ms              int32    0+  default=60000
validate_only           bool     1+  default=false
""",
    response="""
throttle_time_ms           int32   2+
topics                     []      0+
  name                     string  0+
  topic_id                 uuid    7+
  error_code               int16   0+
  error_message            string  1+  null=0+
  topic_config_error_code  int16   5+  tag=0
  num_partitions           int32   5+  default=-1
  replication_factor       int16   5+  default=-1
  configs                  []      5+  null=5+
    name                   string  5+
    value                  string  5+  null=5+
    read_only              bool    5+
    config_source          int8    5+  default=-1
    is_sensitive           bool    5+
""",
)

DELETE_TOPICS = declare(
    "DeleteTopics", 20, "1-6", "4+",
    request="""
topics         []        6+
  name         string    6+   null=6+ default=null
  topic_id     uuid      6+
topic_names    [string]  0-5
timeout_ms     int32     0+
""",
    response="""
throttle_time_ms  int32   1+
responses         []      0+
  name            string  0+  null=6+
  topic_id        uuid    6+
  error_code      int16   0+
  error_message   string  5+  null=5+ default=null
""",
)

DESCRIBE_CONFIGS = declare(
    "DescribeConfigs", 32, "1-4", "4+",
    request="""
resources                 []        0+
  resource_type           int8      0+
  resource_name           string    0+
  configuration_keys      [string]  0+  null=0+
include_synonyms          bool      1+  default=false
include_documentation     bool      3+  default=false
""",
    response="""
throttle_time_ms          int32   0+
results                   []      0+
  error_code              int16   0+
  error_message           string  0+  null=0+
  resource_type           int8    0+
  resource_name           string  0+
  configs                 []      0+
    name                  string  0+
    value                 string  0+  null=0+
    read_only             bool    0+
    config_source         int8    1+  default=-1
    is_sensitive          bool    0+
    synonyms              []      1+
      name                string  1+
      value               string  1+  null=0+
      source              int8    1+
    config_type           int8    3+  default=0
    documentation         string  3+  null=0+
""",
)

# Group configs (share.auto.offset.reset) are set on a GROUP resource (type
# 32); the bench prepares each round's fresh share group with it.
INCREMENTAL_ALTER_CONFIGS = declare(
    "IncrementalAlterConfigs", 44, "0-1", "1+",
    request="""
resources             []      0+
  resource_type       int8    0+
  resource_name       string  0+
  configs             []      0+
    name              string  0+
    config_operation  int8    0+
    value             string  0+  null=0+
validate_only         bool    0+
""",
    response="""
throttle_time_ms  int32   0+
responses         []      0+
  error_code      int16   0+
  error_message   string  0+  null=0+
  resource_type   int8    0+
  resource_name   string  0+
""",
)

# Share groups (KIP-932). Kafka's specs number these fields from version 0
# (the early-access versions Kafka 4.1 removed) while the valid versions start
# at 1, so the field ranges below read "0+" as Kafka's do.
SHARE_GROUP_HEARTBEAT = declare(
    "ShareGroupHeartbeat", 76, "1", "0+",
    request="""
group_id                string    0+
member_id               string    0+
member_epoch            int32     0+
rack_id                 string    0+  null=0+ default=null
subscribed_topic_names  [string]  0+  null=0+ default=null
""",
    response="""
throttle_time_ms         int32    0+
error_code               int16    0+
error_message            string   0+  null=0+ default=null
member_id                string   0+  null=0+ default=null
member_epoch             int32    0+
heartbeat_interval_ms    int32    0+
assignment               {}       0+  null=0+ default=null
  topic_partitions       []       0+
    topic_id             uuid     0+
    partitions           [int32]  0+
""",
)

SHARE_GROUP_DESCRIBE = declare(
    "ShareGroupDescribe", 77, "1", "0+",
    request="""
group_ids                      [string]  0+
include_authorized_operations  bool      0+
""",
    response="""
throttle_time_ms              int32     0+
groups                        []        0+
  error_code                  int16     0+
  error_message               string    0+  null=0+ default=null
  group_id                    string    0+
  group_state                 string    0+
  group_epoch                 int32     0+
  assignment_epoch            int32     0+
  assignor_name               string    0+
  members                     []        0+
    member_id                 string    0+
    rack_id                   string    0+  null=0+ default=null
    member_epoch              int32     0+
    client_id                 string    0+
    client_host               string    0+
    subscribed_topic_names    [string]  0+
    assignment                {}        0+
      topic_partitions        []        0+
        topic_id              uuid      0+
        topic_name            string    0+
        partitions            [int32]   0+
  authorized_operations       int32     0+  default=-2147483648
""",
)

SHARE_FETCH = declare(
    "ShareFetch", 78, "1-2", "0+",
    request="""
group_id                     string   0+  null=0+ default=null
member_id                    string   0+  null=0+
share_session_epoch          int32    0+
max_wait_ms                  int32    0+
min_bytes                    int32    0+
max_bytes                    int32    0+  default=0x7fffffff
max_records                  int32    1+
batch_size                   int32    1+
share_acquire_mode           int8     2+  default=0
is_renew_ack                 bool     2+  default=false
topics                       []       0+
  topic_id                   uuid     0+
  partitions                 []       0+
    partition_index          int32    0+
    partition_max_bytes      int32    0
    acknowledgement_batches  []       0+
      first_offset           int64    0+
      last_offset            int64    0+
      acknowledge_types      [int8]   0+
forgotten_topics_data        []       0+
  topic_id                   uuid     0+
  partitions                 [int32]  0+
""",
    response="""
throttle_time_ms               int32    0+
error_code                     int16    0+
error_message                  string   0+  null=0+ default=null
acquisition_lock_timeout_ms    int32    1+
responses                      []       0+
  topic_id                     uuid     0+
  partitions                   []       0+
    partition_index            int32    0+
    error_code                 int16    0+
    error_message              string   0+  null=0+ default=null
    acknowledge_error_code     int16    0+
    acknowledge_error_message  string   0+  null=0+ default=null
    current_leader             {}       0+
      leader_id                int32    0+
      leader_epoch             int32    0+
    records                    records  0+  null=0
    acquired_records           []       0+
      first_offset             int64    0+
      last_offset              int64    0+
      delivery_count           int16    0+
node_endpoints                 []       0+
  node_id                      int32    0+
  host                         string   0+
  port                         int32    0+
  rack                         string   0+  null=0+ default=null
""",
)

SHARE_ACKNOWLEDGE = declare(
    "ShareAcknowledge", 79, "1-2", "0+",
    request="""
group_id                     string   0+  null=0+ default=null
member_id                    string   0+  null=0+
share_session_epoch          int32    0+
is_renew_ack                 bool     2+  default=false
topics                       []       0+
  topic_id                   uuid     0+
  partitions                 []       0+
    partition_index          int32    0+
    acknowledgement_batches  []       0+
      first_offset           int64    0+
      last_offset            int64    0+
      acknowledge_types      [int8]   0+
""",
    response="""
throttle_time_ms             int32   0+
error_code                   int16   0+
error_message                string  0+  null=0+ default=null
acquisition_lock_timeout_ms  int32   2+
responses                    []      0+
  topic_id                   uuid    0+
  partitions                 []      0+
    partition_index          int32   0+
    error_code               int16   0+
    error_message            string  0+  null=0+ default=null
    current_leader           {}      0+
      leader_id              int32   0+
      leader_epoch           int32   0+
node_endpoints               []      0+
  node_id                    int32   0+
  host                       string  0+
  port                       int32   0+
  rack                       string  0+  null=0+ default=null
""",
)

ALL_APIS = (
    API_VERSIONS,
    METADATA,
    LIST_OFFSETS,
    FETCH,
    OFFSET_FOR_LEADER_EPOCH,
    FIND_COORDINATOR,
    JOIN_GROUP,
    SYNC_GROUP,
    HEARTBEAT,
    LEAVE_GROUP,
    OFFSET_FETCH,
    OFFSET_COMMIT,
    CONSUMER_GROUP_HEARTBEAT,
    SASL_HANDSHAKE,
    SASL_AUTHENTICATE,
    CREATE_TOPICS,
    DELETE_TOPICS,
    DESCRIBE_CONFIGS,
    INCREMENTAL_ALTER_CONFIGS,
    SHARE_GROUP_HEARTBEAT,
    SHARE_GROUP_DESCRIBE,
    SHARE_FETCH,
    SHARE_ACKNOWLEDGE,
)

APIS_BY_NAME = {api.name: api for api in ALL_APIS}
APIS_BY_KEY = {api.key: api for api in ALL_APIS}


def get_api(name_or_key: str | int) -> Api:
    """Look an API up by its name ("Fetch") or key (1)."""
    try:
        if isinstance(name_or_key, int):
            return APIS_BY_KEY[name_or_key]
        return APIS_BY_NAME[name_or_key]
    except KeyError:
        raise KeyError("fastkc declares no API {0!r}".format(name_or_key)) from None
