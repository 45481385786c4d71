"""The `fastkc` Spark data source (pyspark >= 4.2): Spark's Kafka source
schema and options, fastkc's compiled core decoding each range to Arrow.

Driver: the DataSource and its readers plan offset ranges (fastkc.spark.ranges)
with a metadata-only KafkaConsumer. Executors: read_range() fetches one range
with a manually assigned, group-less KafkaConsumer and yields
pyarrow.RecordBatch objects in the declared schema. Nothing is committed to
Kafka; a streaming query's progress lives in Spark's checkpoint as
{"topic": {"partition": next_offset}}.
"""
import logging
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from fastkc.spark import formats as _formats
from fastkc.spark import options as _options
from fastkc.spark import ranges as _ranges
from fastkc.spark.formats import RecordFormats
from fastkc.spark.options import SourceOptions
from fastkc.spark.ranges import Offsets, Pair

if TYPE_CHECKING:
    from fastkc.consumer import KafkaConsumer
    from fastkc.structs import TopicPartition

log = logging.getLogger(__name__)

SOURCE_NAME = "fastkc"


def spark_schema(include_headers: bool, formats: RecordFormats | None = None) -> StructType:
    """Spark's Kafka source schema (all fields nullable), + headers; a key or
    value read as Avro (keyFormat / valueFormat) is its typed column."""
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )

    def typed(name: str) -> Any:
        arrow_type = formats.arrow_type(name) if formats is not None else None
        return BinaryType() if arrow_type is None else from_arrow_type(arrow_type)

    fields = [
        StructField("key", typed("key")),
        StructField("value", typed("value")),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", ArrayType(StructType([
            StructField("key", StringType()), StructField("value", BinaryType())]))))
    return StructType(fields)


class KafkaRangePartition(InputPartition):
    """One Spark task: records [start, end) of one topic-partition.

    Only the range travels in it: Spark pickles every InputPartition on its
    own (10,000 partitions are 10,000 pickles), so the consumer settings,
    the same for every task, travel once with the reader (ReadSettings)."""

    value: tuple[str, int, int, int]

    def __init__(self, topic: str, partition: int, start: int, end: int) -> None:
        super().__init__((topic, partition, start, end))

    # the value tuple is the whole state: pickled as a constructor call, not
    # as an instance dict (about a third of the bytes)
    def __reduce__(self) -> tuple[type["KafkaRangePartition"], tuple[str, int, int, int]]:
        return KafkaRangePartition, self.value

    @property
    def topic(self) -> str:
        return self.value[0]

    @property
    def partition(self) -> int:
        return self.value[1]

    @property
    def start(self) -> int:
        return self.value[2]

    @property
    def end(self) -> int:
        return self.value[3]


