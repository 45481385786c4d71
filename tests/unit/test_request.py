"""The one request type (fastkc/request.py): the group, fetch and share
machines all hand their drivers a `Request`; a node-addressed request names
its node, a coordinator- or any-node request refuses to."""
import pytest

from fastkc.request import ANY_NODE, COORDINATOR, Request, Token


def test_a_node_request_names_its_node_and_defaults_to_a_decoded_answer():
    request = Request(3, "ListOffsets", {"topics": []}, 30000, 7)
    assert request.node_id == 3
    assert (request.version, request.raw) == (None, False)


@pytest.mark.parametrize("target", [COORDINATOR, ANY_NODE])
def test_a_request_to_no_one_node_has_no_node_id(target):
    request = Request(target, "FindCoordinator", {}, 30000, Token("find"))
    with pytest.raises(TypeError, match="FindCoordinator goes to"):
        _ = request.node_id


def test_a_driver_shortens_the_timeout_and_keeps_the_rest():
    token = Token("commit")
    request = Request(COORDINATOR, "OffsetCommit", {"topics": []}, 30000, token)
    shorter = request._replace(timeout_ms=500)
    assert shorter.timeout_ms == 500 and shorter.token is token and shorter.target == COORDINATOR
