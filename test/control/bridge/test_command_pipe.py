"""The command pipe from drive_node to the drive cycle process (bridge.command_pipe): the reader
keeps the latest whole record and counts the ones it replaced, a record split across reads waits
for its end, a full pipe drops the command without blocking the poster, the end of the writer is
seen, and a command too large to be one atomic write is refused."""

from __future__ import annotations

import os
import threading

import pytest

from quirobot_control.bridge.command_pipe import MAX_RECORD, CommandReader, CommandWriter, command_pipe


@pytest.fixture
def pipe():
    read, write = command_pipe()
    reader, writer = CommandReader(read), CommandWriter(write)
    yield reader, writer
    writer.close()
    reader.close()


def test_the_reader_takes_the_latest_command_and_counts_the_overwritten(pipe):
    reader, writer = pipe
    assert reader.take() is None  # nothing written: no wait, no command
    for k in range(5):
        assert writer.post(["gantry_x", "gantry_y"], [float(k), 0.5], [0.0, 0.1], now=10.0 + k)
    assert reader.take() == (("gantry_x", "gantry_y"), [4.0, 0.5], [0.0, 0.1], 14.0)
    assert reader.take() is None
    assert (reader.posted, reader.overwritten, writer.posted, writer.dropped) == (5, 4, 5, 0)


def test_a_record_split_across_reads_is_taken_once_whole(pipe):
    reader, writer = pipe
    writer.post(["wrist_yaw"], [0.25], [], now=1.0)
    whole = os.read(reader.fd, 1 << 16)  # as if a read had ended inside the next record
    os.write(writer.fd, whole[:7])
    assert reader.take() is None
    os.write(writer.fd, whole[7:])
    assert reader.take() == (("wrist_yaw",), [0.25], [], 1.0)


def test_a_full_pipe_drops_the_command_without_blocking(pipe):
    reader, writer = pipe
    posted = threading.Event()

    def fill() -> None:
        while writer.post(["gantry_x"], [0.0], [0.0], now=0.0):
            pass
        posted.set()

    thread = threading.Thread(target=fill, daemon=True)
    thread.start()
    assert posted.wait(10.0), "a post blocked on the full pipe"
    assert writer.dropped == 1 and writer.posted > 100
    assert writer.post(["gantry_x"], [2.0], [0.0], now=2.0) is False  # still full: dropped too
    assert reader.take() == (("gantry_x",), [0.0], [0.0], 0.0)  # what was written, whole
    assert reader.posted == writer.posted and reader.overwritten == writer.posted - 1
    assert writer.post(["gantry_x"], [3.0], [0.0], now=3.0)  # room again
    assert reader.take()[1] == [3.0]


def test_the_reader_sees_the_writer_close(pipe):
    reader, writer = pipe
    writer.post(["gantry_z"], [0.1], [], now=5.0)
    writer.close()
    assert reader.take() == (("gantry_z",), [0.1], [], 5.0)
    assert reader.ended and reader.take() is None
    assert writer.post(["gantry_z"], [0.2], [], now=6.0) is False  # closed: nothing written


def test_a_command_larger_than_one_atomic_write_is_refused(pipe):
    reader, writer = pipe
    names = [f"joint_{k:04d}" for k in range(MAX_RECORD // 8)]
    with pytest.raises(ValueError, match="more than one pipe record"):
        writer.post(names, [0.0] * len(names), [], now=0.0)
    assert reader.take() is None and writer.posted == 0


def test_a_post_to_a_child_that_has_gone_is_dropped_quietly(pipe):
    reader, writer = pipe
    os.close(reader.fd)  # the child's end gone: EPIPE, not a SIGPIPE or an exception
    reader.fd = os.open(os.devnull, os.O_RDONLY)  # the fixture's close has something to close
    assert writer.post(["gantry_x"], [0.0], [], now=0.0) is False
