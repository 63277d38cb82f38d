"""Virtual fixtures: Cartesian no-go zones and the tip-speed limit near the entry point.

A no-go zone is a volume of the world frame (m) that no part of the tool may enter: a box (centre,
full edge lengths, optional roll-pitch-yaw orientation) or a capsule (a segment and a radius).
The surgeon draws them in the task file (`no_go_zones:`, planning.tasks reads them); the planner
refuses a plan that enters one (planning.fixture_check.check_plan) and the hardware component
stops every drive when the commanded or the measured pose enters one (hardware.component, every
cycle). Both use `tool_segments` and `NoGoZone.hits` here, so the plan and the cycle check the
same geometry.

Braking ahead (as the command limiter brakes ahead of the soft limits): a tool moving towards a
zone is stopped while it can still stop short of it. Besides the tool's pose, both checks test
its stopping pose: where each axis comes to rest if quick-stopped now, one control period later
at its quick-stop deceleration (axes.limits.stopping_position, the parameter file's
drive.quick_stop_deceleration, the drives' own category 1 ramp). Checking the pose alone, a jog
at 0.5 m/s stopped 8.6 mm inside the zone, at 1 m/s 34.5 mm (test_fixture_braking). The stopping
poses of successive cycles sweep the path ahead, so a zone thicker than one period's travel
(1 mm at 1 m/s) cannot slip between two of them.

The tool, from the joint positions (the drill's axes, ToolGeometry.axes: the five arm joints and
the drill feed, m and rad), as segments with a radius (m), most specific first:

- "drill tip": the point tool0 + feed * a (a: tool z, the drilling direction), radius 0;
- "drill bit": tool0 -> tip, radius tools.drill.bit_radius (spindle, chuck and bit lumped);
- "tool body": the wrist_pitch axis -> tool0 (link 5, the drill housing, l5 long), radius of the
  wrist_pitch_link cylinder.

Geometry. A segment of radius r hits a capsule zone when the two segments come closer than the
sum of the radii (exact closest points, Ericson's "Real-Time Collision Detection" 5.1.9); it hits
a box zone when it crosses the box grown by r on every side (slab test in the box frame): exact on
the faces, conservative by up to r*(sqrt(3) - 1) at the corners (never misses a contact).

Tip-speed limit (`EntrySpeedLimit`): within `radius` of the entry point the drill tip moves no
faster than `speed` (m/s); during the feed no faster than the task's feed rate (the plan check
applies it per phase; the cycle check applies `speed` in the whole sphere).

Everything works on arrays of samples, (N, 6) joint positions -> (N,) results, so a plan is checked
in one pass; the hardware component calls it with N = 1 each cycle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import ClassVar

import numpy as np

from quirobot_control.axes.limits import stopping_position
from quirobot_description.frames import rpy_matrix
from quirobot_description.geometric_errors import GeometricErrors
from quirobot_description.parameters import JOINT_NAMES, DrillParameters, RobotParameters, axes_for
from quirobot_kinematics.forward import forward_kinematics_batch, tool_axis_single
from quirobot_kinematics.model import KinematicModel

SHAPES = ("box", "capsule")

#: The tool's parts as (name, radius source) in the order a hit is reported (most specific first).
TOOL_PARTS = ("drill tip", "drill bit", "tool body")


class FixtureError(ValueError):
    """A no-go zone or speed limit that is not well formed (named in the message)."""


@dataclass(frozen=True)
class NoGoZone:
    """One zone in the world frame. shape "box": center (3,) m, size (3,) full edge lengths m,
    rotation (3, 3) world_from_zone; shape "capsule": start, end (3,) m, radius m."""

    name: str
    shape: str
    center: np.ndarray = field(default_factory=lambda: np.zeros(3))
    size: np.ndarray = field(default_factory=lambda: np.zeros(3))
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    start: np.ndarray = field(default_factory=lambda: np.zeros(3))
    end: np.ndarray = field(default_factory=lambda: np.zeros(3))
    radius: float = 0.0

    @staticmethod
    def box(name: str, center, size, rpy=(0.0, 0.0, 0.0)) -> NoGoZone:
        """A box of full edge lengths `size` (3,) m at `center` (3,) m, turned by `rpy` (rad)."""
        size = _vector(size, f"no-go zone {name}: size")
        if np.any(size <= 0.0):
            raise FixtureError(f"no-go zone {name}: every edge of size must be > 0 m, got {size.tolist()}")
        rpy = _vector(rpy, f"no-go zone {name}: rpy")
        return NoGoZone(
            name,
            "box",
            center=_vector(center, f"no-go zone {name}: center"),
            size=size,
            rotation=rpy_matrix(*rpy),
        )

    @staticmethod
    def capsule(name: str, start, end, radius: float) -> NoGoZone:
        """The points within `radius` m of the segment start -> end (3,) m."""
        if not (math.isfinite(radius) and radius > 0.0):
            raise FixtureError(f"no-go zone {name}: radius must be > 0 m, got {radius}")
        return NoGoZone(
            name,
            "capsule",
            start=_vector(start, f"no-go zone {name}: start"),
            end=_vector(end, f"no-go zone {name}: end"),
            radius=float(radius),
        )

    def hits(self, a: np.ndarray, b: np.ndarray, radius: float) -> np.ndarray:
        """(N,) bool: does the segment a -> b ((N, 3) each, m) of `radius` m touch the zone?"""
        if self.shape == "capsule":
            return _segment_distance(a, b, self.start, self.end) <= self.radius + radius
        # Slab test of the segment against the box grown by `radius`, in the box frame.
        a_local = (a - self.center) @ self.rotation
        b_local = (b - self.center) @ self.rotation
        half = self.size / 2.0 + radius
        d = b_local - a_local
        with np.errstate(divide="ignore", invalid="ignore"):
            t1 = (-half - a_local) / d
            t2 = (half - a_local) / d
        parallel = np.abs(d) < 1e-15
        inside_slab = np.abs(a_local) <= half
        low = np.where(parallel, np.where(inside_slab, -np.inf, np.inf), np.minimum(t1, t2))
        high = np.where(parallel, np.where(inside_slab, np.inf, -np.inf), np.maximum(t1, t2))
        enter = np.maximum(low.max(axis=1), 0.0)
        leave = np.minimum(high.min(axis=1), 1.0)
        return enter <= leave

    def hits_one(self, a: tuple[float, ...], b: tuple[float, ...], radius: float) -> bool:
        """`hits` for one segment a -> b (3 floats each, m), in plain Python: the hardware
        component's per-cycle check (numpy's per-call overhead would cost ~0.2 ms of the 1 ms
        cycle; test_virtual_fixtures checks both against each other)."""
        if self.shape == "capsule":
            return _segment_distance_one(a, b, self._start_list, self._end_list) <= self.radius + radius
        enter, leave = 0.0, 1.0
        ox, oy, oz = self._center_list
        ax, ay, az = a[0] - ox, a[1] - oy, a[2] - oz
        bx, by, bz = b[0] - ox, b[1] - oy, b[2] - oz
        for (cx, cy, cz), half in zip(self._columns, self._half, strict=True):
            a_local = ax * cx + ay * cy + az * cz
            b_local = bx * cx + by * cy + bz * cz
            half += radius
            d = b_local - a_local
            if abs(d) < 1e-15:
                if abs(a_local) > half:
                    return False
                continue
            t1, t2 = (-half - a_local) / d, (half - a_local) / d
            # enter = max(enter, min(t1, t2)), leave = min(leave, max(t1, t2)) as the builtins
            # pick (the first argument unless the second is strictly beyond it), without their
            # calls: this runs for every zone and tool part, three poses a cycle.
            low = t2 if t2 < t1 else t1
            high = t2 if t2 > t1 else t1
            enter = low if low > enter else enter
            leave = high if high < leave else leave
            if enter > leave:
                return False
        return True

    # Plain lists for hits_one (cached: the zone is immutable). The box's axes go thinnest first:
    # the slab most likely to separate a segment from it (a table's thickness), so most misses end
    # at the first axis. The answer does not depend on the order: it is True only if every slab's
    # interval meets [0, 1] and the others, and max and min are exact.
    @cached_property
    def _slab_order(self) -> list[int]:
        return sorted(range(3), key=lambda k: float(self.size[k]))

    @cached_property
    def _columns(self) -> list[list[float]]:
        columns = self.rotation.T.tolist()
        return [columns[k] for k in self._slab_order]

    @cached_property
    def _center_list(self) -> list[float]:
        return self.center.tolist()

    @cached_property
    def _half(self) -> list[float]:
        half = (self.size / 2.0).tolist()
        return [half[k] for k in self._slab_order]

    @cached_property
    def _start_list(self) -> list[float]:
        return self.start.tolist()

    @cached_property
    def _end_list(self) -> list[float]:
        return self.end.tolist()


@dataclass(frozen=True)
class EntrySpeedLimit:
    """Within `radius` m of `entry` (3,) m the drill tip moves at most `speed` m/s (the feed at most
    `feed_rate` m/s, checked on the plan by phase)."""

    entry: np.ndarray
    radius: float
    speed: float
    feed_rate: float = math.inf


@dataclass(frozen=True)
class ToolGeometry:
    """What `tool_segments` needs: the kinematic model and the tool parts' radii (m); and how the
    tool stops: each axis' quick-stop deceleration (6,) in `axes` order, m/s^2 or rad/s^2."""

    #: The axes of the joint vectors it takes: the drill's (the arm's joints, then the feed).
    axes: ClassVar[tuple[str, ...]] = axes_for("drill")

    model: KinematicModel
    bit_radius: float
    body_radius: float
    stop_deceleration: tuple[float, ...]

    @staticmethod
    def from_parameters(params: RobotParameters, calibration: GeometricErrors | None = None) -> ToolGeometry:
        """This robot's tool, on its kinematics calibrated with `calibration` (None: nominal)."""
        return ToolGeometry(
            KinematicModel.from_parameters(params).calibrated(calibration),
            bit_radius=params.drill.bit_radius,
            body_radius=float(params.link("wrist_pitch_link").radius),
            stop_deceleration=tuple(
                float(params.drive.quick_stop_deceleration[axis]) for axis in ToolGeometry.axes
            ),
        )

    def stopping_poses(self, q: np.ndarray, velocity: np.ndarray, lead_time: float) -> np.ndarray:
        """(N, 6) joint positions where q (N, 6) moving at `velocity` (N, 6) comes to rest if
        quick-stopped `lead_time` s later (axes.limits.stopping_position, per axis)."""
        return stopping_position(q, velocity, np.array(self.stop_deceleration), lead_time)


