"""A hand-written stand-in for fastkc's SchemaRegistryClient, for the unit
tests of the deserializers' error paths and of the Arrow path's cuts (the
integration tests run a real registry: tests/conftest.py `schema_registry`)."""
import pytest

client_module = pytest.importorskip("fastkc.schema_registry.client")
from fastkc.schema_registry import SchemaNotFoundError  # noqa: E402


class FakeRegistry:
    """Answers `resolve` / `prefetch` from a dict; an id absent from it is
    unknown (40403), an id mapped to an exception raises it."""

    def __init__(self, schemas):
        self.schemas = schemas
        self.prefetched = []

    def resolve(self, key):
        found = self.schemas.get(key)
        if found is None:
            raise SchemaNotFoundError("schema id {0}: not found".format(key), "http://fake/schemas/ids/{0}".format(key),
                                      404, 40403)
        if isinstance(found, Exception):
            raise found
        return client_module.ResolvedSchema(found, {})

    def prefetch(self, ids):
        ids = list(ids)
        self.prefetched.append(ids)
        return {key: self.resolve(key) for key in ids}
