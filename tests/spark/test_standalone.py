"""The distributed path: a Spark standalone cluster (master + two workers on
127.0.0.1, started with the pyspark install's sbin/spark-daemon.sh, the
script start-master.sh / start-worker.sh wrap) reads a topic through the
`fastkc` source; both executors read ranges and the rows are exact. The job
never calls fastkc.spark.register: the source resolves through the
pyspark_fastkc module (auto-registration)."""
import json
import os
import socket
import subprocess
import sys
import time

import pytest

from tests.support.kafka_tools import Message, produce

HERE = os.path.dirname(os.path.abspath(__file__))


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def standalone_cluster(tmp_path):
    pyspark = pytest.importorskip("pyspark", minversion="4.2")

    home = os.path.dirname(pyspark.__file__)
    daemon = os.path.join(home, "sbin", "spark-daemon.sh")
    env = dict(os.environ, SPARK_HOME=home, SPARK_LOG_DIR=str(tmp_path / "logs"),
               SPARK_PID_DIR=str(tmp_path / "pids"), SPARK_IDENT_STRING="fastkc-test",
               SPARK_WORKER_DIR=str(tmp_path / "work"), SPARK_DAEMON_MEMORY="512m",
               SPARK_DAEMON_JAVA_OPTS="-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
    port = _free_port()
    master = "spark://127.0.0.1:{0}".format(port)
    started = []

    def run(*args):
        subprocess.run(["bash", daemon, *args], env=env, check=True, capture_output=True, timeout=60)

    try:
        run("start", "org.apache.spark.deploy.master.Master", "1", "--host", "127.0.0.1", "--port", str(port),
            "--webui-port", str(_free_port()))
        started.append(("org.apache.spark.deploy.master.Master", "1"))
        for n in (1, 2):
            run("start", "org.apache.spark.deploy.worker.Worker", str(n), "--host", "127.0.0.1", "--cores", "1",
                "--memory", "1g", "--webui-port", str(_free_port()), master)
            started.append(("org.apache.spark.deploy.worker.Worker", str(n)))
        yield master
    finally:
        for cls, instance in reversed(started):
            subprocess.run(["bash", daemon, "stop", cls, instance], env=env, capture_output=True, timeout=60)


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
