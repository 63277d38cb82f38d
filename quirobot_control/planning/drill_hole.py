"""A drill-hole request (the DrillHole action's goal) checked, planned and tracked, ROS-free.

- `DrillGoal`: entry (3,) m, direction (3,) (any length, normalised here), depth m, feed_rate m/s,
  max_thrust N, in the world frame.
- `plan_drill_hole(goal, start, params, dt)`: validates the goal (finite values, a direction,
  depth within the drill feed's travel and at most tools.drill.breakthrough_limit past the bone
  model's far side, feed rate within the feed's velocity limit, thrust bound within the robot's
  thrust limit tools.drill.thrust_limit and above the bone model's predicted thrust) and plans it with
  the incision planner (`plan_incision`: approach, align, feed, dwell, retract, withdraw, back to
  `start`): the shipped incision task (config/tasks/incision.yaml) with the goal's entry,
  direction, depth and feed rate and `start` as its park pose (a feed elsewhere than the task's
  park value first moves there along the tool axis, phase "prepare"), the whole plan: the goal
  ends where it started, the feed retracted, after the plan's settling hold ("end"); `quirobot
  simulate` runs the same plan. An unreachable goal is refused
  with the planner's reason, which names the joint. Raises `GoalRejectedError` (its `kind` says
  malformed or beyond a limit). With a bone model the plan-time breakthrough check
  (safety.breakthrough_plan) runs on the plan, for every caller (`quirobot simulate` and the
  DrillHole executor alike): `DrillPlan.monitor` is the drilling monitor armed on the far cortex
  the plan drills into (or the plan is refused, LIMIT, saying why the detector would not see the
  breakthrough); without one, detection is armed from the entry (no imaged far cortex: the first
  drop of cortical thrust ends the feed, a unicortical hole is the safe reading). The goal's
  max_thrust is the monitor's thrust limit (safety.hole_context.hole_monitor_settings).
- `hole_context`: the plan as the drive side watches it (safety.hole_context.HoleContext).
- `tip_progress`: depth past the entry and lateral distance from the axis of a tip position.
- `phase_progress`: the phase name and the fraction done at a time of the plan.
- `waypoints`: the samples sent to the trajectory controllers.
- `plan_cancel_retract`: the feed back out of the bone along the axis from a measured pose.

What a cancel or an error does while a goal runs is the executor's (procedures.cancel_policy).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from quirobot_control.axes.limits import JointLimits, PlanningError
from quirobot_control.models.bone import BoneThrust
from quirobot_control.planning.tasks import IncisionTask, load_task, plan_incision, planning_kinematics
from quirobot_control.planning.trajectory import JointTrajectory, Phase, plan_feed
from quirobot_control.safety.breakthrough_plan import BreakthroughPlanError, FeedPlan, plan_breakthrough
from quirobot_control.safety.drilling_monitor import DrillingMonitorSettings
from quirobot_control.safety.hole_context import GoalLimitError, HoleContext, hole_monitor_settings
from quirobot_description.file_schema import TASK_FILE
from quirobot_description.geometric_errors import GeometricErrors
from quirobot_description.machine_identity import MachineIdentity
from quirobot_description.parameters import JOINT_NAMES, DrillParameters, RobotParameters, axes_for
from quirobot_description.shown_numbers import compared, shown
from quirobot_kinematics import forward_kinematics

#: The plan's phases in which the bit is in (or within the standoff of) the bone: a cancel there
#: retracts along the axis instead of stopping.
BONE_PHASES = frozenset({"feed", "dwell", "retract"})


#: GoalRejectedError.kind: a malformed goal (DrillHole REJECTED_INVALID) or a number beyond a
#: limit (REJECTED_LIMIT).
INVALID, LIMIT = "invalid", "limit"


class GoalRejectedError(ValueError):
    """A DrillHole goal that cannot be done; the message says why (the joint, the limit, the
    value) in one line. `kind`: INVALID (non-finite, zero direction, wrong shape, not > 0) or LIMIT
    (depth, feed rate, thrust, start pose, an unreachable or no-go plan)."""

    def __init__(self, message: str, kind: str = INVALID) -> None:
        super().__init__(message)
        self.kind = kind


class InvalidGoalError(GoalRejectedError):
    """A malformed goal (non-finite, zero direction, a non-positive number), not a limit."""


@dataclass(frozen=True)
class DrillGoal:
    entry: np.ndarray  # (3,) m, world frame: where the tip enters the bone
    direction: np.ndarray  # (3,) into the bone, any non-zero length
    depth: float  # m past the entry along the direction
    feed_rate: float  # m/s
    max_thrust: float  # N, the largest thrust the goal allows


@dataclass(frozen=True)
class DrillPlan:
    task: IncisionTask  # the incision task the goal became (unit direction, start as park)
    trajectory: JointTrajectory  # (N, 6) at dt, phases start .. end
    predicted_thrust: float  # N, the bone model's quasi-static peak at the feed rate
    monitor: DrillingMonitorSettings  # the drilling monitor for this plan (module docstring)
    bone_model: bool = True  # the task's bone is the imaged bone (False: no bone model)
    calibration: GeometricErrors | None = None  # the kinematics it was planned with (None: nominal)

    def hole_context(self, goal_id: str, machine: MachineIdentity | None = None) -> HoleContext:
        """What the drive side watches while this plan drills (safety.hole_context); `machine`: the
        machine its calibration was identified on (needed with a calibration)."""
        task, monitor = self.task, self.monitor
        limit = task.entry_speed_limit
        return HoleContext(
            goal_id=goal_id,
            entry=task.entry,
            direction=task.direction,
            depth=task.depth,
            feed_rate=task.feed_rate,
            thrust_limit=monitor.thrust_limit,
            arm_depth=monitor.arm_depth,
            exit_depth=monitor.exit_depth,
            zones=tuple(task.no_go_zones),
            entry_speed_radius=None if limit is None else limit.radius,
            entry_speed=None if limit is None else limit.speed,
            bone=task.bone if self.bone_model else None,
            calibration=self.calibration,
            calibration_machine=machine,
        )


def _finite(name: str, value: np.ndarray | float) -> np.ndarray:
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise GoalRejectedError(f"{name} must be numeric, got {str(value)[:40]!r}") from None
    if not np.all(np.isfinite(array)):
        raise GoalRejectedError(f"{name} must be finite, got {np.round(array, 6).tolist()}")
    return array


def plan_drill_hole(
    goal: DrillGoal,
    start: np.ndarray,
    params: RobotParameters,
    dt: float,
    base: IncisionTask | None = None,
    *,
    start_tolerance: np.ndarray | None = None,
    bone_model: bool = True,
    calibration: GeometricErrors | None = None,
    feed_mass: float,
) -> DrillPlan:
    """Check `goal` and plan it from joint pose `start` (6,) (arm joints then drill_feed) back to it.

    `base` (default: the shipped incision task) gives what a goal does not: standoff, approach
    distance, dwell, retract rate, line limits and the bone model for the thrust prediction.
    `start_tolerance` (6,) (m, rad; default 0): `start` is a measurement, and a joint held at a
    soft limit reads a little either side of it; a joint outside its soft range by at most this
    much is taken as at the limit (task_node passes the controllers' goal tolerances: what they
    accept as having reached a position), beyond it the goal is rejected naming the joint.
    `bone_model` False: the goal has no bone model (no task file): the thrust is not predicted
    (predicted_thrust nan) and max_thrust is checked against the feed's effort limit only.
    `calibration`: the machine's identified geometric errors, planned with (planning.tasks.
    planning_kinematics); None: the nominal model. `feed_mass`: the feed's effective inertia, kg
    (the control configuration's: the drilling monitor's, and the breakthrough check's prediction).
    """
    feed_index = DrillParameters.feed_index  # the drill feed's column
    base = base or load_task("incision")
    entry = _finite("entry", goal.entry)
    direction = _finite("direction", goal.direction)
    if entry.shape != (3,) or direction.shape != (3,):
        raise GoalRejectedError(
            f"entry and direction must each have 3 components, got {entry.size} and {direction.size}"
        )
    reach = TASK_FILE.expect("entry")  # a task file's entry bound: the gantry's few metres
    outside = (entry < reach.low) | (entry > reach.high)
    if outside.any():
        raise GoalRejectedError(
            f"entry {entry[outside][0]:.4g} m is outside the plausible range "
            f"[{reach.low:g}, {reach.high:g}] m",
            LIMIT,
        )
    # Scaled before its norm: a direction of 1e200 (or 1e-200) per component is a direction too.
    scale = float(np.max(np.abs(direction)))
    if scale == 0.0:
        raise GoalRejectedError("direction must be a non-zero vector (into the bone)")
    direction = direction / scale
    norm = float(np.linalg.norm(direction))
    for name in ("depth", "feed_rate", "max_thrust"):
        array = _finite(name, getattr(goal, name))
        if array.shape != ():
            raise GoalRejectedError(f"{name} must be one number, got {array.size}")
        value = float(array)
        if value <= 0.0:
            raise InvalidGoalError(f"{name} must be > 0, got {value}")
    limits = JointLimits.from_parameters(params)
    start = _finite("start pose", start)
    if start_tolerance is not None and start.shape == limits.soft_lower.shape:
        tolerance = np.asarray(start_tolerance, dtype=float)
        inside = (start >= limits.soft_lower - tolerance) & (start <= limits.soft_upper + tolerance)
        start = np.where(inside, np.clip(start, limits.soft_lower, limits.soft_upper), start)
    try:
        limits.check_position(start, "start pose")
    except PlanningError as error:
        raise GoalRejectedError(str(error), LIMIT) from error
    # The feed retracts to the task's park value (kept inside its soft limit so that the
    # safety controller never clips the retract's stop) before the arm moves: a feed left out
    # (an aborted goal) comes back along the tool axis first.
    retracted = float(base.park[feed_index])
    park = start.copy()
    park[feed_index] = retracted
    travel = limits.soft_upper[feed_index] - retracted - base.standoff
    if goal.depth > travel:
        depth_mm, travel_mm = compared(goal.depth * 1000, travel * 1000)  # short, and never equal
        raise GoalRejectedError(
            f"depth {depth_mm} mm exceeds the drill_feed travel left after the "
            f"{shown(base.standoff * 1000)} mm standoff: {travel_mm} mm",
            LIMIT,
        )
    safety = params.drilling.safety
    deepest = base.bone.thickness + safety.breakthrough_limit
    if bone_model and goal.depth > deepest + 1e-12:  # no bone model: no far side to check against
        depth_mm, deepest_mm = compared(goal.depth * 1000, deepest * 1000)
        raise GoalRejectedError(
            f"depth {depth_mm} mm is {shown((goal.depth - base.bone.thickness) * 1000)} mm past "
            f"the bone model's far side at {shown(base.bone.thickness * 1000)} mm: at most "
            f"{deepest_mm} mm (tools.drill.breakthrough_limit "
            f"{shown(safety.breakthrough_limit * 1000)} mm past it)",
            LIMIT,
        )
    feed_velocity = float(limits.velocity[feed_index])
    if goal.feed_rate > feed_velocity:
        rate_mm, limit_mm = compared(goal.feed_rate * 1000, feed_velocity * 1000)
        raise GoalRejectedError(
            f"feed_rate {rate_mm} mm/s exceeds the drill_feed velocity limit {limit_mm} mm/s",
            LIMIT,
        )
    # Without a bone model nothing predicts the thrust (NaN: no refusal here); the monitor still
    # enforces max_thrust during the feed.
    predicted = predicted_peak_thrust(base, goal.depth, goal.feed_rate) if bone_model else float("nan")
    if predicted > safety.thrust_limit:
        raise GoalRejectedError(
            f"the bone model predicts {predicted:.1f} N of thrust at {goal.feed_rate * 1000:.2f} mm/s, "
            f"above the robot's thrust limit {safety.thrust_limit:.1f} N (tools.drill.thrust_limit): "
            "lower the feed rate",
            LIMIT,
        )
    if goal.max_thrust > safety.thrust_limit:
        thrust, limit = compared(goal.max_thrust, safety.thrust_limit)
        raise GoalRejectedError(
            f"max_thrust {thrust} N exceeds the robot's thrust limit {limit} N (tools.drill.thrust_limit)",
            LIMIT,
        )
    if predicted > goal.max_thrust:
        raise GoalRejectedError(
            f"the bone model predicts {predicted:.1f} N of thrust at {goal.feed_rate * 1000:.2f} mm/s, "
            f"above max_thrust {goal.max_thrust:.3g} N: lower the feed rate",
            LIMIT,
        )
    try:
        monitor = hole_monitor_settings(params, feed_mass, float(goal.max_thrust), arm_depth=0.0)
    except GoalLimitError as error:
        raise InvalidGoalError(str(error)) from None
    task = replace(
        base,
        entry=entry,
        direction=direction / norm,
        depth=float(goal.depth),
        feed_rate=float(goal.feed_rate),
        park=park,
    )
    try:
        trajectory = plan_incision(task, params, dt, calibration)
        if retracted != start[feed_index]:
            rate = float(limits.velocity[feed_index])
            trajectory = plan_feed(start, retracted, rate, limits, dt, "prepare").then(trajectory)
    except (PlanningError, ValueError) as error:
        raise GoalRejectedError(str(error), LIMIT) from error
    if bone_model:  # armed on the far cortex the plan drills into, or refused (module docstring)
        try:
            monitor = plan_breakthrough(
                task.bone,
                feed_plan(params, trajectory, task, calibration),
                monitor,
                safety.breakthrough_arm_margin,
                safety.breakthrough_limit,
            )
        except BreakthroughPlanError as error:
            raise GoalRejectedError(f"breakthrough: {error}", LIMIT) from None
    return DrillPlan(
        task=task,
        trajectory=trajectory,
        predicted_thrust=predicted,
        monitor=monitor,
        bone_model=bone_model,
        calibration=calibration,
    )


def feed_plan(
    params: RobotParameters,
    trajectory: JointTrajectory,
    task: IncisionTask,
    calibration: GeometricErrors | None = None,
) -> FeedPlan:
    """The planned feed and dwell as safety.breakthrough_plan checks it: the planned tip's depth
    below the entry (FK of the plan, with the kinematics it was planned with), the feed joint's
    commanded velocity and acceleration."""
    feed_index = DrillParameters.feed_index  # the drill feed's column
    feed, dwell = trajectory.phase("feed"), trajectory.phase("dwell")
    dt = trajectory.dt
    window = slice(int(round(feed.start_time / dt)), int(round(dwell.end_time / dt)) + 1)
    q = trajectory.positions[window]
    model = planning_kinematics(params, JointLimits.from_parameters(params), calibration).model
    poses = forward_kinematics(q[:, : len(JOINT_NAMES)], model)  # (N, 4, 4), the feed along tool z
    tip = poses[:, :3, 3] + poses[:, :3, 2] * q[:, feed_index, None]
    return FeedPlan(
        depth=(tip - task.entry) @ task.direction,
        velocity=trajectory.velocities[window, feed_index],
        acceleration=trajectory.accelerations[window, feed_index],
        dt=dt,
    )


def predicted_peak_thrust(task: IncisionTask, depth: float, feed_rate: float) -> float:
    """Largest quasi-static thrust (N) of the task's bone model over 0..depth at `feed_rate` m/s."""
    model = BoneThrust(task.bone)
    samples = np.linspace(0.0, depth, max(int(depth / 1e-5), 2))
    return max(model.target(float(d), feed_rate) for d in samples)


def tip_progress(tip: np.ndarray, entry: np.ndarray, direction: np.ndarray) -> tuple[float, float]:
    """(depth past the entry along the unit `direction`, distance from the axis), m, of tip (3,)."""
    offset = np.asarray(tip, dtype=float) - entry
    depth = float(offset @ direction)
    lateral = offset - depth * direction
    # np.linalg.norm's own sum for a vector, sqrt(x.dot(x)) (the same bits), without its checks:
    # the executor asks at every control period.
    return depth, math.sqrt(lateral.dot(lateral))


def phase_progress(trajectory: JointTrajectory, t: float) -> tuple[str, float]:
    """The phase at time t (s from the plan's start) and the fraction of the plan done (0..1)."""
    duration = max(trajectory.duration, 1e-12)
    t = min(max(t, 0.0), trajectory.duration)
    name = trajectory.phases[-1].name if trajectory.phases else ""
    for phase in trajectory.phases:
        if t < phase.end_time:
            name = phase.name
            break
    return name, t / duration


def plan_cancel_retract(
    q_now: np.ndarray, task: IncisionTask, params: RobotParameters, dt: float, feed_velocity: float = 0.0
) -> JointTrajectory:
    """The feed alone back to the task's retracted feed (its park pose's), from q (6,) moving the
    feed in at `feed_velocity` m/s (>= 0; the plan's commanded state at the cancel): first a stop
    at the feed axis' acceleration limit (phase "cancel_stop", v^2 / (2 a) deeper), then the
    retract (phase "cancel_retract"): the bit leaves the bone along the drilling axis and the tip
    stops the standoff above the entry. Planned from rest while the feed still moves, the drive
    would overshoot into the bone against the new trajectory.

    The stop is as fast as the drilling monitor's own feed stop (safety.feed_stop.FeedStop,
    the feed's acceleration limit tools.drill.feed_acceleration), not the task's gentle
    feed_acceleration: at that one a cancel at 5 mm/s went 1.25 mm deeper before the retract, at
    this one 0.125 mm (test_goal_limits).
    """
    feed_index = DrillParameters.feed_index  # the drill feed's column
    limits = JointLimits.from_parameters(params)
    q = np.asarray(q_now, dtype=float).copy()
    # A pose a hair outside the soft range (tracking error) must not block the way out.
    q = np.clip(q, limits.soft_lower, limits.soft_upper)
    rate = min(task.retract_rate, float(limits.velocity[feed_index]))
    v0 = max(float(feed_velocity), 0.0)
    if v0 <= 0.0:
        return plan_feed(q, float(task.park[feed_index]), rate, limits, dt, "cancel_retract")
    deceleration = float(limits.acceleration[feed_index])
    count = int(np.ceil(v0 / deceleration / dt)) + 1
    t = np.minimum(np.arange(count) * dt, v0 / deceleration)
    positions = np.tile(q, (count, 1))
    velocities = np.zeros((count, q.size))
    accelerations = np.zeros((count, q.size))
    positions[:, feed_index] = q[feed_index] + v0 * t - 0.5 * deceleration * t**2
    velocities[:, feed_index] = v0 - deceleration * t
    accelerations[:-1, feed_index] = -deceleration
    velocities[-1, feed_index] = 0.0
    stop = JointTrajectory(
        dt=dt,
        positions=positions,
        velocities=velocities,
        accelerations=accelerations,
        phases=(Phase("cancel_stop", 0.0, (count - 1) * dt),),
    )
    stopped = np.clip(positions[-1], limits.soft_lower, limits.soft_upper)
    return stop.then(plan_feed(stopped, float(task.park[feed_index]), rate, limits, dt, "cancel_retract"))


def waypoints(trajectory: JointTrajectory, period: float) -> np.ndarray:
    """Indices of the samples sent to the controllers: every `period` s (rounded to samples),
    the last sample always included. The controllers interpolate between them with the samples'
    positions, velocities and accelerations (quintic segments), so a coarser period keeps the
    path; shape (M,)."""
    stride = max(int(round(period / trajectory.dt)), 1)
    last = len(trajectory.positions) - 1
    indices = np.arange(0, last + 1, stride)
    return indices if indices[-1] == last else np.append(indices, last)


#: Phases run at their own speed: the feed at the goal's feed rate, the dwell, and a cancel's stop
#: (it starts at the feed rate: stretching it would make a step in velocity).
GOAL_SPEED_PHASES = frozenset({"feed", "dwell", "cancel_stop"})


def slowed_for_lag(trajectory: JointTrajectory, lag: float, tolerance: np.ndarray) -> JointTrajectory:
    """The trajectory with every phase but the feed and the dwell slowed down (same path, time
    stretched) so that a measurement `lag` s old stays within half the path `tolerance` (6,) of
    each joint (m or rad): a phase whose peak speed v has v * lag > tolerance / 2 is stretched by
    that ratio. Each phase starts and ends at rest, so stretching one keeps the whole continuous.

    Why: the drives on the ROS path follow their commands without feed-forward, and a lag shows
    as a deviation v * lag from the plan, which the goal's path check (procedures.path_check)
    bounds by the path tolerance.
    """
    tolerance = np.asarray(tolerance, dtype=float)
    dt = trajectory.dt
    pieces: list[JointTrajectory] = []
    for phase in trajectory.phases:
        first, last = round(phase.start_time / dt), round(phase.end_time / dt)
        q = trajectory.positions[first : last + 1]
        v = trajectory.velocities[first : last + 1]
        a = trajectory.accelerations[first : last + 1]
        factor = 1.0
        if phase.name not in GOAL_SPEED_PHASES and len(q) > 1:
            factor = max(1.0, float(np.max(np.abs(v).max(axis=0) * lag / (0.5 * tolerance))))
        if factor > 1.0:
            duration = (len(q) - 1) * dt
            count = int(np.ceil(duration * factor / dt)) + 1
            original = np.minimum(np.arange(count) * dt / factor, duration)
            times = np.arange(len(q)) * dt
            q = np.column_stack([np.interp(original, times, q[:, j]) for j in range(q.shape[1])])
            v = np.column_stack([np.interp(original, times, v[:, j]) for j in range(v.shape[1])]) / factor
            a = np.column_stack([np.interp(original, times, a[:, j]) for j in range(a.shape[1])]) / factor**2
        piece = JointTrajectory(
            dt=dt,
            positions=q,
            velocities=v,
            accelerations=a,
            phases=(Phase(phase.name, 0.0, (len(q) - 1) * dt),),
            names=trajectory.names,
        )
        pieces.append(piece)
    result = pieces[0]
    for piece in pieces[1:]:
        result = result.then(piece)
    return result


def path_tolerances(
    controllers: dict, names: tuple[str, ...] = axes_for("drill"), kind: str = "trajectory"
) -> np.ndarray:
    """(len(names),) path tolerances (m or rad) of the joints from a ros2_control controllers
    configuration (config/controllers.yaml as a mapping): each controller's
    constraints.<joint>.<kind> (kind "trajectory": along the path, "goal": at the end; the shipped
    path tolerances are 0, unchecked by the controllers: procedures.path_check checks the path on
    time-aligned states). A joint no controller constrains raises ValueError."""
    found: dict[str, float] = {}
    for section in controllers.values():
        parameters = section.get("ros__parameters", {}) if isinstance(section, dict) else {}
        for joint, constraint in parameters.get("constraints", {}).items():
            if isinstance(constraint, dict) and kind in constraint:
                found[joint] = float(constraint[kind])
    missing = [name for name in names if name not in found]
    if missing:
        raise ValueError(f"no {kind} tolerance for {', '.join(missing)} in the controllers configuration")
    return np.array([found[name] for name in names])


def goal_in_world(goal: DrillGoal, world_from_frame: np.ndarray) -> DrillGoal:
    """`goal` given in another frame (e.g. the registered `patient` frame) expressed in the world:
    its entry point and direction mapped through world_from_frame (4, 4) (quirobot_kinematics.
    registration.map_entry_direction); depth, feed rate and thrust limit are frame-free."""
    from quirobot_kinematics.registration import map_entry_direction

    transform = _finite("world_from_frame", world_from_frame)
    if transform.shape != (4, 4):
        raise InvalidGoalError(f"world_from_frame must be a (4, 4) transform, got shape {transform.shape}")
    entry, direction = map_entry_direction(transform, goal.entry, goal.direction)
    return replace(goal, entry=entry, direction=direction)
