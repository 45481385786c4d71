"""Every Python example of the docs site runs against the real broker and
handles records (tests/support/doc_examples.py says how an example is
found and localised). Examples marked `not run` are reported as skips with
their reason; Spark's run in tests/spark/test_doc_examples.py."""
import uuid

import pytest

from tests.support import doc_examples
from tests.support.batchgen import record_batch, records_from_values
from tests.support.kafka_tools import Message, create_topic, produce
from tests.support.share import set_share_auto_offset_reset

RECORDS_PER_PARTITION = 100
PARTITIONS = 3

EXAMPLES = [e for e in doc_examples.examples() if e.marker != "spark"]


@pytest.fixture(scope="module")
def docs_data(kafka_broker):
    """The topics the examples name, filled by confluent-kafka's producer."""
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    for topic in ("events", "jobs"):
        name = doc_examples.topic_name(topic, suffix)
        create_topic(bootstrap, name, partitions=PARTITIONS)
        produce(bootstrap, name, [Message(value="value-{0}".format(i).encode(), key="key-{0}".format(i).encode(),
                                          partition=i % PARTITIONS)
                                  for i in range(RECORDS_PER_PARTITION * PARTITIONS)])
    return bootstrap, suffix


def test_examples_are_found():
    # the guide pages hold examples; an empty list would make every test below vacuous
    pages = {e.page for e in EXAMPLES if not e.marker}
    assert {"guide/consumer.md", "guide/asyncio.md", "guide/share.md", "guide/arrow-stream.md",
            "migration.md"} <= pages, pages


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_runs(example, docs_data, tmp_path):
    if example.marker.startswith("not run"):
        pytest.skip("{0} ({1})".format(example.name, example.marker))
    assert not example.marker, "unknown marker {0!r} on {1}".format(example.marker, example.name)
    bootstrap, suffix = docs_data
    # share groups start at the latest offset unless the group says otherwise
    for group in doc_examples.group_ids(example.code):
        if "KafkaShareConsumer" in example.code:
            set_share_auto_offset_reset(bootstrap, doc_examples.group_name(
                group, doc_examples.example_suffix(example, suffix)))
    blob = bytes(record_batch(records_from_values([b"a", b"b", b"c"])))
    handled = doc_examples.run(example, bootstrap=bootstrap, suffix=suffix, workdir=str(tmp_path),
                               extra={"blob": blob})
    if "handle(" in example.code:
        assert handled.calls, "{0} handled no record".format(example.name)
