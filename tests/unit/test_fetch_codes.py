"""The fetch path's error reactions come from the one error table
(fastkc.errors), and where the table fastkc/fetcher.py once kept disagreed
with it, the table wins (written down here)."""
import pytest

from fastkc import errors
from fastkc.fetch import codes

# fastkc/fetcher.py's own integers before the fetch package (commit 7aa3e1a):
# its METADATA_ERRORS and SESSION_ERRORS
OLD_METADATA_ERRORS = {3, 6, 9, 56, 74, 75, 78, 100, 103}
OLD_SESSION_ERRORS = {70, 71, 106}


def test_session_errors_are_the_named_classes():
    assert codes.SESSION_ERRORS == OLD_SESSION_ERRORS
    assert {errors.for_code(c).__name__ for c in codes.SESSION_ERRORS} == {
        "FetchSessionIdNotFoundError", "InvalidFetchSessionEpochError", "FetchSessionTopicIdError"}


def test_where_the_old_metadata_set_disagreed_with_errors_py():
    # every code the old set held is invalid_metadata in errors.py except
    # OFFSET_NOT_AVAILABLE (78): Kafka's OffsetNotAvailableException is a
    # RetriableException, not an InvalidMetadataException (kafka-python
    # agrees), so it is now retried after the backoff without a metadata
    # refresh
    disagree = {c for c in OLD_METADATA_ERRORS if not errors.for_code(c).invalid_metadata}
    assert disagree == {errors.OffsetNotAvailableError.errno} == {78}
    assert codes.reaction(78) == codes.RETRY
    # and the codes the old set lacked though errors.py marks them
    # invalid_metadata (as kafka-python does) now refresh metadata too
    added = {c for c in range(0, 140) if errors.for_code(c).invalid_metadata} - OLD_METADATA_ERRORS
    assert {errors.for_code(c).__name__ for c in added} == {
        "LeaderNotAvailableError", "NetworkExceptionError", "ListenerNotFoundError",
        "PreferredLeaderNotAvailableError", "EligibleLeadersNotAvailableError", "ElectionNotNeededError"}
    assert all(codes.reaction(c) == codes.REFRESH_METADATA for c in added)


@pytest.mark.parametrize("code", range(1, 130))
def test_every_code_has_its_documented_reaction(code):
    cls = errors.for_code(code)
    reaction = codes.reaction(code)
    if cls is errors.OffsetOutOfRangeError:
        assert reaction == codes.RESET
    elif cls is errors.TopicAuthorizationFailedError:
        assert reaction == codes.FAIL
    elif cls.invalid_metadata:
        assert reaction == codes.REFRESH_METADATA and codes.refreshes_metadata(code)
    else:
        assert reaction == codes.RETRY and not codes.refreshes_metadata(code)


def test_no_integer_table_in_the_fetch_package():
    import pathlib
    import re

    import fastkc.fetch

    root = pathlib.Path(fastkc.fetch.__file__).parent
    for path in root.glob("*.py"):
        text = path.read_text()
        # no NAME = <int> error-code constants (Kafka's error names in capitals)
        integer_constant = r"^[A-Z_]*(ERROR|FAILED|NOT_FOUND|EPOCH|RANGE|TOPIC_ID)[A-Z_]* = \d+"
        assert not re.search(integer_constant, text, re.MULTILINE), path
