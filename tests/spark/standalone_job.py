"""Run by test_standalone.py in its own process (one SparkContext per
process): read a topic through a Spark standalone master and report, as
JSON on the last line of stdout, the rows read and which executors read them.

    python tests/spark/standalone_job.py spark://127.0.0.1:PORT BOOTSTRAP TOPIC
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def executor_id():
    """The --executor-id of the executor JVM above this Python worker (the
    worker is a child, or grandchild through pyspark.daemon, of that JVM)."""
    pid = os.getpid()
    for _ in range(6):
        with open("/proc/{0}/stat".format(pid)) as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])  # field 4: ppid
        if pid <= 1:
            break
        with open("/proc/{0}/cmdline".format(pid), "rb") as f:
            args = f.read().split(b"\0")
        if b"--executor-id" in args:
            return args[args.index(b"--executor-id") + 1].decode()
    return "unknown"


def main(master, bootstrap, topic):
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(master).appName("fastkc-standalone-check")
             .config("spark.ui.enabled", "false")
             .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.executor.memory", "512m").config("spark.executor.cores", "1")
             .config("spark.cores.max", "2")
             # C1 and the serial GC for the driver and executor JVMs, as the
             # daemons have: short-lived JVMs on a shared 2-core machine
             .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
             .config("spark.executor.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
             .config("spark.pyspark.python", sys.executable)
             # the executors import fastkc from the repository (in-place build); on a real
             # cluster it is installed on every node or shipped with spark.archives
             .config("spark.executorEnv.PYTHONPATH", ROOT)
             .getOrCreate())
    try:
        # no fastkc.spark.register(spark): format("fastkc") must resolve through
        # the pyspark_fastkc module (auto-registration) found on PYTHONPATH
        # wait until both workers' executors registered, so the tasks can spread
        jsc = spark.sparkContext._jsc.sc()
        import time

        deadline = time.monotonic() + 60
        while jsc.getExecutorMemoryStatus().size() < 3 and time.monotonic() < deadline:  # driver + 2
            time.sleep(0.2)
        df = (spark.read.format("fastkc").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
              .option("minPartitions", "8").load())
        tasks = df.rdd.getNumPartitions()
        reader = executor_id

        def tag(rows):
            me = reader()
            for row in rows:
                yield (row.partition, row.offset, bytes(row.value).decode(), me)

        got = df.rdd.mapPartitions(tag).collect()
        print(json.dumps({"tasks": tasks, "executors": jsc.getExecutorMemoryStatus().size() - 1,
                          "rows": [list(r[:3]) for r in got], "read_by": sorted({r[3] for r in got})}))
    finally:
        spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:4])