class ReadSettings:
    """What every task of one query reads with (picklable primitives and the
    consumer configuration); the reader holds it and Spark ships the reader
    once with the read function."""

    __slots__ = ("consumer_config", "include_headers", "fail_on_data_loss", "poll_timeout_ms", "formats")

    def __init__(self, consumer_config: dict[str, Any], include_headers: bool, fail_on_data_loss: bool,
                 poll_timeout_ms: int, formats: RecordFormats | None = None) -> None:
        self.consumer_config = consumer_config
        self.include_headers = include_headers
        self.fail_on_data_loss = fail_on_data_loss
        self.poll_timeout_ms = poll_timeout_ms
        self.formats = formats

    @classmethod
    def of(cls, opts: SourceOptions) -> "ReadSettings":
        return cls(opts.consumer_config, opts.include_headers, opts.fail_on_data_loss, opts.poll_timeout_ms,
                   opts.formats)

    def __getstate__(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        for name, value in zip(self.__slots__, state):
            setattr(self, name, value)


def _metadata_consumer(opts: SourceOptions) -> "KafkaConsumer":
    from fastkc import KafkaConsumer

    return KafkaConsumer(**dict(opts.consumer_config, enable_auto_commit=False))


def _make_partitions(range_list: Sequence[_ranges.OffsetRange]) -> list[InputPartition]:
    return [KafkaRangePartition(r.topic, r.partition, r.start, r.end) for r in range_list]


# --- executors -----------------------------------------------------------------------

def read_range(part: KafkaRangePartition, settings: ReadSettings) -> Iterator[Any]:
    """Yield pyarrow.RecordBatch objects holding exactly the records of
    [part.start, part.end) that the consumer's isolation level shows.

    A range's size may overstate its records (compaction, transaction
    markers, aborted records under read_committed): the loop ends when the
    fetch position reaches the range end, not when a count is reached."""
    import pyarrow as pa
    import pyarrow.compute as pc

    # (errors.py makes its code table's classes at import, which mypy cannot
    # see; the ignore goes, as warn_unused_ignores says, once it declares them)
    from fastkc import KafkaConsumer
    from fastkc.errors import OffsetOutOfRangeError
    from fastkc.records import arrow_schema
    from fastkc.structs import TopicPartition

    columns = 8 if settings.include_headers else 7
    fields = list(arrow_schema())[:columns]
    tp = TopicPartition(part.topic, part.partition)
    config = dict(settings.consumer_config, enable_auto_commit=False, auto_offset_reset="none")
    config.pop("group_id", None)
    registry = None
    typed: list[tuple[int, Any]] = []  # (column index, Spark-ready Arrow type) of the Avro columns
    if settings.formats is not None:
        registry, config["key_deserializer"], config["value_deserializer"] = settings.formats.deserializers()
        for index, name in enumerate(("key", "value")):
            arrow_type = settings.formats.arrow_type(name)
            if arrow_type is not None:
                fields[index] = pa.field(name, arrow_type)
                typed.append((index, arrow_type))
    schema = pa.schema(fields)
    consumer = KafkaConsumer(**config)
    try:
        consumer.assign([tp])
        consumer.seek(tp, part.start)
        last_progress, last_position = time.monotonic(), part.start
        while True:
            try:
                position = consumer.position(tp)
                if position >= part.end:
                    return
                batch = consumer.poll_arrow(timeout_ms=200)
            except OffsetOutOfRangeError:
                resume_at = _out_of_range(consumer, tp, part, settings.fail_on_data_loss)
                if resume_at is None:
                    return
                consumer.seek(tp, resume_at)
                continue
            if batch.num_rows:
                last_progress = time.monotonic()
                offsets = batch.column(4)
                # offsets rise within a partition: the kept rows are a prefix
                keep = batch.num_rows if offsets[-1].as_py() < part.end else pc.sum(
                    pc.less(offsets, part.end)).as_py() or 0
                if keep:
                    arrays = batch.columns[:columns]
                    for index, arrow_type in typed:
                        arrays[index] = _formats.to_spark_column(arrays[index], arrow_type)
                    yield pa.RecordBatch.from_arrays(arrays, schema=schema).slice(0, keep)
                continue
            position = consumer.position(tp)
            if position >= part.end:
                return
            if position != last_position:
                # control batches or aborted records moved the position: progress without rows
                last_progress, last_position = time.monotonic(), position
            highwater = consumer.highwater(tp)
            if highwater is not None and position >= highwater:
                # the partition ends before the range does: records were lost (truncation)
                _ranges.report_data_loss(
                    settings.fail_on_data_loss,
                    "{0}-{1} ends at offset {2}, before the end of the range {3}".format(
                        part.topic, part.partition, highwater, part.end))
                return
            if (time.monotonic() - last_progress) * 1000 > settings.poll_timeout_ms:
                raise TimeoutError("Cannot fetch record for offset {0} in {1} milliseconds".format(
                    position, settings.poll_timeout_ms))
    finally:
        consumer.close()
        if registry is not None:
            registry.close()


def _out_of_range(consumer: "KafkaConsumer", tp: "TopicPartition", part: KafkaRangePartition,
                  fail_on_data_loss: bool) -> int | None:
    """The fetch position is outside the log: where to go on (None: stop).
    Below the log start the records were aged out or deleted; at or past the
    log end the partition was truncated or recreated. Both are data loss."""
    position: int = consumer.position(tp)
    earliest: int = consumer.beginning_offsets([tp])[tp]
    if position < earliest:
        _ranges.report_data_loss(
            fail_on_data_loss,
            "Cannot fetch offset {0} of {1}-{2}: the earliest available offset is {3}".format(
                position, part.topic, part.partition, earliest))
        return earliest if earliest < part.end else None
    latest = consumer.end_offsets([tp])[tp]
    _ranges.report_data_loss(
        fail_on_data_loss,
        "Cannot fetch offset {0} of {1}-{2}: the partition ends at offset {3}".format(
            position, part.topic, part.partition, latest))
    return None


# --- the data source -------------------------------------------------------------------

class FastkcDataSource(DataSource):
    """spark.read / spark.readStream .format("fastkc"): Spark's Kafka source,
    decoded by fastkc."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def _include_headers(self) -> bool:
        return _options.scala_bool(
            {k.lower(): v for k, v in self.options.items()}.get("includeheaders", "false"), "includeHeaders")

    def schema(self) -> StructType:
        # Spark validates the options common to batch and streaming when the
        # DataFrame is created (load()); schema() is what runs then
        _options.validate_general(self.options)
        return spark_schema(self._include_headers(), _options.formats_of(self.options))

    def _checked(self, schema: StructType | None, opts: SourceOptions) -> SourceOptions:
        if schema is not None and schema.simpleString() != spark_schema(
                opts.include_headers, opts.formats).simpleString():
            if opts.formats is not None:
                # the reader schemas are read again for the readers: a subject's
                # latest version registered since load() changes the columns
                raise _options.SparkKafkaOptionError(
                    "the Avro columns changed since the query was planned (a new latest schema of the subject?): "
                    "load() again, or fix the reader schema with keySchema / valueSchema")
            raise _options.SparkKafkaOptionError(
                "requirement failed: Kafka source has a fixed schema and cannot be set with a custom one")
        return opts

    def reader(self, schema: StructType) -> "FastkcBatchReader":
        return FastkcBatchReader(self._checked(schema, _options.parse(self.options, streaming=False)))

    def streamReader(self, schema: StructType) -> "FastkcStreamReader":
        return FastkcStreamReader(self._checked(schema, _options.parse(self.options, streaming=True)))


class FastkcBatchReader(DataSourceReader):
    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        self.settings = ReadSettings.of(opts)

    def partitions(self) -> list[InputPartition]:
        """Driver side, once per query: one Metadata request for the topic
        set, the ListOffsets of both ends sent together to every leader, one
        small InputPartition per range."""
        opts = self.opts
        consumer = _metadata_consumer(opts)
        try:
            pairs = _ranges.topic_partitions(consumer, opts)
            starts, ends = _ranges.resolve_both(consumer, opts.starting, opts.ending, pairs,
                                                no_match_strategy=opts.no_match_strategy)
        finally:
            consumer.close()
        planned = [_ranges.OffsetRange(t, p, starts[(t, p)], ends[(t, p)]) for t, p in pairs]
        split = _ranges.split_ranges(planned, opts.min_partitions, opts.max_records_per_partition)
        return _make_partitions(split)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, KafkaRangePartition)  # the only kind partitions() makes
        return read_range(partition, self.settings)


class FastkcStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batch reader. Driver methods run in one long-lived Python
    process; each asks the broker afresh (new partitions and topics show up
    in the next trigger), with a short-lived consumer so that metadata is
    never stale."""

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        self.settings = ReadSettings.of(opts)
        self._available_now_end: Offsets | None = None  # offsets frozen by prepareForTriggerAvailableNow
        self._latest: Offsets | None = None  # for reportLatestOffset
        self._delay: _ranges.TriggerDelay | None = None
        if opts.min_offsets_per_trigger is not None:
            self._delay = _ranges.TriggerDelay(opts.min_offsets_per_trigger, opts.max_trigger_delay_ms,
                                               time.monotonic)

    def _current(self) -> tuple[list[Pair], Offsets, Offsets]:
        """(pairs, {tp: earliest}, {tp: latest}) right now."""
        consumer = _metadata_consumer(self.opts)
        try:
            pairs = _ranges.topic_partitions(consumer, self.opts)
            earliest, latest = _ranges.both_ends(consumer, pairs)
            return pairs, earliest, latest
        finally:
            consumer.close()

    def initialOffset(self) -> dict[str, dict[str, int]]:
        consumer = _metadata_consumer(self.opts)
        try:
            pairs = _ranges.topic_partitions(consumer, self.opts)
            start = _ranges.resolve(consumer, self.opts.starting, pairs, starting=True,
                                    no_match_strategy=self.opts.no_match_strategy)
        finally:
            consumer.close()
        return _ranges.to_json_offsets(start)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        pairs, _, latest = self._current()
        self._available_now_end = latest

    def latestOffset(self, start: dict[str, Any] | None = None,
                     limit: ReadLimit | None = None) -> dict[str, dict[str, int]]:
        # (Spark calls it with and without arguments, so both are optional here)
        begun = _ranges.from_json_offsets(start)
        pairs, earliest, latest = self._current()
        if self._available_now_end is not None:
            # availableNow: never past what existed when the query began;
            # partitions created since wait for the next run
            frozen = self._available_now_end
            latest = {tp: min(off, frozen[tp]) for tp, off in latest.items() if tp in frozen}
        self._check_lost(begun, latest)
        # partitions new since `start` are read from their earliest offset
        begin = {tp: begun.get(tp, earliest.get(tp, 0)) for tp in latest}
        self._latest = latest
        if self._delay is not None and self._available_now_end is None:
            # (availableNow reads what there is: waiting for more could never end)
            if self._delay.hold(sum(max(0, off - begin[tp]) for tp, off in latest.items())):
                return _ranges.to_json_offsets(begun)
        if isinstance(limit, ReadMaxRows):
            end = _ranges.rate_limit(limit.max_rows, begin, latest)
        else:
            end = dict(latest)
        for tp, off in begun.items():
            if tp not in end:
                end[tp] = off  # a vanished partition (failOnDataLoss=false) keeps its place
        for tp in end:
            if tp in begun and end[tp] < begun[tp]:
                end[tp] = begun[tp]
        return _ranges.to_json_offsets(end)

    def _check_lost(self, start: Offsets, latest: Offsets) -> None:
        for tp, off in start.items():
            if tp not in latest:
                _ranges.report_data_loss(
                    self.opts.fail_on_data_loss,
                    "{0}-{1} is gone (deleted topic or partition)".format(*tp))
            elif latest[tp] < off:
                _ranges.report_data_loss(
                    self.opts.fail_on_data_loss,
                    "{0}-{1}'s offset was changed from {2} to {3}".format(tp[0], tp[1], off, latest[tp]))

    def reportLatestOffset(self) -> dict[str, dict[str, int]] | None:
        return None if self._latest is None else _ranges.to_json_offsets(self._latest)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        begun = _ranges.from_json_offsets(start)
        until = _ranges.from_json_offsets(end)
        new = [tp for tp in until if tp not in begun]
        if new:
            consumer = _metadata_consumer(self.opts)
            try:
                begun.update(_ranges.earliest(consumer, new))
            finally:
                consumer.close()
        planned = [_ranges.OffsetRange(t, p, begun[(t, p)], e) for (t, p), e in sorted(until.items())]
        split = _ranges.split_ranges(planned, self.opts.min_partitions)
        return _make_partitions(split)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, KafkaRangePartition)  # the only kind partitions() makes
        return read_range(partition, self.settings)

    def commit(self, end: dict[str, Any]) -> None:
        # Spark's Kafka source commits nothing to Kafka: progress is the checkpoint
        pass

    def stop(self) -> None:
        pass


def register(spark: Any) -> None:
    """Register the `fastkc` source on a session (pyspark_fastkc does it
    automatically when fastkc is installed)."""
    spark.dataSource.register(FastkcDataSource)
