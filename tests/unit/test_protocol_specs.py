"""fastkc's message declarations checked against Kafka's published specs.

Kafka publishes its message specs (common/message/*.json) inside the
kafka-clients jar on Maven Central. tests/support/kafka_specs.py resolves
that jar with mvn into ~/.cache/fastkc/specs/ (once; later runs reuse it)
and reads the specs straight from the jar; this test compares every declared API:

- against Kafka 4.3 (the newest line, whose ranges we declare): API key, valid
  and flexible versions, and per field, in order: name (snake_case of Kafka's),
  type, versions, nullable versions, tag, default;
- against Kafka 3.9 (the last line with the oldest versions): for every version
  both declare, the same fields with the same types, nullability and tags.

Nothing from Kafka is committed to this repository.
"""

import pytest

from fastkc.protocol.messages import ALL_APIS
from fastkc.protocol.schema import in_range, parse_versions
from tests.support.kafka_specs import (
    NEWEST,
    OLDEST_LINE,
    compare_exact,
    load_specs,
    mine_layout,
    snake,
    spec_layout,
    versions_text,
)


@pytest.fixture(scope="module")
def newest_specs():
    return load_specs(NEWEST)


@pytest.fixture(scope="module")
def oldest_line_specs():
    return load_specs(OLDEST_LINE)


@pytest.mark.parametrize("api", ALL_APIS, ids=lambda a: a.name)
def test_declaration_matches_the_newest_spec_exactly(api, newest_specs):
    problems = []
    for side, struct in (("Request", api.request), ("Response", api.response)):
        spec = newest_specs.get(api.name + side)
        assert spec is not None, "Kafka {0} has no {1}{2} spec".format(NEWEST, api.name, side)
        assert spec["apiKey"] == api.key, "{0}{1}: key {2} != spec {3}".format(api.name, side, api.key, spec["apiKey"])
        assert parse_versions(spec["validVersions"]) == api.versions, (
            "{0}{1}: versions {2} != spec {3}".format(
                api.name, side, versions_text(api.versions), spec["validVersions"])
        )
        assert parse_versions(spec["flexibleVersions"]) == api.flexible, (
            "{0}{1}: flexible {2} != spec {3}".format(
                api.name, side, versions_text(api.flexible), spec["flexibleVersions"])
        )
        compare_exact(spec["fields"], struct, spec, api.name + side, problems)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("api", ALL_APIS, ids=lambda a: a.name)
def test_declaration_matches_the_3_9_spec_on_shared_versions(api, oldest_line_specs):
    overlapping = False
    for side, struct in (("Request", api.request), ("Response", api.response)):
        spec = oldest_line_specs.get(api.name + side)
        if spec is None:
            continue  # an API newer than 3.9
        lo, hi = parse_versions(spec["validVersions"])
        # 3.9 carried the share-group APIs only as their unstable early-access
        # v0, which 4.x removed: no version is shared, so nothing to compare
        overlapping = overlapping or max(lo, api.min_version) <= min(hi, api.max_version)
        flexible = parse_versions(spec["flexibleVersions"])
        for version in range(max(lo, api.min_version), min(hi, api.max_version) + 1):
            assert in_range(version, flexible) == api.is_flexible(version), (api.name, side, version)
            theirs = spec_layout(spec["fields"], spec, version)
            mine = mine_layout(struct, version)
            assert mine == theirs, "{0}{1} v{2} differs from Kafka {3}".format(api.name, side, version, OLDEST_LINE)
    request_spec = oldest_line_specs.get(api.name + "Request")
    if request_spec is not None and not overlapping:
        assert request_spec.get("latestVersionUnstable"), (
            "{0}: no version shared with Kafka {1}, whose versions were stable".format(api.name, OLDEST_LINE))


def test_snake_case_mapping():
    assert snake("ThrottleTimeMs") == "throttle_time_ms"
    assert snake("IsrNodes") == "isr_nodes"
    assert snake("timeoutMs") == "timeout_ms"
    assert snake("GenerationIdOrMemberEpoch") == "generation_id_or_member_epoch"
