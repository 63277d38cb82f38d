"""CDR (little endian, XCDR1: what ROS 2 and mcap_ros2 write) of the messages a simulation log holds.

The simulation's MCAP log (reporting.recording) has two messages per control period (30,000 each
for the shipped incision); mcap_ros2's encoder walks the message definition for every field of
every message (a fifth of `quirobot simulate`'s CPU time before), so these four message types are
encoded here, with the same bytes (test_recording checks each against mcap_ros2's):
sensor_msgs/JointState, geometry_msgs/PoseStamped, nav_msgs/Path, trajectory_msgs/JointTrajectory.
Rules: a 4-byte encapsulation header, then every primitive aligned to its size counted from
after the header, strings as uint32 length (with the NUL) + UTF-8 + NUL, sequences as uint32
count + items.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np

#: The encapsulation header: CDR_LE (0x0001), options 0.
HEADER = b"\x00\x01\x00\x00"


class CdrWriter:
    """Appends CDR fields; `data()` is the message with its header."""

    def __init__(self) -> None:
        self._parts: list[bytes] = [HEADER]
        self._offset = 0  # bytes after the header

    def _align(self, size: int) -> None:
        padding = -self._offset % size
        if padding:
            self._parts.append(b"\0" * padding)
            self._offset += padding

    def _put(self, data: bytes) -> None:
        self._parts.append(data)
        self._offset += len(data)

    def uint32(self, value: int) -> None:
        self._align(4)
        self._put(struct.pack("<I", value))

    def stamp(self, sec: int, nanosec: int) -> None:
        """builtin_interfaces/Time or Duration: int32 sec, uint32 nanosec."""
        self._align(4)
        self._put(struct.pack("<iI", sec, nanosec))

    def string(self, value: str) -> None:
        data = value.encode("utf-8")
        self.uint32(len(data) + 1)
        self._put(data + b"\0")

    def strings(self, values: Sequence[str]) -> None:
        self.uint32(len(values))
        for value in values:
            self.string(value)

    def float64s(self, values: Sequence[float]) -> None:
        """float64[]: count, then the values (each aligned to 8)."""
        self.uint32(len(values))
        self.floats(values)

    def floats(self, values: Sequence[float]) -> None:
        """float64 fields in a row (no count)."""
        if len(values):
            self._align(8)
            self._put(struct.pack(f"<{len(values)}d", *values))

    def header(self, sec: int, nanosec: int, frame_id: str) -> None:
        """std_msgs/Header."""
        self.stamp(sec, nanosec)
        self.string(frame_id)

    def data(self) -> bytes:
        return b"".join(self._parts)


def stamp(t: float) -> tuple[int, int]:
    """(sec, nanosec) of a time in s (nanoseconds rounded to the nearest)."""
    ns = int(round(t * 1e9))
    return ns // 1_000_000_000, ns % 1_000_000_000


def joint_state(
    t: float,
    frame_id: str,
    names: Sequence[str],
    position: Sequence[float],
    velocity: Sequence[float],
    effort: Sequence[float],
) -> bytes:
    """sensor_msgs/JointState at time t (s)."""
    writer = CdrWriter()
    writer.header(*stamp(t), frame_id)
    writer.strings(names)
    writer.float64s(position)
    writer.float64s(velocity)
    writer.float64s(effort)
    return writer.data()


def stamps_ns(times: np.ndarray) -> np.ndarray:
    """(N,) int64 ns of times (N,) s: `stamp`'s rounding (to the nearest, ties to even)."""
    return np.rint(np.asarray(times, dtype=float) * 1e9).astype(np.int64)


