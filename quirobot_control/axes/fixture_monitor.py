"""The hardware component's per-cycle check of the virtual fixtures: `FixtureMonitor`.

Every control cycle (1 kHz) the commanded and the measured tool are tested against the task's
no-go zones, and so is the commanded tool's stopping pose; the commanded drill tip's speed is
tested against the limit near the entry (the geometry and its laws: axes.virtual_fixtures). The
zone test is `zone_hit_in_python`: three forward kinematics and up to nine segment tests a cycle,
a tenth of `quirobot simulate` interpreted (bench/sim_speed.py --parts). So it has a compiled
twin in the C extension `_fixture_kernel` (fixture_kernel.c) for box zones on the nominal chain:
the same operations in the same order on doubles, the same answers bit for bit
(test_fixture_monitor.py). Where a cycle is not for it (a capsule zone, a calibrated chain, a
non-finite value) or it was not built (no C compiler or Python headers), the Python twin answers.
`COMPILED` says whether it was built.
"""

from __future__ import annotations

import math

from quirobot_control.axes.limits import stopping_position
from quirobot_control.axes.virtual_fixtures import (
    TOOL_PARTS,
    NoGoZone,
    ToolGeometry,
    VirtualFixtures,
    first_hit,
    tool_points_one,
)

#: What zone_hit's label index names: the pose that touched the zone.
LABELS = ("commanded", "measured", "stopping")
#: m or rad: a stopping pose closer than this to the pose is the pose (no third FK at rest).
STILL = 1e-9

#: (tip (3 floats, m), hit): the commanded drill tip, and None or (label, zone, part) indices
#: into LABELS, the zones and TOOL_PARTS of the first contact.
ZoneHit = tuple[list[float], tuple[int, int, int] | None]


def zone_hit_in_python(
    tool: ToolGeometry,
    zones: tuple[NoGoZone, ...],
    commanded: list[float],
    measured: list[float],
    dt: float,
    velocity: list[float],
) -> ZoneHit:
    """The commanded tip and the first zone contact of the cycle: the commanded tool, then the
    measured one, then the commanded tool's stopping pose (each axis at `stopping_position` from
    its commanded velocity `dt` s later, at the tool's stop_deceleration; skipped within STILL
    of the pose). Joint positions and velocities: 6 floats each (arm then feed), m, rad, m/s, rad/s."""
    commanded_parts = tool_points_one(commanded, tool)  # FK once per pose and cycle
    tip = commanded_parts[0][2]
    if not zones:
        return tip, None
    for label, parts in enumerate((commanded_parts, tool_points_one(measured, tool))):
        if (hit := first_hit(parts, zones)) is not None:
            return tip, (label, *hit)
    axes = zip(commanded, velocity, tool.stop_deceleration, strict=True)
    stop = [stopping_position(q, v, a, dt) for q, v, a in axes]
    moved = max(abs(x - q) for x, q in zip(stop, commanded, strict=True)) > STILL
    if moved and (hit := first_hit(tool_points_one(stop, tool), zones)) is not None:
        return tip, (2, *hit)
    return tip, None


def box_constants(
    tool: ToolGeometry, zones: tuple[NoGoZone, ...]
) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """The compiled zone_hit's (constants, zones) for this tool and these zones, or None where only
    the Python twin applies (a calibrated chain, a capsule zone)."""
    if tool.model.errors is not None or any(zone.shape != "box" for zone in zones):
        return None
    model = tool.model
    constants = (model.l4, model.l5, tool.bit_radius, tool.body_radius, STILL, *tool.stop_deceleration)
    boxes: list[float] = []
    for zone in zones:  # hits_one's lists: the centre, then each slab's axis and half size in its order
        boxes += zone._center_list
        for column, half in zip(zone._columns, zone._half, strict=True):
            boxes += [*column, half]
    return tuple(float(x) for x in constants), tuple(float(x) for x in boxes)


try:
    # (From the package, not the module path: the import rules' graph knows no compiled module.)
    from quirobot_control.axes import _fixture_kernel

    zone_hit = _fixture_kernel.zone_hit

    #: Whether the compiled zone_hit is built here (False: every cycle runs zone_hit_in_python).
    COMPILED = True
except ImportError:  # not built here: no C compiler or no Python headers at install
    zone_hit = None
    COMPILED = False


class FixtureMonitor:
    """The per-cycle check (N = 1): `check(commanded, measured, dt, velocity)` with the joint
    positions (6 floats each, arm then feed) and the commanded velocities (6 floats) returns why
    every drive must stop, or None.

    - the commanded or the measured tool touches a no-go zone, or the commanded tool would if
      quick-stopped now: its stopping pose (each axis at `stopping_position` from its commanded
      velocity, one period `dt` later, at the tool's stop_deceleration: a CSP drive ramps down
      from the reference in force) touches one. The measured state's stopping pose is not
      checked: it differs from the commanded one by the tracking error (micrometres), well
      inside the period's travel counted, and a second forward kinematics would cost the cycle;
    - the commanded drill tip, within the limit's radius of the entry (now or in the previous
      cycle), moved faster than the limit's speed (times 1 + SPEED_TOLERANCE) since the previous
      cycle. The commanded tip is differenced, not the measured one: the encoder's quantization
      over one period would look like speed.
    """

    #: Relative allowance over the tip-speed limit for rounding in the planner's samples and
    #: the command limiter's steps.
    SPEED_TOLERANCE = 1e-3
    STILL = STILL

    def __init__(self, fixtures: VirtualFixtures) -> None:
        self.fixtures = fixtures
        self._previous_tip: list[float] | None = None
        #: zone_hit's constants and boxes, or None: the Python twin answers every cycle.
        self._compiled = box_constants(fixtures.tool, fixtures.zones) if COMPILED else None

    def reset(self) -> None:
        """Forget the previous tip (activation: the next cycle has no speed to compare)."""
        self._previous_tip = None

    def check(
        self, commanded: list[float], measured: list[float], dt: float, velocity: list[float]
    ) -> str | None:
        fixtures = self.fixtures
        answer = None
        if self._compiled is not None:
            answer = zone_hit(*self._compiled, commanded, measured, dt, velocity)
        if answer is None:
            answer = zone_hit_in_python(fixtures.tool, fixtures.zones, commanded, measured, dt, velocity)
        tip, hit = answer
        if hit is not None:
            label, zone, part = LABELS[hit[0]], fixtures.zones[hit[1]].name, TOOL_PARTS[hit[2]]
            if label == "stopping":
                return (
                    f"virtual fixture: the commanded {part}, stopping from its speed at the quick-stop "
                    f"decelerations, would enter no-go zone {zone!r}: braking ahead of it"
                )
            return f"virtual fixture: the {label} {part} enters no-go zone {zone!r}"
        limit = fixtures.speed_limit
        if limit is None:
            return None
        previous, self._previous_tip = self._previous_tip, tip
        if previous is None:
            return None
        entry = limit.entry.tolist()
        near = min(math.dist(tip, entry), math.dist(previous, entry)) <= limit.radius
        speed = math.dist(tip, previous) / dt
        if near and speed > limit.speed * (1.0 + self.SPEED_TOLERANCE):
            return (
                f"virtual fixture: commanded drill tip speed {speed * 1000:.1f} mm/s within "
                f"{limit.radius * 1000:.0f} mm of the entry exceeds the tip-speed limit "
                f"{limit.speed * 1000:.1f} mm/s"
            )
        return None
