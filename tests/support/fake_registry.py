"""A hand-written stand-in for fastkc's SchemaRegistryClient, for the unit
tests of the deserializers' error paths and of the Arrow path's cuts (the
integration tests run a real registry: tests/conftest.py `schema_registry`),
and the small Event schemas (v1, v2, v1 under another id) those tests
register in it, with their values framed as confluent-kafka frames them."""
import json

from fastkc.schema_registry import SchemaNotFoundError, frame_schema_id
from fastkc.schema_registry.client import ResolvedSchema, Schema
from tests.support.avro import encode


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
        return ResolvedSchema(found, {})

    def prefetch(self, ids):
        ids = list(ids)
        self.prefetched.append(ids)
        return {key: self.resolve(key) for key in ids}


V1 = {"type": "record", "name": "Event", "fields": [
    {"name": "id", "type": "long"},
    {"name": "tag", "type": ["null", "string"], "default": None}]}
# v2 adds a field with a default: another Arrow type without a reader schema
V2 = {"type": "record", "name": "Event", "fields": V1["fields"] + [
    {"name": "score", "type": "double", "default": 0.5}]}
# v1 again under another id (a re-registration): the same Arrow type
V1_AGAIN = json.loads(json.dumps(V1))


def registered(schema):
    return Schema(json.dumps(schema), "AVRO")


def event_registry():
    return FakeRegistry({1: registered(V1), 2: registered(V2), 3: registered(V1_AGAIN),
                         4: Schema(json.dumps({"type": "record", "name": "U", "fields": [
                             {"name": "u", "type": ["int", "string"]}]}), "AVRO")})


def framed_value(schema_id, schema, datum):
    return frame_schema_id(schema_id) + encode(schema, datum)
