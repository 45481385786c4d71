"""A throw-away Spark standalone cluster on 127.0.0.1: a master and N
workers started with the pyspark install's sbin/spark-daemon.sh (the script
start-master.sh / start-worker.sh wrap), logs and pids in a folder of the
caller's. Used by tests/spark/test_standalone.py and
benchmarks/spark/bench_spark.py."""
import contextlib
import os
import socket
import subprocess

MASTER = "org.apache.spark.deploy.master.Master"
WORKER = "org.apache.spark.deploy.worker.Worker"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def standalone_cluster(folder, workers=2, *, cores=1, memory="1g", daemon_java_opts="-XX:+UseSerialGC"):
    """Yield the master URL (spark://127.0.0.1:PORT) of a master with
    `workers` workers of `cores` cores each; everything is stopped on exit.
    Nothing is started when pyspark is missing (ImportError)."""
    import pyspark

    home = os.path.dirname(pyspark.__file__)
    daemon = os.path.join(home, "sbin", "spark-daemon.sh")
    folder = str(folder)
    env = dict(os.environ, SPARK_HOME=home, SPARK_LOG_DIR=os.path.join(folder, "logs"),
               SPARK_PID_DIR=os.path.join(folder, "pids"), SPARK_IDENT_STRING="fastkc",
               SPARK_WORKER_DIR=os.path.join(folder, "work"), SPARK_DAEMON_MEMORY="512m",
               SPARK_DAEMON_JAVA_OPTS=daemon_java_opts, SPARK_LOCAL_IP="127.0.0.1")
    port = free_port()
    master = "spark://127.0.0.1:{0}".format(port)
    started = []

    def run(*args):
        subprocess.run(["bash", daemon, *args], env=env, check=True, capture_output=True, timeout=60)

    try:
        run("start", MASTER, "1", "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(free_port()))
        started.append((MASTER, "1"))
        for n in range(1, workers + 1):
            run("start", WORKER, str(n), "--host", "127.0.0.1", "--cores", str(cores), "--memory", memory,
                "--webui-port", str(free_port()), master)
            started.append((WORKER, str(n)))
        yield master
    finally:
        for cls, instance in reversed(started):
            subprocess.run(["bash", daemon, "stop", cls, instance], env=env, capture_output=True, timeout=60)


def wait_for_executors(spark, count, timeout=60.0):
    """Block until `count` executors registered with the driver (so tasks
    spread over all of them from the first stage); False on timeout."""
    import time

    status = spark.sparkContext._jsc.sc()
    deadline = time.monotonic() + timeout
    while status.getExecutorMemoryStatus().size() < count + 1:  # the driver counts too
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True
