"""The broker's release as kafka-python reports it (config["api_version"]
after bootstrap), inferred from the ApiVersions answer: one rule for the
blocking and the asyncio consumers."""
from __future__ import annotations

from collections.abc import Mapping

# kafka-python 3.0.12's inference of the broker's release from its ApiVersions
# answer (kafka/protocol/broker_version_data.py): the newest release whose
# marker (api key, version) the broker speaks. Api keys: Produce 0, Fetch 1,
# ListOffsets 2, Metadata 3, LeaderAndIsr 4, OffsetFetch 9, JoinGroup 11,
# AddPartitionsToTxn 24, DescribeAcls 29, DescribeLogDirs 35, DescribeClientQuotas 48.
_BROKER_VERSION_MARKERS = (
    ((4, 3), 35, 5), ((4, 2), 2, 11), ((4, 1), 0, 13), ((4, 0), 2, 10),
    ((3, 9), 1, 17), ((3, 8), 0, 11), ((3, 7), 1, 16), ((3, 6), 24, 4), ((3, 5), 1, 15),
    ((3, 4), 4, 7), ((3, 3), 29, 3), ((3, 2), 11, 9), ((3, 1), 1, 13), ((3, 0), 2, 7),
    ((2, 8), 0, 9), ((2, 7), 1, 12), ((2, 6), 48, 0), ((2, 5), 29, 2), ((2, 4), 0, 8),
    ((2, 3), 1, 11), ((2, 2), 2, 5), ((2, 1), 1, 10), ((2, 0), 1, 8), ((1, 1), 1, 7),
    ((1, 0), 3, 5), ((0, 11), 3, 4), ((0, 10, 2), 9, 2), ((0, 10, 1), 3, 2),
)


def infer_broker_version(api_versions: Mapping[int, tuple[int, int]]) -> tuple[int, ...]:
    """The broker release kafka-python reports as config["api_version"] for
    an ApiVersions answer ({api_key: (min, max)}): a tuple such as (4, 1);
    (0, 10, 0) when no marker matches (ApiVersions exists from 0.10)."""
    for release, api_key, version in _BROKER_VERSION_MARKERS:
        low_high = api_versions.get(api_key)
        if low_high is not None and low_high[0] <= version <= low_high[1]:
            return release
    return (0, 10, 0)
