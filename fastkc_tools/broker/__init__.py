"""A real Apache Kafka for tests and benchmarks, resolved from Maven Central.

    from fastkc_tools import broker
    info = broker.start()              # one KRaft node on 127.0.0.1, free ports
    info.bootstrap_servers             # '127.0.0.1:40123'
    broker.status().running            # True
    broker.stop()

The same functions back the `fastkc broker start|stop|status` command.
"""
from fastkc_tools.broker.errors import (
    BrokerAlreadyRunningError,
    BrokerHarnessError,
    BrokerStartupError,
    JavaNotFoundError,
    KafkaResolutionError,
    MavenNotFoundError,
    PortInUseError,
)
from fastkc_tools.broker.harness import (
    TOOL_JVM_FLAGS,
    BrokerInfo,
    BrokerStatus,
    NodeInfo,
    default_data_dir,
    describe,
    kill_node,
    start,
    start_node,
    status,
    stop,
    stop_node,
)
from fastkc_tools.broker.resolve import (
    DEFAULT_KAFKA_VERSION,
    KAFKA_LINES,
    KafkaInstall,
    find_java,
    resolve_kafka,
)

__all__ = [
    "start",
    "stop",
    "status",
    "stop_node",
    "start_node",
    "kill_node",
    "describe",
    "resolve_kafka",
    "find_java",
    "default_data_dir",
    "BrokerInfo",
    "BrokerStatus",
    "NodeInfo",
    "KafkaInstall",
    "DEFAULT_KAFKA_VERSION",
    "KAFKA_LINES",
    "TOOL_JVM_FLAGS",
    "BrokerHarnessError",
    "BrokerAlreadyRunningError",
    "BrokerStartupError",
    "JavaNotFoundError",
    "KafkaResolutionError",
    "MavenNotFoundError",
    "PortInUseError",
]
