"""A steady independent producer and fastkc group consumers running side by
side against a real broker whose SASL sessions expire (KIP-368), with the
ledger the checks need: what the broker acknowledged, what each consumer
delivered, its commits, and each connection's re-authentications and losses.

Used by tests/integration/test_reauth.py. A mechanism is one `Case` (an id
and a function from the started broker's BrokerInfo to the consumer's
security configs), so adding one (OAUTHBEARER with expiring tokens) is one
more entry in that test's CASES; every case reads the same topic in a group
of its own while the producer writes, all in one run, so the run's wall time
does not grow with the number of cases.

The producer is confluent-kafka's (librdkafka), writing over the broker's
PLAINTEXT listener: its own sessions are not the subject, and the data must
not come from fastkc.
"""
import threading
import time
from dataclasses import dataclass, field

#: the harness's SASL user (fastkc_tools.broker.harness, security=True)
USER, PASSWORD = "alice", "alice-secret"


@dataclass(frozen=True)
class Case:
    id: str
    #: BrokerInfo -> the consumer's security configs (bootstrap_servers included)
    configs: object
    #: the session lifetime the broker grants this case (seconds), when not
    #: connections.max.reauth.ms: an OAUTHBEARER session ends with its token
    session_s: float = None


def sasl_configs(protocol, mechanism, user=USER, password=PASSWORD):
    """A Case's configs function for PLAIN / SCRAM on one of the harness's listeners."""
    def configs(info):
        out = {"bootstrap_servers": info.listeners[protocol], "security_protocol": protocol,
               "sasl_mechanism": mechanism, "sasl_plain_username": user, "sasl_plain_password": password}
        if protocol == "SASL_SSL":
            out["ssl_cafile"] = info.tls["ca"]
        return out
    return configs


def oidc_configs(protocol, client_id):
    """A Case's configs function for OAUTHBEARER through fastkc's OIDC
    provider against the harness's token endpoint (fastkc_tools.broker.oauth);
    the provider is in the configs, so a test can read its fetch count."""
    def configs(info):
        from fastkc.auth.oidc import OidcClientCredentialsProvider

        oidc = info.credentials["oauthbearer"]
        provider = OidcClientCredentialsProvider(oidc["token_endpoint_url"], client_id,
                                                 oidc["clients"][client_id]["secret"])
        return {"bootstrap_servers": info.listeners[protocol], "security_protocol": protocol,
                "sasl_mechanism": "OAUTHBEARER", "sasl_oauth_token_provider": provider}
    return configs


def gssapi_configs(protocol):
    """A Case's configs function for GSSAPI with the harness realm's client
    keytab (the process needs KRB5_CONFIG pointing at the realm's krb5.conf)."""
    def configs(info):
        k = info.kerberos
        out = {"bootstrap_servers": info.listeners[protocol], "security_protocol": protocol,
               "sasl_mechanism": "GSSAPI", "sasl_kerberos_keytab": k["client_keytab"],
               "sasl_kerberos_principal": k["client_principal"]}
        if protocol == "SASL_SSL":
            out["ssl_cafile"] = info.tls["ca"]
        return out
    return configs


class SteadyProducer(threading.Thread):
    """Writes `rate` records a second round-robin over the partitions until
    stop(); `acked[partition]` holds (offset, value) in the broker's order."""

    def __init__(self, bootstrap, topic, partitions, rate=200):
        super().__init__(name="reauth-producer", daemon=True)
        from confluent_kafka import Producer

        self._producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20,
                                   "enable.idempotence": True})
        self.topic = topic
        self.partitions = partitions
        self.rate = rate
        self.acked = {p: [] for p in range(partitions)}
        self.errors = []
        self._halt = threading.Event()

    def _delivered(self, err, msg):
        if err is not None:
            self.errors.append(str(err))
        else:
            self.acked[msg.partition()].append((msg.offset(), msg.value()))

    def run(self):
        seq = 0
        began = time.monotonic()
        while not self._halt.is_set():
            due = int((time.monotonic() - began) * self.rate)
            while seq < due:
                self._producer.produce(self.topic, value=b"r%d" % seq, partition=seq % self.partitions,
                                       on_delivery=self._delivered)
                seq += 1
            self._producer.poll(0.02)
        if self._producer.flush(30):
            self.errors.append("records still undelivered after 30 s")

    def stop(self):
        self._halt.set()
        self.join(60)

    def end_offsets(self):
        return {p: (acked[-1][0] + 1 if acked else 0) for p, acked in self.acked.items()}


@dataclass
class ReaderResult:
    delivered: dict = field(default_factory=dict)  # partition -> [(offset, value)] in delivery order
    commits_ok: int = 0
    commit_errors: list = field(default_factory=list)
    errors: list = field(default_factory=list)  # exceptions out of poll()
    metrics: dict = field(default_factory=dict)  # consumer.metrics()["consumer-metrics"]
    #: (which client, node id, reauthentications, lost, state, the last loss's error or None)
    connections: list = field(default_factory=list)
    committed: dict = field(default_factory=dict)  # partition -> committed offset at the end
    caught_up: bool = False
    token_fetches: int = None  # an OIDC provider's token endpoint calls (OAUTHBEARER cases)


