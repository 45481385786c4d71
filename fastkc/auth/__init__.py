"""SASL mechanisms: one module per mechanism family, one small interface.

The connection core (fastkc/net/core.py) drives the SaslHandshake / SaslAuthenticate
requests; a mechanism only turns server bytes into client bytes, so each one
is I/O-free towards the broker and testable on its own. A mechanism module
has:

- ``MECHANISMS``: the names it serves (kafka-python's and Java's spelling);
- ``check_config(config)``: raise KafkaConfigurationError naming the key when
  the configuration cannot work, at construction, never at first connect;
- ``new_exchange(config, host)``: a fresh exchange for one authentication of
  one connection to ``host`` (GSSAPI and AWS_MSK_IAM sign for the host).

An exchange has ``first_message() -> bytes`` and
``receive(server_bytes) -> bytes | None`` (None: authentication complete and,
where the mechanism can, the server proved itself). A step that must wait on
a third party it cannot interrupt (GSSAPI's first step asks the KDC for
tickets inside libkrb5) returns a ``PendingStep`` instead of bytes: the work
runs on a daemon thread and the connection, still driven by the client's
poll loop, sends its result once it is done or fails the connection with the
step's own timeout error after request_timeout_ms -- so one slow KDC never
stalls poll() for the consumer's other connections, nor past its timeout. Errors are typed
KafkaErrors (SaslAuthenticationFailedError for a refused or malformed
exchange) whose messages name the mechanism and never carry a secret.
"""
import importlib
import threading
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any, Protocol

from fastkc.errors import KafkaConfigurationError

#: the consumer's configuration as the mechanisms read it (kafka-python's keys)
Config = Mapping[str, Any]

#: mechanism name -> module in this package that implements it
_MODULES = {
    "PLAIN": "scram",
    "SCRAM-SHA-256": "scram",
    "SCRAM-SHA-512": "scram",
    "AWS_MSK_IAM": "msk_iam",
    "OAUTHBEARER": "oauthbearer",
    "GSSAPI": "gssapi",
}

MECHANISMS = tuple(_MODULES)

# kafka-python users look for the provider base class next to the mechanism.
from fastkc.auth.oauthbearer import AbstractTokenProvider as AbstractTokenProvider  # noqa: E402


class Exchange(Protocol):
    """One authentication of one connection (see the module docstring)."""

    def first_message(self) -> "bytes | PendingStep": ...

    def receive(self, data: bytes) -> "bytes | PendingStep | None": ...


def module_for(mechanism: str) -> ModuleType:
    name = _MODULES.get(mechanism)
    if name is None:
        raise KafkaConfigurationError("sasl_mechanism must be one of {0} (fastkc does not implement {1!r})".format(
            MECHANISMS, mechanism))
    return importlib.import_module("fastkc.auth." + name)


def check_config(config: Config) -> None:
    module_for(config["sasl_mechanism"]).check_config(config)


def new_exchange(config: Config, host: str) -> Exchange:
    exchange: Exchange = module_for(config["sasl_mechanism"]).new_exchange(config, host)
    return exchange


class PendingStep:
    """A SASL step's message being computed on a daemon thread (see the
    module docstring). `work()` returns the bytes to send or raises a typed
    KafkaError; `timeout_error()` makes the error for a step still running
    at its deadline (the thread cannot be stopped and ends on its own)."""

    def __init__(self, work: Callable[[], bytes], timeout_error: Callable[[], BaseException], name: str) -> None:
        self._work = work
        self.timeout_error = timeout_error
        self._outcome: tuple[bool, Any] | None = None
        self._finished = threading.Event()
        thread = threading.Thread(target=self._run, name=name, daemon=True)
        thread.start()

    def _run(self) -> None:
        try:
            self._outcome = (True, self._work())
        except BaseException as exc:  # noqa: BLE001 - handed to the connection's thread by result()
            self._outcome = (False, exc)
        finally:
            self._finished.set()

    def done(self) -> bool:
        return self._finished.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until done (tests and callers without a poll loop); True when done."""
        return self._finished.wait(timeout)

    def result(self) -> bytes:
        """The message (once done()), or the step's error raised."""
        if self._outcome is None:
            raise RuntimeError("PendingStep.result() before the step is done")
        ok, value = self._outcome
        if not ok:
            raise value
        message: bytes = value
        return message
