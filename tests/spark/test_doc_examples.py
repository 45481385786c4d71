"""The docs site's Spark examples (marked `<!-- example: spark -->`), run in
the suite's SparkSession against the real broker: tests/docs runs the rest."""
import uuid

import pytest

from tests.support import doc_examples
from tests.support.kafka_tools import Message, create_topic, produce

SPARK_EXAMPLES = [e for e in doc_examples.examples() if e.marker == "spark"]


def test_the_spark_page_has_examples():
    assert SPARK_EXAMPLES, "no example on the Spark page is marked to run here"


@pytest.mark.parametrize("example", SPARK_EXAMPLES, ids=[e.name for e in SPARK_EXAMPLES])
def test_spark_example_runs(example, spark, kafka_broker, tmp_path):
    bootstrap = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    topic = doc_examples.topic_name("events", suffix)
    create_topic(bootstrap, topic, partitions=2)
    produce(bootstrap, topic, [Message(value=b"v%d" % i, key=b"k%d" % i, partition=i % 2) for i in range(200)])
    namespace = {"spark": spark}
    # Spark resolves relative paths against the JVM's working directory, not Python's
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "cp")
    doc_examples.run(example, bootstrap=bootstrap, suffix=suffix, workdir=str(tmp_path), extra=namespace,
                     replace=[('"path", "out"', '"path", {0!r}'.format(out)),
                              ('"checkpointLocation", "cp"', '"checkpointLocation", {0!r}'.format(checkpoint))])
    # the example's batch read and its availableNow stream both saw the topic
    assert namespace["df"].count() == 200
    namespace["query"].awaitTermination(120)
    assert spark.read.parquet(out).count() == 200
