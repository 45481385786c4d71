"""What the fetch path does about a broker error code, derived from the one
error table (fastkc.errors): no integers here.

A partition error in a Fetch, ListOffsets or OffsetForLeaderEpoch answer
gets one of these reactions (`reaction(code)`):

- RESET: OFFSET_OUT_OF_RANGE. Reset by auto_offset_reset, or under 'none'
  OffsetOutOfRangeError from poll().
- FAIL: TOPIC_AUTHORIZATION_FAILED. TopicAuthorizationFailedError from poll().
- REFRESH_METADATA: an error whose class is `invalid_metadata` (the leader is
  probably elsewhere): metadata refreshed now, the preferred read replica
  forgotten, the partition retried after retry_backoff_ms.
- RETRY: anything else: logged, retried after retry_backoff_ms.

A top-level Fetch error resets the fetch session; the session errors
(SESSION_ERRORS) do it without a metadata refresh, any other top-level error
also asks for metadata.
"""
from fastkc import errors

NONE = 0

RESET = "reset"
FAIL = "fail"
REFRESH_METADATA = "refresh_metadata"
RETRY = "retry"

OFFSET_OUT_OF_RANGE = errors.OffsetOutOfRangeError.errno
TOPIC_AUTHORIZATION_FAILED = errors.TopicAuthorizationFailedError.errno

#: the session errors (KIP-227): the session is gone or out of step; a new full fetch starts one
SESSION_ERRORS = frozenset(cls.errno for cls in (
    errors.FetchSessionIdNotFoundError, errors.InvalidFetchSessionEpochError, errors.FetchSessionTopicIdError))


def reaction(code: int) -> str:
    """The fetch path's reaction to a partition error code (see the module docstring)."""
    if code == OFFSET_OUT_OF_RANGE:
        return RESET
    if code == TOPIC_AUTHORIZATION_FAILED:
        return FAIL
    if errors.for_code(code).invalid_metadata:
        return REFRESH_METADATA
    return RETRY


def refreshes_metadata(code: int) -> bool:
    return code != NONE and errors.for_code(code).invalid_metadata


def retriable(code: int) -> bool:
    """A ListOffsets answer worth asking again (retriable or a moved leader)."""
    cls = errors.for_code(code)
    return cls.retriable or cls.invalid_metadata
