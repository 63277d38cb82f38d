"""Trajectory planning: joint-space point-to-point, Cartesian straight lines, the drill feed.

Every planner returns a `JointTrajectory` sampled at the control period over the commanded axes
of its `JointLimits` (the mounted tool's, `axes_for(tool)`: the five arm joints first, then the
tool's own, ``drill_feed`` for the drill): positions, velocities and accelerations that are
continuous and within each joint's limits. Limits come from the parameter file
(`JointLimits.from_parameters`). A request the arm cannot follow (a target outside the soft
limits, a path crossing a limit or a singularity) raises `PlanningError` naming the joint, the
place on the path and the amount.

- `plan_point_to_point`: time-optimal, jerk-limited, all joints synchronized (ruckig).
- `plan_line`: the report's `planifica` done right: tool0 on a straight line at constant
  orientation, a jerk-limited velocity profile along the path (ruckig on the arc length),
  inverse kinematics at every sample, joint velocities and accelerations from the chain rule,
  slowed down uniformly until every joint is within its velocity, acceleration and jerk limits.
- `plan_feed`: the drill feed axis alone at a set feed rate, smooth start and stop.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from ruckig import InputParameter, Result, Ruckig, Trajectory

from quirobot_control.axes.limits import JointLimits, PlanningError
from quirobot_description.parameters import JOINT_NAMES, DrillParameters, axes_for

#: Relative slack allowed on limit checks of sampled profiles (ruckig is exact to ~1e-12).
_LIMIT_TOLERANCE = 1e-6


@dataclass(frozen=True)
class Phase:
    """A named time interval of a trajectory, seconds from its start."""

    name: str
    start_time: float
    end_time: float


@dataclass(frozen=True)
class CartesianPath:
    """The planned tool0 path of a Cartesian segment: times (N,), positions (N, 3) m."""

    times: np.ndarray
    positions: np.ndarray
    start: np.ndarray  # (3,) m
    end: np.ndarray  # (3,) m


@dataclass(frozen=True)
class JointTrajectory:
    """Samples at a fixed period `dt` (s): times (N,), positions/velocities/accelerations (N, n) of
    the axes `names` (default the drill's, axes_for("drill"): n = 6)."""

    dt: float
    positions: np.ndarray
    velocities: np.ndarray
    accelerations: np.ndarray
    phases: tuple[Phase, ...] = ()
    paths: tuple[CartesianPath, ...] = field(default=())
    names: tuple[str, ...] = axes_for("drill")

    @property
    def times(self) -> np.ndarray:
        return np.arange(len(self.positions)) * self.dt

    @property
    def duration(self) -> float:
        return (len(self.positions) - 1) * self.dt

    def sample(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(q, qd, qdd) at time t (s): the sample at or before t; held at the final sample after."""
        index = int(min(max(math.floor(t / self.dt + 1e-9), 0), len(self.positions) - 1))
        return self.positions[index], self.velocities[index], self.accelerations[index]

    def phase(self, name: str) -> Phase:
        for phase in self.phases:
            if phase.name == name:
                return phase
        raise KeyError(f"no phase {name!r}; phases are {', '.join(p.name for p in self.phases)}")

    def then(self, other: JointTrajectory) -> JointTrajectory:
        """This trajectory followed by `other`, which must start where this one ends (at rest)."""
        if not math.isclose(self.dt, other.dt):
            raise PlanningError(f"cannot join trajectories sampled at {self.dt} s and {other.dt} s")
        gap = np.abs(self.positions[-1] - other.positions[0])
        if np.any(gap > 1e-9):
            joint = self.names[int(np.argmax(gap))]
            raise PlanningError(f"cannot join trajectories: joint {joint} jumps by {gap.max():.3g}")
        offset = len(self.positions) - 1
        shift = offset * self.dt
        phases = self.phases + tuple(
            Phase(p.name, p.start_time + shift, p.end_time + shift) for p in other.phases
        )
        paths = self.paths + tuple(
            CartesianPath(p.times + shift, p.positions, p.start, p.end) for p in other.paths
        )
        return JointTrajectory(
            dt=self.dt,
            positions=np.vstack([self.positions, other.positions[1:]]),
            velocities=np.vstack([self.velocities, other.velocities[1:]]),
            accelerations=np.vstack([self.accelerations, other.accelerations[1:]]),
            phases=phases,
            paths=paths,
            names=self.names,
        )


def hold(q: np.ndarray, duration: float, dt: float, name: str = "hold") -> JointTrajectory:
    """Stay at q (6,) for `duration` seconds (rounded up to whole periods)."""
    q = np.asarray(q, dtype=float)
    if not math.isfinite(duration) or duration < 0.0:
        raise PlanningError(f"hold duration must be a finite number >= 0 s, got {duration}")
    count = max(int(math.ceil(duration / dt - 1e-9)), 0) + 1
    zeros = np.zeros((count, q.size))
    return JointTrajectory(
        dt=dt,
        positions=np.tile(q, (count, 1)),
        velocities=zeros,
        accelerations=zeros.copy(),
        phases=(Phase(name, 0.0, (count - 1) * dt),),
    )


def rest_to_rest_profile(
    start: np.ndarray,
    goal: np.ndarray,
    velocity: np.ndarray,
    acceleration: np.ndarray,
    jerk: np.ndarray,
    dt: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Time-optimal synchronized rest-to-rest profile (ruckig) sampled every dt; (N, dofs) arrays."""
    dofs = start.size
    inp = InputParameter(dofs)
    inp.current_position = start.tolist()
    inp.current_velocity = [0.0] * dofs
    inp.current_acceleration = [0.0] * dofs
    inp.target_position = goal.tolist()
    inp.target_velocity = [0.0] * dofs
    inp.target_acceleration = [0.0] * dofs
    inp.max_velocity = velocity.tolist()
    inp.max_acceleration = acceleration.tolist()
    inp.max_jerk = jerk.tolist()
    trajectory = Trajectory(dofs)
    result = Ruckig(dofs).calculate(inp, trajectory)
    if result not in (Result.Working, Result.Finished):
        raise PlanningError(f"ruckig could not plan from {start.tolist()} to {goal.tolist()}: {result}")
    # Whole number of periods; the final sample is exactly the goal, at rest.
    count = int(math.ceil(trajectory.duration / dt - 1e-9)) + 1
    times = np.minimum(np.arange(count) * dt, trajectory.duration)
    positions = np.empty((count, dofs))
    velocities = np.empty((count, dofs))
    accelerations = np.empty((count, dofs))
    for k, t in enumerate(times):
        p, v, a = trajectory.at_time(float(t))
        positions[k], velocities[k], accelerations[k] = p, v, a
    positions[-1] = goal
    velocities[-1] = 0.0
    accelerations[-1] = 0.0
    return positions, velocities, accelerations


def plan_point_to_point(
    q_start: Sequence[float], q_goal: Sequence[float], limits: JointLimits, dt: float, name: str = "move"
) -> JointTrajectory:
    """Time-optimal jerk-limited joint-space move, every axis synchronized to finish together.

    q_start, q_goal: (n,) in `limits.names` order (m, rad). Both must lie in the soft range.
    """
    start = np.asarray(q_start, dtype=float)
    goal = np.asarray(q_goal, dtype=float)
    limits.check_position(start, f"{name}: start")
    limits.check_position(goal, f"{name}: goal")
    positions, velocities, accelerations = rest_to_rest_profile(
        start, goal, limits.velocity, limits.acceleration, limits.jerk, dt
    )
    limits.check_envelope(positions, velocities, dt, name)
    return JointTrajectory(
        dt=dt,
        positions=positions,
        velocities=velocities,
        accelerations=accelerations,
        phases=(Phase(name, 0.0, (len(positions) - 1) * dt),),
        names=limits.names,
    )


def plan_feed(
    q_start: Sequence[float],
    feed_goal: float,
    feed_rate: float,
    limits: JointLimits,
    dt: float,
    name: str = "feed",
    *,
    acceleration: float | None = None,
    jerk: float | None = None,
) -> JointTrajectory:
    """Move only the drill feed to `feed_goal` (m) at most `feed_rate` (m/s); the arm holds still.

    Start and stop are smooth: jerk-limited by `acceleration` (m/s^2) and `jerk` (m/s^3), by
    default the feed axis' limits (a gentler value may be asked, not a harsher one). The feed is
    the drill's feed axis (DrillParameters.feed_joint) among `limits.names`.
    """
    start = np.asarray(q_start, dtype=float)
    feed = _feed_column(limits, name)
    if not math.isfinite(feed_rate) or feed_rate <= 0.0:
        raise PlanningError(f"{name}: feed rate must be a finite number > 0 m/s, got {feed_rate}")
    if feed_rate > limits.velocity[feed] * (1 + 1e-12):
        raise PlanningError(
            f"{name}: feed rate {feed_rate} m/s exceeds the drill_feed velocity limit "
            f"{limits.velocity[feed]} m/s"
        )
    goal = start.copy()
    goal[feed] = feed_goal
    limits.check_position(start, f"{name}: start")
    limits.check_position(goal, f"{name}: goal")
    bounds = {}
    for label, value, limit in (
        ("acceleration", acceleration, limits.acceleration[feed]),
        ("jerk", jerk, limits.jerk[feed]),
    ):
        value = limit if value is None else value
        if not math.isfinite(value) or value <= 0.0 or value > limit * (1 + 1e-12):
            raise PlanningError(
                f"{name}: feed {label} must be in (0, {limit}] (drill_feed limit), got {value}"
            )
        bounds[label] = value
    p, v, a = rest_to_rest_profile(
        start[feed : feed + 1],
        goal[feed : feed + 1],
        np.array([feed_rate]),
        np.array([bounds["acceleration"]]),
        np.array([bounds["jerk"]]),
        dt,
    )
    count = len(p)
    positions = np.tile(start, (count, 1))
    velocities = np.zeros((count, start.size))
    accelerations = np.zeros((count, start.size))
    positions[:, feed] = p[:, 0]
    velocities[:, feed] = v[:, 0]
    accelerations[:, feed] = a[:, 0]
    limits.check_envelope(positions, velocities, dt, name)
    return JointTrajectory(
        dt=dt,
        positions=positions,
        velocities=velocities,
        accelerations=accelerations,
        phases=(Phase(name, 0.0, (count - 1) * dt),),
        names=limits.names,
    )


def _feed_column(limits: JointLimits, name: str) -> int:
    """The drill feed's index among the planned axes; PlanningError if the tool has no feed."""
    if DrillParameters.feed_joint not in limits.names:
        raise PlanningError(f"{name}: no drill feed among the axes {', '.join(limits.names)}")
    return limits.names.index(DrillParameters.feed_joint)


@dataclass(frozen=True)
class LineLimits:
    """Cartesian limits of the tool0 path: speed m/s, acceleration m/s^2, jerk m/s^3 along the path."""

    speed: float
    acceleration: float
    jerk: float

    def __post_init__(self) -> None:
        for label, value in (("speed", self.speed), ("acceleration", self.acceleration), ("jerk", self.jerk)):
            if not math.isfinite(value) or value <= 0.0:
                raise PlanningError(f"line {label} limit must be a finite number > 0, got {value}")


#: inverse(position (3,), approach (3,), seed (5,)) -> q (5,); raises ValueError when unreachable.
InverseKinematics = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
#: forward(q (5,)) -> (4, 4) pose of tool0 in world.
ForwardKinematics = Callable[[np.ndarray], np.ndarray]
#: inverse_at(approach (3,)) -> ik(position (3,), seed (5,)): InverseKinematics at one approach.
ApproachInverseKinematics = Callable[[np.ndarray], Callable[[np.ndarray, np.ndarray], np.ndarray]]


def plan_line(
    q_start: Sequence[float],
    end_position: Sequence[float],
    limits: JointLimits,
    line: LineLimits,
    dt: float,
    *,
    forward: ForwardKinematics,
    inverse: InverseKinematics,
    inverse_at: ApproachInverseKinematics | None = None,
    name: str = "line",
    max_refinements: int = 8,
) -> JointTrajectory:
    """tool0 on the straight line from its pose at q_start to `end_position` (3,), orientation held.

    The arc length s(t) follows a time-optimal jerk-limited rest-to-rest profile within `line`;
    q(s) is the inverse kinematics at every sample (seeded by the previous one); the joint
    velocity is q'(s)*s_dot and the acceleration q''(s)*s_dot^2 + q'(s)*s_ddot, with q'(s), q''(s)
    by central differences of the IK. When a joint would exceed its velocity, acceleration or jerk
    limit, the whole path is slowed down (the path limits scaled by the needed ratio) and
    re-planned. A path leaving the soft range, an unreachable sample, or an IK branch jump (the
    path crossing a singularity) raises PlanningError naming the joint and the arc length.
    `inverse_at`: `inverse` at the line's one approach, if the caller has a faster form of it
    (the same numbers: thousands of samples a line).
    """
    start = np.asarray(q_start, dtype=float)
    limits.check_position(start, f"{name}: start")
    arm = slice(0, len(JOINT_NAMES))  # the arm's joints come first, whatever the tool
    pose = np.asarray(forward(start[arm]), dtype=float)
    p0 = pose[:3, 3].copy()
    approach = pose[:3, 2].copy()
    p1 = np.asarray(end_position, dtype=float)
    if p1.shape != (3,) or not np.all(np.isfinite(p1)):
        raise PlanningError(f"{name}: end position must be 3 finite numbers, got {end_position!r}")
    length = float(np.linalg.norm(p1 - p0))
    if length < 1e-12:
        return hold(start, 0.0, dt, name)
    direction = (p1 - p0) / length
    if inverse_at is not None:
        solve = inverse_at(approach)
    else:

        def solve(position: np.ndarray, seed: np.ndarray) -> np.ndarray:
            return inverse(position, approach, seed)

    def ik(s: float, seed: np.ndarray) -> np.ndarray:
        try:
            return np.asarray(solve(p0 + s * direction, seed), dtype=float)
        except ValueError as error:
            raise PlanningError(
                f"{name}: unreachable at {s * 1000:.3f} mm along the line: {error}"
            ) from error

    # Geometry first (independent of timing): q(s), q'(s), q''(s) on a fine arc-length grid.
    samples = max(int(math.ceil(length / 1e-4)), 8) + 1
    s_grid = np.linspace(0.0, length, samples)
    h = min(1e-4, length / 4.0) * 0.5
    q_grid = np.empty((samples, len(JOINT_NAMES)))
    seed = start[arm]
    for k, s in enumerate(s_grid):
        q_grid[k] = ik(s, seed)
        if k == 0 and np.any(np.abs(q_grid[0] - seed) > 1e-9):
            joint = JOINT_NAMES[int(np.argmax(np.abs(q_grid[0] - seed)))]
            raise PlanningError(f"{name}: the inverse kinematics of the start pose changes joint {joint}")
        seed = q_grid[k]
    _check_path(q_grid, s_grid, limits, name)
    q_prime = np.empty_like(q_grid)
    q_second = np.empty_like(q_grid)
    for k, s in enumerate(s_grid):
        qm, qp = ik(s - h, q_grid[k]), ik(s + h, q_grid[k])
        q_prime[k] = (qp - qm) / (2 * h)
        q_second[k] = (qp - 2 * q_grid[k] + qm) / (h * h)

    speed, acceleration, jerk = line.speed, line.acceleration, line.jerk
    peak_prime = np.max(np.abs(q_prime), axis=0)
    with np.errstate(divide="ignore"):
        speed = min(speed, float(np.min(limits.velocity[arm] / peak_prime)))
    for _ in range(max_refinements):
        s_t, sd_t, sdd_t = rest_to_rest_profile(
            np.array([0.0]),
            np.array([length]),
            np.array([speed]),
            np.array([acceleration]),
            np.array([jerk]),
            dt,
        )
        s_t, sd_t, sdd_t = s_t[:, 0], sd_t[:, 0], sdd_t[:, 0]
        s_t = np.clip(s_t, 0.0, length)
        q_t = np.empty((len(s_t), len(JOINT_NAMES)))
        index = np.minimum(np.searchsorted(s_grid, s_t), samples - 1)
        for k, s in enumerate(s_t):
            q_t[k] = ik(s, q_grid[index[k]])
        qp_t = _interpolate(s_grid, q_prime, s_t)
        qs_t = _interpolate(s_grid, q_second, s_t)
        qd_t = qp_t * sd_t[:, None]
        qdd_t = qs_t * (sd_t**2)[:, None] + qp_t * sdd_t[:, None]
        qd_t[[0, -1]] = 0.0
        qdd_t[[0, -1]] = 0.0
        jerk_t = np.abs(np.diff(qdd_t, axis=0)) / dt
        velocity_ratio = float(np.max(np.max(np.abs(qd_t), axis=0) / limits.velocity[arm]))
        acceleration_ratio = float(np.max(np.max(np.abs(qdd_t), axis=0) / limits.acceleration[arm]))
        jerk_ratio = float(np.max(np.max(jerk_t, axis=0) / limits.jerk[arm])) if len(jerk_t) else 0.0
        if max(velocity_ratio, acceleration_ratio, jerk_ratio) <= 1.0 + _LIMIT_TOLERANCE:
            break
        # Slow down: lower each path limit by the ratio its joint-space image exceeds the limits
        # (slightly more, so that the curvature terms q''(s)*s_dot^2 converge too).
        if velocity_ratio > 1.0:
            speed /= velocity_ratio * (1.0 + 1e-3)
        if acceleration_ratio > 1.0:
            acceleration /= acceleration_ratio * (1.0 + 1e-3)
        if jerk_ratio > 1.0:
            jerk /= jerk_ratio * (1.0 + 1e-3)
    else:
        raise PlanningError(f"{name}: could not bring the path within the joint limits after slowing down")
    count = len(s_t)
    positions = np.tile(start, (count, 1))
    velocities = np.zeros((count, start.size))
    accelerations = np.zeros((count, start.size))
    positions[:, arm] = q_t
    velocities[:, arm] = qd_t
    accelerations[:, arm] = qdd_t
    limits.check_envelope(positions, velocities, dt, name)
    times = np.arange(count) * dt
    path = CartesianPath(times=times, positions=p0 + s_t[:, None] * direction, start=p0, end=p1)
    return JointTrajectory(
        dt=dt,
        positions=positions,
        velocities=velocities,
        accelerations=accelerations,
        phases=(Phase(name, 0.0, (count - 1) * dt),),
        paths=(path,),
        names=limits.names,
    )


def _interpolate(x: np.ndarray, y: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Column-wise linear interpolation of y (N, k) sampled at x (N,) to `at` (M,)."""
    return np.stack([np.interp(at, x, y[:, j]) for j in range(y.shape[1])], axis=1)


def _check_path(q_grid: np.ndarray, s_grid: np.ndarray, limits: JointLimits, name: str) -> None:
    """Refuse a path leaving the soft range or jumping between IK branches (a singularity)."""
    arm = slice(0, len(JOINT_NAMES))
    lower, upper = limits.soft_lower[arm], limits.soft_upper[arm]
    for j, joint in enumerate(JOINT_NAMES):
        below = np.nonzero(q_grid[:, j] < lower[j] - 1e-12)[0]
        above = np.nonzero(q_grid[:, j] > upper[j] + 1e-12)[0]
        if below.size or above.size:
            k = int(below[0] if below.size and (not above.size or below[0] < above[0]) else above[0])
            bound = lower[j] if q_grid[k, j] < lower[j] else upper[j]
            raise PlanningError(
                f"{name}: the line crosses the soft limit {bound:.6g} of joint {joint} at "
                f"{s_grid[k] * 1000:.3f} mm along it (joint value {q_grid[k, j]:.6g})"
            )
    if len(s_grid) < 3:
        return
    # A smooth path moves every joint by about the same amount per grid step; a jump of many
    # times the typical step means the IK switched branch: the path crosses a singularity.
    steps = np.abs(np.diff(q_grid, axis=0))
    typical = np.median(steps, axis=0)
    ds = s_grid[1] - s_grid[0]
    for j, joint in enumerate(JOINT_NAMES):
        allowed = max(20.0 * typical[j], 1e-3 * ds * 1e3)  # at least 1 mm/m or 1 mrad/m of path
        jumps = np.nonzero(steps[:, j] > allowed)[0]
        if jumps.size:
            k = int(jumps[0])
            raise PlanningError(
                f"{name}: the line crosses a singularity at {s_grid[k] * 1000:.3f} mm along it: joint "
                f"{joint} jumps by {steps[k, j]:.4g} within {ds * 1000:.3f} mm of path"
            )