@dataclass(frozen=True)
class Violation:
    """A tool part inside a zone at sample `index` (of the array checked)."""

    zone: str
    part: str
    index: int
    point: np.ndarray  # (3,) m, the part's end nearest the tip at that sample


def tool_segments(q: np.ndarray, tool: ToolGeometry) -> dict[str, tuple[np.ndarray, np.ndarray, float]]:
    """q (N, 6) joint positions (arm then feed) -> {part: (start (N, 3), end (N, 3), radius m)}."""
    q = np.atleast_2d(np.asarray(q, dtype=float))
    feed = DrillParameters.feed_index
    poses = forward_kinematics_batch(q[:, : len(JOINT_NAMES)], tool.model)
    axis = poses[:, :3, 2]
    tool0 = poses[:, :3, 3]
    tip = tool0 + q[:, feed : feed + 1] * axis
    wrist = tool0 - tool.model.l5 * axis
    return {
        "drill tip": (tip, tip, 0.0),
        "drill bit": (tool0, tip, tool.bit_radius),
        "tool body": (wrist, tool0, tool.body_radius),
    }


def zone_violations(q: np.ndarray, zones: tuple[NoGoZone, ...], tool: ToolGeometry) -> list[Violation]:
    """The first sample at which each zone is entered, with the most specific part (one per zone)."""
    if not zones:
        return []
    segments = tool_segments(q, tool)
    found = []
    for zone in zones:
        first: Violation | None = None
        for part in TOOL_PARTS:
            start, end, radius = segments[part]
            inside = np.flatnonzero(zone.hits(start, end, radius))
            if inside.size and (first is None or inside[0] < first.index):
                first = Violation(zone.name, part, int(inside[0]), end[inside[0]].copy())
        if first is not None:
            found.append(first)
    return found


