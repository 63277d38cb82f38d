"""The plan check of the virtual fixtures (axes.virtual_fixtures): every plan of a task is refused
if its tool enters a no-go zone, would enter one if quick-stopped at any sample (its stopping pose,
as the per-cycle check brakes ahead of zones: a plan passing a zone closer than its stopping
distance would be stopped by the hardware component), or its drill tip moves too fast near the
entry point.

`check_plan(trajectory, fixtures)` raises PlanningError naming the zone (or the limit), the tool
part, the phase and the time; planning.tasks calls it on every plan it returns. The same
geometry runs on every control cycle in the hardware component (hardware.component).

Tip speed, per phase, within the limit's radius of the entry (either end of a sample interval):
the feed at most the task's feed rate, every other phase at most the limit's speed; the speed of a
sample interval is the distance the tip moved over the control period (the planned motion is
exact to rounding: a relative tolerance of SPEED_TOLERANCE).
"""

from __future__ import annotations

import numpy as np

from quirobot_control.axes.limits import PlanningError
from quirobot_control.axes.virtual_fixtures import VirtualFixtures, tip_positions, zone_violations
from quirobot_control.planning.trajectory import JointTrajectory
from quirobot_description.shown_numbers import compared, shown

#: Relative slack on the tip-speed limits for rounding in the sampled plan.
SPEED_TOLERANCE = 1e-6
#: The phase whose tip speed is bounded by the feed rate instead of the limit's speed.
FEED_PHASE = "feed"


def phase_at(trajectory: JointTrajectory, time: float) -> str:
    """The name of the phase running at `time` (s; the later one at a boundary), or "plan"."""
    name = "plan"
    for phase in trajectory.phases:
        if phase.start_time - 1e-9 <= time <= phase.end_time + 1e-9:
            name = phase.name
    return name


def check_plan(trajectory: JointTrajectory, fixtures: VirtualFixtures, what: str = "plan") -> None:
    """PlanningError if the planned tool enters a no-go zone or the tip breaks its speed limit."""
    q = trajectory.positions
    for stopping in (False, True):
        poses = fixtures.tool.stopping_poses(q, trajectory.velocities, trajectory.dt) if stopping else q
        violations = zone_violations(poses, fixtures.zones, fixtures.tool)
        if not violations:
            continue
        first = min(violations, key=lambda v: v.index)
        time = first.index * trajectory.dt
        how = "stopping at the quick-stop decelerations would enter" if stopping else "enters"
        raise PlanningError(
            f"{what}: the {first.part} {how} no-go zone {first.zone!r} in phase "
            f"{phase_at(trajectory, time)} at t = {time:.3f} s (at {np.round(first.point, 4).tolist()} m)"
            + (
                f"; also zone(s) {', '.join(repr(v.zone) for v in violations if v is not first)}"
                if len(violations) > 1
                else ""
            )
            + (": it moves too fast this close to the zone" if stopping else "")
        )
    limit = fixtures.speed_limit
    if limit is None or len(q) < 2:
        return
    tip = tip_positions(q, fixtures.tool)
    speed = np.linalg.norm(np.diff(tip, axis=0), axis=1) / trajectory.dt
    distance = np.linalg.norm(tip - limit.entry, axis=1)
    near = np.minimum(distance[:-1], distance[1:]) <= limit.radius
    bound = np.full(len(speed), limit.speed)
    for phase in trajectory.phases:
        if phase.name == FEED_PHASE:
            first = int(round(phase.start_time / trajectory.dt))
            last = int(round(phase.end_time / trajectory.dt))
            bound[first:last] = limit.feed_rate
    over = np.flatnonzero(near & (speed > bound * (1.0 + SPEED_TOLERANCE)))
    if over.size:
        k = int(over[0])
        time = k * trajectory.dt
        phase = phase_at(trajectory, time + 0.5 * trajectory.dt)
        which = "the feed rate" if phase == FEED_PHASE else "the tip-speed limit"
        moves, allowed = compared(speed[k] * 1000, bound[k] * 1000)
        raise PlanningError(
            f"{what}: the drill tip moves at {moves} mm/s within {shown(limit.radius * 1000)} mm "
            f"of the entry in phase {phase} at t = {time:.3f} s, above {which} {allowed} mm/s"
        )


#: The phases of an incision in which its drill tip may be past the entry (in the bone).
IN_BONE_PHASES = ("feed", "dwell", "retract")


def check_out_of_bone(
    trajectory: JointTrajectory,
    fixtures: VirtualFixtures,
    entry: np.ndarray,
    direction: np.ndarray,
    what: str = "incision",
) -> None:
    """PlanningError if the planned drill tip is past the entry plane (into the bone, `entry` (3,)
    m, unit `direction` (3,) into it) outside the feed, dwell and retract, within the tip-speed
    limit's radius of the axis (the task's region "near skin and bone"; no limit: no check). A
    start or park pose with the tip in the bone would move it through bone sideways (a task that
    parked tool0 where the tip belonged drove the tip 0.68 mm into the bone on its way back to
    park, where the thrust limit stopped it)."""
    limit = fixtures.speed_limit
    if limit is None or not len(trajectory.positions):
        return
    tip = tip_positions(trajectory.positions, fixtures.tool)
    offset = tip - entry
    depth = offset @ direction
    lateral = np.linalg.norm(offset - depth[:, None] * direction, axis=1)
    outside = np.ones(len(depth), dtype=bool)
    for phase in trajectory.phases:
        if phase.name in IN_BONE_PHASES:
            first = int(round(phase.start_time / trajectory.dt))
            outside[first : int(round(phase.end_time / trajectory.dt)) + 1] = False
    in_bone = np.nonzero(outside & (depth > 0.0) & (lateral <= limit.radius))[0]
    if in_bone.size:
        k = int(in_bone[np.argmax(depth[in_bone])])
        time = k * trajectory.dt
        raise PlanningError(
            f"{what}: the drill tip is {depth[k] * 1000:.3f} mm past the entry, "
            f"{lateral[k] * 1000:.3f} mm from the axis, in phase {phase_at(trajectory, time)} at "
            f"t = {time:.3f} s: outside the feed the tip stays out of the bone (park it above the entry)"
        )
