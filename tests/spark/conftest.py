"""Fixtures of the Spark source suite (issue 6).

- spark: one local[2] SparkSession for the whole session, with the fast
  settings of shared/reference/spark.md and the `fastkc` source registered.
  Python workers run this interpreter (PYSPARK_PYTHON) with the repository
  on PYTHONPATH, so they import the in-place build of fastkc.

Tests needing Spark are skipped when pyspark >= 4.2 is not installed (the
`spark` extra); the option and planning tests run without it.
"""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FAST_SETTINGS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
    "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
}


def worker_environment():
    """Environment every Spark-launched Python must see: this interpreter,
    and the repository (in-place build) first on the path."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    paths = [ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != ROOT]
    os.environ["PYTHONPATH"] = os.pathsep.join(paths)


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark", minversion="4.2")
    worker_environment()
    from pyspark.sql import SparkSession

    import fastkc.spark

    builder = SparkSession.builder.master("local[2]").appName("fastkc-spark-tests")
    for key, value in FAST_SETTINGS.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    fastkc.spark.register(session)
    try:
        yield session
    finally:
        session.stop()
