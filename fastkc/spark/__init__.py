"""fastkc as a Spark data source: `spark.read.format("fastkc")` and
`spark.readStream.format("fastkc")`, with the schema and options of Spark's
own Kafka source. Needs pyspark >= 4.2 (the `spark` extra).

Registered automatically through the top-level `pyspark_fastkc` module, or
explicitly with `fastkc.spark.register(spark)`.
"""
from fastkc.spark.options import SparkKafkaOptionError
from fastkc.spark.ranges import KafkaDataLossError
from fastkc.spark.source import FastkcDataSource, register

__all__ = ["FastkcDataSource", "KafkaDataLossError", "SparkKafkaOptionError", "register"]