class RowLayout:
    """One message type's bytes for a run of messages that differ only in their stamp and their
    float64 fields, each of fixed length: where every field lies (its alignment) depends on the
    lengths alone, so the messages are one template with those bytes written in, for all rows at
    once (`rows`). The same bytes as the one-message encoders (test_recording_cdr)."""

    def __init__(self, writer: CdrWriter, stamp_offset: int, float_offsets: Sequence[int]) -> None:
        self.template = np.frombuffer(writer.data(), dtype=np.uint8)
        self.stamp_offset = stamp_offset  # bytes from the message's start
        self.float_offsets = tuple(float_offsets)

    def rows(self, ns: np.ndarray, *floats: np.ndarray) -> list[bytes]:
        """The messages stamped `ns` (N,) int64 ns (`stamps_ns`), one (N, k) array per float field,
        in their order."""
        count = len(ns)
        seconds = ns // 1_000_000_000
        if count and (seconds.min() < -(2**31) or seconds.max() >= 2**31):
            raise ValueError("a stamp's seconds do not fit builtin_interfaces/Time's int32 sec")
        size = len(self.template)
        data = np.empty((count, size), dtype=np.uint8)
        data[:] = self.template
        at = self.stamp_offset
        data[:, at : at + 4] = seconds.astype("<i4").view(np.uint8).reshape(count, 4)
        data[:, at + 4 : at + 8] = (ns % 1_000_000_000).astype("<u4").view(np.uint8).reshape(count, 4)
        for at, values in zip(self.float_offsets, floats, strict=True):
            block = np.ascontiguousarray(values, dtype="<f8").reshape(count, -1)
            data[:, at : at + 8 * block.shape[1]] = block.view(np.uint8)
        flat = data.tobytes()
        return [flat[k * size : (k + 1) * size] for k in range(count)]


def _float_block(writer: CdrWriter, count: int, with_length: bool) -> int:
    """Append `count` zero float64s (`float64s`, with their length, or `floats`); their offset
    from the message's start."""
    zeros = [0.0] * count
    if with_length:
        writer.float64s(zeros)
    else:
        writer.floats(zeros)
    return len(HEADER) + writer._offset - 8 * count


def joint_state_layout(frame_id: str, names: Sequence[str]) -> RowLayout:
    """`joint_state` messages of these names, as RowLayout rows: (ns, position, velocity, effort),
    each of the three (N, len(names))."""
    writer = CdrWriter()
    writer.header(0, 0, frame_id)  # the stamp: the first field after the encapsulation header
    writer.strings(names)
    offsets = [_float_block(writer, len(names), with_length=True) for _ in range(3)]
    return RowLayout(writer, len(HEADER), offsets)


def pose_stamped_layout(frame_id: str) -> RowLayout:
    """`pose_stamped` messages, as RowLayout rows: (ns, position (N, 3), orientation_xyzw (N, 4))."""
    writer = CdrWriter()
    writer.header(0, 0, frame_id)
    offsets = [_float_block(writer, 3, with_length=False), _float_block(writer, 4, with_length=False)]
    return RowLayout(writer, len(HEADER), offsets)


def _pose_stamped(writer: CdrWriter, t: float, frame_id: str, position, orientation_xyzw) -> None:
    writer.header(*stamp(t), frame_id)
    writer.floats(position)
    writer.floats(orientation_xyzw)


def pose_stamped(
    t: float, frame_id: str, position: Sequence[float], orientation_xyzw: Sequence[float]
) -> bytes:
    """geometry_msgs/PoseStamped at time t (s): position (3,) m, orientation (x, y, z, w)."""
    writer = CdrWriter()
    _pose_stamped(writer, t, frame_id, position, orientation_xyzw)
    return writer.data()


def path(t: float, frame_id: str, times: Sequence[float], positions: Sequence[Sequence[float]]) -> bytes:
    """nav_msgs/Path at time t (s): one pose per time, at positions (N, 3) m, identity orientation."""
    writer = CdrWriter()
    writer.header(*stamp(t), frame_id)
    writer.uint32(len(times))
    for time, position in zip(times, positions, strict=True):
        _pose_stamped(writer, time, frame_id, position, (0.0, 0.0, 0.0, 1.0))
    return writer.data()


def joint_trajectory(
    t: float,
    frame_id: str,
    names: Sequence[str],
    times: Sequence[float],
    positions: Sequence[Sequence[float]],
    velocities: Sequence[Sequence[float]],
    accelerations: Sequence[Sequence[float]],
) -> bytes:
    """trajectory_msgs/JointTrajectory at time t (s): one point per time from start (no efforts)."""
    writer = CdrWriter()
    writer.header(*stamp(t), frame_id)
    writer.strings(names)
    writer.uint32(len(times))
    for time, p, v, a in zip(times, positions, velocities, accelerations, strict=True):
        writer.float64s(p)
        writer.float64s(v)
        writer.float64s(a)
        writer.float64s(())
        writer.stamp(*stamp(time))
    return writer.data()
