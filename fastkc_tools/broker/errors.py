"""Typed errors of the broker harness: each says what went wrong and what to do."""
from fastkc.errors import KafkaError


class BrokerHarnessError(KafkaError):
    """Base class: the local Kafka could not be resolved, started or stopped."""


class JavaNotFoundError(BrokerHarnessError):
    """No usable `java` (Kafka 4.x needs Java 17 or newer)."""


class MavenNotFoundError(BrokerHarnessError):
    """No `mvn` on PATH: the harness resolves Kafka from Maven Central with it."""


class KafkaResolutionError(BrokerHarnessError):
    """`mvn` failed to gather Kafka's jars (offline, unknown version, ...)."""


class BrokerStartupError(BrokerHarnessError):
    """A node exited or never answered during start-up. `log_tail` holds the
    last lines of its log so the cause is visible without opening files."""

    def __init__(self, message: str, log_tail: str = "") -> None:
        self.log_tail = log_tail
        if log_tail:
            message = "{0}\n--- last lines of the broker log ---\n{1}".format(message, log_tail)
        super().__init__(message)


class BrokerAlreadyRunningError(BrokerHarnessError):
    """`start` was asked for a data folder whose broker is still running."""


class PortInUseError(BrokerHarnessError):
    """A port chosen explicitly by the caller is already taken."""
