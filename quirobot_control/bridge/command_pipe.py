"""drive_node's commands to the drive cycle process: a pipe of their own, written by the thread
that receives the command and read by the cycle thread itself at the start of each period.

The first design went through two more threads (a sender here, the child's main thread there,
each waiting for its interpreter's GIL): measured with the simulated drives of
test_cycle_process, post -> child took 0.6 ms at p50 and 3.5 ms at p99 idle, and drive_node's
executor, holding the GIL for up to the interpreter's 5 ms switch interval, made command -> RPDO
27 ms at p99 (bench/drive_loop.py). Here a post is one `os.write` from the posting thread and a
take one `os.read` in the cycle thread: no thread to wake on either side.

A record is a 4-byte little-endian length, then the pickled (names, position, velocity, now)
(pickle, as the other pipes: the two processes are one installation). The write end is
non-blocking and a record is at most PIPE_BUF bytes, so each write is atomic (POSIX): whole
records only, from any number of threads, never a wait on the pipe (a lock orders the writes
with the close: no write reaches a descriptor number after it was closed). A full pipe (a child
that stopped reading) drops the command and counts it (`CommandWriter.dropped`): the cycle's
command watchdog judges the age of what it has. The reader keeps the latest record of what it reads
(latest wins, as the cycle's in-process mailbox) and counts the others (`overwritten`).
"""

from __future__ import annotations

import os
import pickle
import select
import struct
import threading
from collections.abc import Sequence

from quirobot_control.bridge.cycle_exchange import Command

__all__ = ["MAX_RECORD", "CommandReader", "CommandWriter", "command_pipe"]

#: The largest record (bytes, length prefix included): POSIX's PIPE_BUF, the most one write
#: keeps whole.
MAX_RECORD = select.PIPE_BUF
_LENGTH = struct.Struct("<I")
#: Reads per take at most (64 KiB each, the pipe's default capacity): a take always ends.
_MAX_READS = 16


def command_pipe() -> tuple[int, int]:
    """(read end, write end) file descriptors; the write end non-blocking, the read end too
    (the cycle thread must never wait on it). Both close-on-exec: pass the read end to the
    child explicitly (subprocess's pass_fds)."""
    read, write = os.pipe()
    os.set_blocking(read, False)
    os.set_blocking(write, False)
    return read, write


class CommandWriter:
    """The parent's end: `post` from any thread, never blocks (module doc)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.posted = 0  # commands written
        self.dropped = 0  # commands the full pipe did not take
        self.closed = False
        # Held for each write and for the close: a post racing the close must not write to the
        # descriptor's number once closed (another file may have been given it by then).
        self._lock = threading.Lock()

    def post(
        self, names: Sequence[str], position: Sequence[float], velocity: Sequence[float], now: float
    ) -> bool:
        """Write one command received at `now` (s, time.monotonic); False if it was dropped (a full
        pipe, or the child's end closed). ValueError for a command too large to be one record."""
        payload = pickle.dumps((tuple(names), list(position), list(velocity), float(now)), protocol=5)
        record = _LENGTH.pack(len(payload)) + payload
        if len(record) > MAX_RECORD:
            raise ValueError(
                f"command of {len(names)} joints is {len(record)} bytes, more than one pipe record "
                f"({MAX_RECORD} bytes)"
            )
        with self._lock:
            if self.closed:
                return False
            try:
                os.write(self.fd, record)  # non-blocking: the lock is held for a system call only
            except BlockingIOError:
                self.dropped += 1
                return False
            except OSError:  # EPIPE: the child has gone (its reader reports it)
                return False
            self.posted += 1
            return True

    def close(self) -> None:
        with self._lock:
            if not self.closed:
                self.closed = True
                os.close(self.fd)


class CommandReader:
    """The child's end, read by the cycle thread: `take()` as CommandMailbox.take (module doc)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.posted = 0  # records read
        self.overwritten = 0  # records a later one replaced before a take
        self.ended = False  # the parent closed its end
        self._carry = b""  # the start of a record not yet whole (a read may end inside one)

    def take(self) -> Command | None:
        """The latest command written since the last take, or None; never blocks."""
        if self.ended:
            return None
        data = self._carry
        for _ in range(_MAX_READS):
            try:
                chunk = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            if not chunk:  # the write end closed: no command any more
                self.ended = True
                break
            data += chunk
        latest, offset, records = None, 0, 0
        while len(data) - offset >= _LENGTH.size:
            (size,) = _LENGTH.unpack_from(data, offset)
            end = offset + _LENGTH.size + size
            if end > len(data):
                break
            latest, offset, records = (offset + _LENGTH.size, end), end, records + 1
        self._carry = data[offset:]
        if latest is None:
            return None
        self.posted += records
        self.overwritten += records - 1
        return pickle.loads(data[latest[0] : latest[1]])

    def close(self) -> None:
        os.close(self.fd)
