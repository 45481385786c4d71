"""The error every format's batch decoder raises for a payload it cannot read.

One class, so the deserializers' shared batch plans
(fastkc/schema_registry/registry_deserializer.py) catch one thing whatever
the format; each format derives its own (AvroDecodeError, ...) from it.
"""
from __future__ import annotations

from fastkc.errors import KafkaError


class PayloadReadError(KafkaError):
    """A payload that does not decode under its schema.

    Attributes:
        index: which payload of the decoded list (0 for a single one)
        offset: the byte inside that payload where reading failed (-1 when
            the format's parser does not say)
        what: what was being read ("string length", "union branch", ...)
        problem: why ("truncated", "index out of range", ...)

    The record's topic, partition, offset and schema id are added by the
    caller that knows them (`context`).
    """

    def __init__(self, index: int, offset: int, what: str, problem: str, context: str = "") -> None:
        self.index = index
        self.offset = offset
        self.what = what
        self.problem = problem
        self.context = context
        where = f" ({context})" if context else ""
        at = f", byte {offset}" if offset >= 0 else ""
        super().__init__(f"payload {index}{at}: {what}: {problem}{where}")

    def key(self) -> tuple[int, int, str, str]:
        """(index, offset, what, problem): what two decoders must agree on."""
        return (self.index, self.offset, self.what, self.problem)
