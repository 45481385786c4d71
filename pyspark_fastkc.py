"""Auto-registration of fastkc's Spark source.

PySpark imports every top-level `pyspark_*` module it finds and registers its
`DefaultSource`, so with fastkc installed `format("fastkc")` works without a
register call. Kept tiny: it runs in every data-source lookup.
"""
from fastkc.spark.source import FastkcDataSource as DefaultSource

__all__ = ["DefaultSource"]
