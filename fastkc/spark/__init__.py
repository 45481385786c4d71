"""fastkc as a Spark data source: `spark.read.format("fastkc")` and
`spark.readStream.format("fastkc")`, with the schema and options of Spark's
own Kafka source. Needs pyspark >= 4.2 (the `spark` extra).

Registered automatically through the top-level `pyspark_fastkc` module, or
explicitly with `fastkc.spark.register(spark)`.
"""
from typing import Any

from fastkc.spark.options import SparkKafkaOptionError
from fastkc.spark.ranges import KafkaDataLossError

__all__ = ["FastkcDataSource", "KafkaDataLossError", "SparkKafkaOptionError", "register"]


def __getattr__(name: str) -> Any:
    # the source classes need pyspark; options and range planning do not
    if name in ("FastkcDataSource", "register"):
        from fastkc.spark import source

        return getattr(source, name)
    raise AttributeError("module 'fastkc.spark' has no attribute {0!r}".format(name))
