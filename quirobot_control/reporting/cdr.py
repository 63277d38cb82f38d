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
