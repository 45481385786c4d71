"""The consumer's metrics: kafka-python 3.0.12's names, groups and windowed
statistics (which are the Java client's), fed per fetch response, per decoded
step, per group request, never per record.

Why not kafka-python's own `kafka.metrics`: kafka-python must not become a
runtime dependency of fastkc, and its Sensor keeps one sample list per stat
and takes a lock per record. Here a sensor keeps ONE ring of samples
(start, count, sum, max, min) that all its stats read, so recording a value
for avg + max + rate + count-rate is one small update. The arithmetic is
kafka-python's (`kafka/metrics/stats/sampled_stat.py`, `rate.py`):

- a sample covers `metrics_sample_window_ms`; the sensor keeps at most
  `metrics_num_samples` of them, reusing the oldest when a new one starts;
- reading first "purges": a sample older than samples x window is reset to
  empty, starting now;
- Avg = sum of values / number of events over the samples (0 when none);
  Max = largest value (-inf when none, as kafka-python: Java says NaN);
- Rate = sum of values (Count: number of events) / elapsed seconds, where
  elapsed runs from the oldest sample's start to now but is never less than
  (samples - 1) full windows plus the current one's part, so that a young
  sensor does not report an absurd rate.

The one difference from kafka-python, by construction: its stats each purge
their own list when read, ours share the purge; the figures differ only for
a stat read alone between two recordings, by when the purge started a new
empty sample. tests/unit/test_metrics_window.py holds these stats to
kafka-python's own on the same values and times.

`ConsumerMetrics` is one consumer's registry: the fetcher and the group
transport call its `fetch_*` / `group_answer` hooks; KafkaConsumer.metrics()
reads it; `fastkc.metrics.otel` bridges it to OpenTelemetry. Figures that
are cheaper to read than to maintain (assigned-partitions,
last-heartbeat-seconds-ago, the totals) are functions read on demand.
"""
from fastkc.metrics.consumer import ConsumerMetrics, ResponseTally
from fastkc.metrics.stats import Metric, MetricName, Sensor

__all__ = ["MetricName", "Metric", "Sensor", "ConsumerMetrics", "ResponseTally"]
