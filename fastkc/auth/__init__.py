"""SASL mechanisms: one module per mechanism family, one small interface.

The connection (fastkc/conn.py) drives the SaslHandshake / SaslAuthenticate
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
where the mechanism can, the server proved itself). Errors are typed
KafkaErrors (SaslAuthenticationFailedError for a refused or malformed
exchange) whose messages name the mechanism and never carry a secret.
"""
import importlib

from fastkc.errors import KafkaConfigurationError

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
from fastkc.auth.oauthbearer import AbstractTokenProvider  # noqa: E402


def module_for(mechanism):
    name = _MODULES.get(mechanism)
    if name is None:
        raise KafkaConfigurationError("sasl_mechanism must be one of {0} (fastkc does not implement {1!r})".format(
            MECHANISMS, mechanism))
    return importlib.import_module("fastkc.auth." + name)


def check_config(config):
    module_for(config["sasl_mechanism"]).check_config(config)


def new_exchange(config, host):
    return module_for(config["sasl_mechanism"]).new_exchange(config, host)
