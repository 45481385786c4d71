"""Errors, named as kafka-python names them so `except` clauses carry over.

The broker error-code table (BrokerResponseError subclasses by errno) is
filled in by the protocol layer; the record-decoding errors live here because
the compiled core raises them.
"""

# the public names of both modules, so that fastkc.errors is kafka-python's
# kafka.errors: every error class by its name, kafka_errors, for_code
from fastkc.errors.base import *  # noqa: F403
from fastkc.errors.broker import *  # noqa: F403