def tip_positions(q: np.ndarray, tool: ToolGeometry) -> np.ndarray:
    """(N, 3) drill tip positions (m) of q (N, 6)."""
    return tool_segments(q, tool)["drill tip"][1]


def _vector(value, what: str) -> np.ndarray:
    array = np.asarray(value, dtype=float)
    if array.shape != (3,) or not np.all(np.isfinite(array)):
        raise FixtureError(f"{what} must be 3 finite numbers, got {value!r}")
    return array


def _segment_distance(a: np.ndarray, b: np.ndarray, p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """(N,) distances between the segments a -> b ((N, 3)) and p -> q ((3,)): the closest points
    of Ericson 5.1.9, clamped to both segments (degenerate segments included)."""
    eps = 1e-18
    d1 = b - a
    d2 = q - p
    r = a - p
    d11 = np.einsum("ij,ij->i", d1, d1)
    d22 = float(d2 @ d2)
    d2r = r @ d2
    d1r = np.einsum("ij,ij->i", d1, r)
    d12 = d1 @ d2
    denominator = d11 * d22 - d12 * d12
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(
            denominator > eps * np.maximum(d11 * d22, eps),
            np.clip((d12 * d2r - d1r * d22) / denominator, 0, 1),
            0.0,
        )
        if d22 > eps:
            t = (d12 * s + d2r) / d22
            s = np.where(
                t < 0.0, np.clip(-d1r / d11, 0, 1), np.where(t > 1.0, np.clip((d12 - d1r) / d11, 0, 1), s)
            )
            t = np.clip(t, 0.0, 1.0)
        else:
            t = np.zeros_like(d11)
            s = np.clip(-d1r / d11, 0, 1)
        s = np.where(d11 > eps, s, 0.0)
        # With s fixed by the clamps, t is the closest point on p -> q to a + s*d1.
        if d22 > eps:
            t = np.clip(((a + s[:, None] * d1 - p) @ d2) / d22, 0.0, 1.0)
    closest_a = a + s[:, None] * d1
    closest_p = p + t[:, None] * d2
    return np.linalg.norm(closest_a - closest_p, axis=1)


def _segment_distance_one(a, b, p, q) -> float:
    """`_segment_distance` for one pair of segments (3 floats per point), in plain Python."""
    d1 = [b[k] - a[k] for k in range(3)]
    d2 = [q[k] - p[k] for k in range(3)]
    r = [a[k] - p[k] for k in range(3)]
    d11 = d1[0] * d1[0] + d1[1] * d1[1] + d1[2] * d1[2]
    d22 = d2[0] * d2[0] + d2[1] * d2[1] + d2[2] * d2[2]
    d2r = d2[0] * r[0] + d2[1] * r[1] + d2[2] * r[2]
    eps = 1e-18
    if d11 <= eps and d22 <= eps:
        s = t = 0.0
    elif d11 <= eps:
        s, t = 0.0, min(max(d2r / d22, 0.0), 1.0)
    else:
        d1r = d1[0] * r[0] + d1[1] * r[1] + d1[2] * r[2]
        if d22 <= eps:
            s, t = min(max(-d1r / d11, 0.0), 1.0), 0.0
        else:
            d12 = d1[0] * d2[0] + d1[1] * d2[1] + d1[2] * d2[2]
            denominator = d11 * d22 - d12 * d12
            s = (
                min(max((d12 * d2r - d1r * d22) / denominator, 0.0), 1.0)
                if denominator > eps * d11 * d22
                else 0.0
            )
            t = (d12 * s + d2r) / d22
            if t < 0.0:
                s, t = min(max(-d1r / d11, 0.0), 1.0), 0.0
            elif t > 1.0:
                s, t = min(max((d12 - d1r) / d11, 0.0), 1.0), 1.0
    return math.dist([a[k] + s * d1[k] for k in range(3)], [p[k] + t * d2[k] for k in range(3)])


def tool_points_one(q: list[float], tool: ToolGeometry) -> list[tuple[str, list[float], list[float], float]]:
    """`tool_segments` for one configuration q (6 floats, arm then feed), in plain Python:
    [(part, start (3,), end (3,), radius m)] in TOOL_PARTS order."""
    tool0, axis = tool_axis_single(list(q[: len(JOINT_NAMES)]), tool.model)
    feed = q[DrillParameters.feed_index]
    tip = [tool0[k] + feed * axis[k] for k in range(3)]
    wrist = [tool0[k] - tool.model.l5 * axis[k] for k in range(3)]
    return [
        ("drill tip", tip, tip, 0.0),
        ("drill bit", tool0, tip, tool.bit_radius),
        ("tool body", wrist, tool0, tool.body_radius),
    ]


def zone_violation_one(
    q: list[float], zones: tuple[NoGoZone, ...], tool: ToolGeometry
) -> tuple[str, str] | None:
    """(zone, part) of the first zone the tool at q (6 floats) touches, or None (per cycle)."""
    if not zones:
        return None
    hit = first_hit(tool_points_one(q, tool), zones)
    return None if hit is None else (zones[hit[0]].name, TOOL_PARTS[hit[1]])


def first_hit(parts, zones: tuple[NoGoZone, ...]) -> tuple[int, int] | None:
    """(zone, part) indices of the first of tool_points_one's `parts` touching one of `zones`:
    zones outer, parts in TOOL_PARTS order; None: none touches."""
    for z, zone in enumerate(zones):
        for p, (_, start, end, radius) in enumerate(parts):
            if zone.hits_one(start, end, radius):
                return z, p
    return None


@dataclass(frozen=True)
class VirtualFixtures:
    """What a task asks the hardware component to enforce: its no-go zones and its tip-speed
    limit near the entry (None: no limit), with the tool's geometry."""

    zones: tuple[NoGoZone, ...]
    tool: ToolGeometry
    speed_limit: EntrySpeedLimit | None = None
