"""The stream framer: payloads reassembled from chunks of any size."""
import pytest

from fastkc.errors import KafkaProtocolError
from tests.support.framing import Framer, frame


def test_frames_reassemble_across_every_split_point():
    payloads = [b"", b"a", b"hello world" * 20, bytes(range(256))]
    stream = b"".join(frame(p) for p in payloads)
    for split in range(len(stream) + 1):
        framer = Framer()
        got = framer.feed(stream[:split]) + framer.feed(stream[split:])
        assert got == payloads
        assert framer.buffered() == 0


def test_byte_by_byte_feeding():
    stream = frame(b"abc") + frame(b"defg")
    framer = Framer()
    got = []
    for i in range(len(stream)):
        got += framer.feed(stream[i:i + 1])
    assert got == [b"abc", b"defg"]


def test_partial_frame_is_held():
    framer = Framer()
    assert framer.feed(frame(b"abcdef")[:7]) == []
    assert framer.buffered() == 7


@pytest.mark.parametrize("prefix", [b"\xff\xff\xff\xff", b"\x00\x00\x01\x00"])
def test_bad_sizes_fail_and_stay_failed(prefix):
    framer = Framer(max_frame_size=100)
    with pytest.raises(KafkaProtocolError, match="frame size"):
        framer.feed(prefix)
    with pytest.raises(KafkaProtocolError):
        framer.feed(frame(b"ok"))
