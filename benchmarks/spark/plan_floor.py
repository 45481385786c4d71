"""Spark's own share of planning a Python data source: a source whose
partitions() returns N ready-made InputPartitions of the same shape as
fastkc's (a (topic, partition, start, end) tuple), at no cost. Imported by
Spark's Python planner workers (bench_planning.py puts this folder on their
PYTHONPATH), so its classes pickle by reference as fastkc's do."""
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition


class FloorPartition(InputPartition):
    def __init__(self, topic, partition, start, end):
        super().__init__((topic, partition, start, end))

    def __reduce__(self):
        return FloorPartition, self.value


class FloorReader(DataSourceReader):
    def __init__(self, count):
        self.count = count

    def partitions(self):
        return [FloorPartition("floor", i, 0, 3) for i in range(self.count)]

    def read(self, partition):
        yield (partition.value[1],)


class FloorSource(DataSource):
    @classmethod
    def name(cls):
        return "fastkc_plan_floor"

    def schema(self):
        return "partition int"

    def reader(self, schema):
        return FloorReader(int(self.options["partitions"]))
