"""The distributed path: a Spark standalone cluster (master + two workers on
127.0.0.1, started with the pyspark install's sbin/spark-daemon.sh, the
script start-master.sh / start-worker.sh wrap) reads a topic through the
`fastkc` source; both executors read ranges and the rows are exact. The job
never calls fastkc.spark.register: the source resolves through the
pyspark_fastkc module (auto-registration)."""
import json
import os
import subprocess
import sys
import time

import pytest

from tests.support import spark_standalone
from tests.support.kafka_tools import Message, produce

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture
def standalone_cluster(tmp_path):
    pytest.importorskip("pyspark", minversion="4.2")
    with spark_standalone.standalone_cluster(
            tmp_path, workers=2, daemon_java_opts="-XX:+UseSerialGC -XX:TieredStopAtLevel=1") as master:
        yield master


def test_standalone_cluster_reads_every_range_on_two_executors(standalone_cluster, kafka_broker, make_topic):
    bootstrap = kafka_broker.bootstrap_servers
    topic = make_topic(partitions=4)
    written = produce(bootstrap, topic, [Message(value=b"r%d" % i, partition=i % 4) for i in range(400)],
                      compression="lz4")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(HERE)),
                                                       os.environ.get("PYTHONPATH", "")]))
    started = time.monotonic()
    done = subprocess.run([sys.executable, os.path.join(HERE, "standalone_job.py"), standalone_cluster, bootstrap,
                           topic], env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["executors"] == 2
    assert result["tasks"] == 8  # minPartitions=8 over 4 equal ranges: two tasks each
    assert sorted(map(tuple, result["rows"])) == sorted((r.partition, r.offset, r.value.decode()) for r in written)
    assert len(result["read_by"]) == 2 and "unknown" not in result["read_by"], (result["read_by"],
                                                                                 time.monotonic() - started)