class GroupReader(threading.Thread):
    """One fastkc consumer in its own group: subscribe, poll, commit()
    synchronously every `commit_every` s, until told the producer's end
    offsets and it has reached them (then a last commit) or `give_up`."""

    def __init__(self, configs, topic, group_id, commit_every=1.0):
        super().__init__(name="reauth-reader-" + group_id, daemon=True)
        self.configs = dict(configs)
        self.topic = topic
        self.group_id = group_id
        self.commit_every = commit_every
        self.result = ReaderResult()
        self.ends = None  # set by the driver once the producer stopped
        self.give_up = None

    def run(self):
        from fastkc import KafkaConsumer
        from fastkc.structs import TopicPartition

        consumer = KafkaConsumer(group_id=self.group_id, enable_auto_commit=False, auto_offset_reset="earliest",
                                 client_id="reauth-" + self.group_id, **self.configs)
        result = self.result
        try:
            consumer.subscribe([self.topic])
            last_commit = time.monotonic()
            while True:
                try:
                    for tp, records in consumer.poll(timeout_ms=200).items():
                        result.delivered.setdefault(tp.partition, []).extend((r.offset, r.value) for r in records)
                except Exception as exc:  # recorded: the test asserts there are none
                    result.errors.append(repr(exc))
                    time.sleep(0.2)
                now = time.monotonic()
                if now - last_commit >= self.commit_every:
                    self._commit(consumer)
                    last_commit = now
                ends = self.ends
                if ends is not None and all((result.delivered.get(p) or [(-1, None)])[-1][0] + 1 >= end
                                            for p, end in ends.items()):
                    result.caught_up = True
                    break
                if self.give_up is not None and now > self.give_up:
                    break
            self._commit(consumer)
            for p in range(len(ends or {})):
                meta = consumer.committed(TopicPartition(self.topic, p))
                result.committed[p] = meta if meta is None or isinstance(meta, int) else meta.offset
            # A connection may be caught inside a re-authentication exchange
            # (a CI run caught the fetch connection so): let the exchange end,
            # driving the fetch client as poll() does (the group member's
            # thread drives its own), so the snapshot shows how it ended; one
            # still REAUTHENTICATING after 5 s fails the test.
            settle_until = time.monotonic() + 5.0
            while (any(c[4] == "REAUTHENTICATING" for c in _connections(consumer))
                   and time.monotonic() < settle_until):
                for tp, records in consumer.poll(timeout_ms=50).items():
                    result.delivered.setdefault(tp.partition, []).extend((r.offset, r.value) for r in records)
            result.metrics = dict(consumer.metrics()["consumer-metrics"])
            result.connections = _connections(consumer)
            result.token_fetches = getattr(self.configs.get("sasl_oauth_token_provider"), "fetches", None)
        finally:
            consumer.close()

    def _commit(self, consumer):
        try:
            consumer.commit()
            self.result.commits_ok += 1
        except Exception as exc:
            self.result.commit_errors.append(repr(exc))


def _connections(consumer):
    """(client, node id, reauthentications, lost, state, the last loss's
    error or None) of every connection the consumer's two clients hold (the
    fetch client's, the group member's): a failed run says what was lost to
    what."""
    out = []
    clients = [("fetch", consumer._client)]
    transport = getattr(consumer._coordinator, "transport", None)
    if transport is not None:
        clients.append(("group", transport.client))
    for label, client in clients:
        for conn in client._all_conns():
            out.append((label, conn.node_id, conn.reauthentications, conn.lost, conn.state.name,
                        repr(conn.last_loss) if conn.lost else None))
    return out


def run(info, topic, partitions, cases, *, seconds, rate=200, drain_seconds=30.0, group_prefix="reauth"):
    """Produce for `seconds` while one GroupReader per case consumes; then
    let every reader reach the producer's end offsets. Returns
    (producer, {case id: ReaderResult})."""
    producer = SteadyProducer(info.bootstrap_servers, topic, partitions, rate=rate)
    readers = {case.id: GroupReader(case.configs(info), topic, "{0}-{1}-{2}".format(group_prefix, case.id, topic))
               for case in cases}
    for reader in readers.values():
        reader.start()
    producer.start()
    time.sleep(seconds)
    producer.stop()
    ends = producer.end_offsets()
    give_up = time.monotonic() + drain_seconds
    for reader in readers.values():
        reader.give_up = give_up
        reader.ends = ends
    for reader in readers.values():
        reader.join(drain_seconds + 30)
    return producer, {case_id: reader.result for case_id, reader in readers.items()}
