"""Planner: joint-space point-to-point, Cartesian line, drill feed, the incision plan.

References: the closed-form duration of a time-optimal jerk-limited rest-to-rest motion, the
report's closed-form T (FK written out here independently), limits from the parameter file.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from quirobot_control.axes.limits import JointLimits, PlanningError
from quirobot_control.planning.tasks import Kinematics, load_task, plan_incision
from quirobot_control.planning.trajectory import LineLimits, plan_feed, plan_line, plan_point_to_point
from quirobot_description.parameters import DrillParameters, axes_for
from quirobot_kinematics import KinematicModel

#: The drill's commanded axes: the arm's joints, then the feed.
DRILL_AXES = axes_for("drill")
#: The drill feed's column in the drill's axis vectors.
FEED = DrillParameters.feed_index

DT = 1e-3


@pytest.fixture(scope="module")
def limits(parameters):
    return JointLimits.from_parameters(parameters)


@pytest.fixture(scope="module")
def kinematics(parameters):
    return Kinematics(KinematicModel.from_parameters(parameters))


def report_pose(q, l4, l5):
    """The report's closed-form T (tool0 in world), written out independently of the package."""
    d1, d2, d3, t4, t5 = q
    c4, s4, c5, s5 = math.cos(t4), math.sin(t4), math.cos(t5), math.sin(t5)
    return np.array(
        [
            [s4, c4 * s5, c4 * c5, d1 + l5 * c4 * c5],
            [c4, -s4 * s5, -s4 * c5, d2 - l5 * s4 * c5],
            [0.0, c5, -s5, -d3 - l4 - l5 * s5],
            [0.0, 0.0, 0.0, 1.0],
        ]
    )


def assert_continuous_within_limits(trajectory, limits, rel=1e-6):
    """Positions, velocities and accelerations continuous and within every limit."""
    q, v, a = trajectory.positions, trajectory.velocities, trajectory.accelerations
    assert np.all(np.isfinite(q)) and np.all(np.isfinite(v)) and np.all(np.isfinite(a))
    assert np.all(q >= limits.soft_lower - 1e-12) and np.all(q <= limits.soft_upper + 1e-12)
    assert np.all(np.abs(v) <= limits.velocity * (1 + rel))
    assert np.all(np.abs(a) <= limits.acceleration * (1 + rel))
    # Continuity at the sample period: bounded increments (a jump would exceed these).
    assert np.all(np.abs(np.diff(q, axis=0)) <= limits.velocity * DT * (1 + rel) + 1e-12)
    assert np.all(np.abs(np.diff(v, axis=0)) <= limits.acceleration * DT * (1 + rel) + 1e-12)
    assert np.all(np.abs(np.diff(a, axis=0)) <= limits.jerk * DT * (1 + 1e-3) + 1e-9)
    # Velocities are the derivative of positions (trapezoidal rule), accelerations of velocities.
    np.testing.assert_allclose(
        np.diff(q, axis=0), 0.5 * (v[1:] + v[:-1]) * DT, atol=limits.jerk.max() * DT**3
    )
    np.testing.assert_allclose(
        np.diff(v, axis=0), 0.5 * (a[1:] + a[:-1]) * DT, atol=limits.jerk.max() * DT**2
    )


def time_optimal_duration(distance, v, a, j):
    """Closed-form duration of a rest-to-rest jerk-limited motion reaching v and a (long moves)."""
    assert v >= a * a / j and distance >= v * (v / a + a / j)  # the profile reaches both limits
    return distance / v + v / a + a / j


def test_point_to_point_is_synchronized_time_optimal_and_within_limits(parameters, limits):
    start = np.array([0.2, 0.3, 0.4, 1.0, 0.2, 0.004])
    goal = np.array([1.5, 0.6, 0.6, 1.2, 0.4, 0.034])
    trajectory = plan_point_to_point(start, goal, limits, DT)
    np.testing.assert_array_equal(trajectory.positions[0], start)
    np.testing.assert_array_equal(trajectory.positions[-1], goal)
    assert np.all(trajectory.velocities[[0, -1]] == 0.0)
    assert_continuous_within_limits(trajectory, limits)
    # The slowest joint sets the duration: the largest single-joint time-optimal duration.
    expected = max(
        time_optimal_duration(
            abs(goal[j] - start[j]), limits.velocity[j], limits.acceleration[j], limits.jerk[j]
        )
        for j in range(len(DRILL_AXES))
    )
    assert trajectory.duration == pytest.approx(expected, abs=DT)
    # Synchronized: every joint moves during the whole motion and arrives at the same time.
    moving = np.abs(trajectory.positions - goal) > 1e-12
    for j in range(len(DRILL_AXES)):
        if start[j] != goal[j]:
            assert moving[:, j].nonzero()[0].max() >= len(trajectory.positions) - 3


def test_point_to_point_refuses_targets_beyond_the_soft_limits(limits):
    start = np.array([0.5, 0.5, 0.5, 1.0, 0.2, 0.004])
    with pytest.raises(PlanningError, match="gantry_y .* above its soft limit"):
        plan_point_to_point(start, [0.5, 1.995, 0.5, 1.0, 0.2, 0.0], limits, DT)
    with pytest.raises(PlanningError, match="wrist_pitch .* below its soft limit"):
        plan_point_to_point(start, [0.5, 0.5, 0.5, 1.0, -1.4, 0.0], limits, DT)
    with pytest.raises(PlanningError, match="drill_feed is nan"):
        plan_point_to_point(start, [0.5, 0.5, 0.5, 1.0, 0.2, math.nan], limits, DT)


def test_plans_never_outrun_the_safety_controller(parameters, limits):
    """Arriving at a soft limit at full deceleration would be clipped by the safety controller
    (v <= k_position * distance to the limit): refused by name."""
    start = np.array([0.5, 0.5, 0.5, 1.0, 0.2, 0.004])
    goal = start.copy()
    goal[5] = limits.soft_upper[5]
    with pytest.raises(PlanningError, match="drill_feed runs into its soft upper limit"):
        plan_point_to_point(start, goal, limits, DT)
    # Stopping a / (2 k^2) short of it is within the envelope (a = 0.1 m/s^2, k = 5 /s: 2 mm).
    a, k = limits.acceleration[5], limits.k_position[5]
    goal[5] = limits.soft_upper[5] - a / (2 * k * k)
    trajectory = plan_point_to_point(start, goal, limits, DT)
    v, q = trajectory.velocities[:, 5], trajectory.positions[:, 5]
    assert np.all(v <= k * (limits.soft_upper[5] - q) + 1e-9)


def test_cartesian_line_is_straight_at_constant_orientation_and_within_limits(parameters, limits, kinematics):
    start = np.array([0.6, 0.5, 0.9, math.pi / 4, math.pi / 4, 0.004])
    end = np.array([1.1, 1.0, -1.55])
    trajectory = plan_line(
        start,
        end,
        limits,
        LineLimits(0.5, 5.0, 100.0),
        DT,
        forward=kinematics.forward,
        inverse=kinematics.inverse,
    )
    assert_continuous_within_limits(trajectory, limits)
    T0 = report_pose(start[:5], parameters.l4, parameters.l5)
    p0 = T0[:3, 3]
    direction = (end - p0) / np.linalg.norm(end - p0)
    for q in trajectory.positions:
        T = report_pose(q[:5], parameters.l4, parameters.l5)
        offset = T[:3, 3] - p0
        lateral = offset - (offset @ direction) * direction
        assert np.linalg.norm(lateral) < 1e-9  # straight to 1e-9 before control
        np.testing.assert_allclose(T[:3, :3], T0[:3, :3], atol=1e-9)  # orientation held
    np.testing.assert_allclose(
        report_pose(trajectory.positions[-1][:5], parameters.l4, parameters.l5)[:3, 3], end, atol=1e-9
    )


@pytest.mark.parametrize(
    ("start", "offset"),
    [
        ((0.6, 0.5, 0.9, math.pi / 4, math.pi / 4, 0.004), (0.5, 0.5, -0.3)),
        ((0.5, 0.5, 0.9, 0.3, 1.0, 0.004), (1.0, 0.0, 0.0)),  # slowed to the joint limits
    ],
)
def test_cartesian_line_with_inverse_at_is_the_same_to_the_bit(limits, kinematics, start, offset):
    """kin.inverse_at (the approach's wrist worked out once) gives the trajectory `inverse` gives."""
    start = np.array(start)
    end = kinematics.forward(start[:5])[:3, 3] + np.array(offset)
    line = LineLimits(0.5, 5.0, 100.0)
    plain = plan_line(start, end, limits, line, DT, forward=kinematics.forward, inverse=kinematics.inverse)
    fast = kinematics.line(start, end, limits, line, DT, "line")  # with inverse_at
    for name in ("positions", "velocities", "accelerations"):
        assert getattr(fast, name).tobytes() == getattr(plain, name).tobytes(), name


def test_cartesian_line_slows_down_to_the_joint_limits(limits, kinematics):
    start = np.array([0.5, 0.5, 0.9, 0.3, 1.0, 0.004])
    T0 = kinematics.forward(start[:5])
    end = T0[:3, 3] + np.array([1.0, 0.0, 0.0])
    fast = LineLimits(speed=5.0, acceleration=100.0, jerk=5000.0)  # far beyond the joints
    trajectory = plan_line(
        start, end, limits, fast, DT, forward=kinematics.forward, inverse=kinematics.inverse
    )
    assert_continuous_within_limits(trajectory, limits)
    # Along x only gantry_x moves, so the slowed path runs at its velocity limit.
    assert np.max(np.abs(trajectory.velocities[:, 0])) == pytest.approx(limits.velocity[0], rel=1e-3)


def test_cartesian_line_crossing_a_joint_limit_is_refused_by_name(limits, kinematics):
    start = np.array([0.5, 0.5, 0.9, 0.3, 1.0, 0.004])
    T0 = kinematics.forward(start[:5])
    with pytest.raises(PlanningError, match="gantry_z"):
        plan_line(
            start,
            T0[:3, 3] + np.array([0.0, 0.0, 1.5]),  # up through the top of the z travel
            limits,
            LineLimits(0.5, 5.0, 100.0),
            DT,
            forward=kinematics.forward,
            inverse=kinematics.inverse,
        )


def test_cartesian_line_crossing_a_singularity_is_refused_by_name(limits, kinematics):
    """An IK whose wrist branch flips half-way (what crossing a singularity does) is refused."""
    start = np.array([0.5, 0.5, 0.9, 0.3, 1.0, 0.004])
    T0 = kinematics.forward(start[:5])
    end = T0[:3, 3] + np.array([0.2, 0.0, 0.0])

    def flipping_inverse(position, approach, seed):
        q = kinematics.inverse(position, approach, start[:5]).copy()
        if position[0] > T0[0, 3] + 0.1:
            q[3] += math.pi  # the other wrist family: same approach, same tool position
            q[4] = math.pi - q[4]
        return q

    with pytest.raises(PlanningError, match="singularity .* wrist_yaw"):
        plan_line(
            start,
            end,
            limits,
            LineLimits(0.5, 5.0, 100.0),
            DT,
            forward=kinematics.forward,
            inverse=flipping_inverse,
        )


def test_feed_moves_only_the_feed_at_the_feed_rate_with_smooth_start_and_stop(limits):
    start = np.array([0.8, 0.8, 1.0, 1.0, 0.5, 0.002])
    trajectory = plan_feed(start, 0.03, 0.0015, limits, DT)
    assert_continuous_within_limits(trajectory, limits)
    np.testing.assert_array_equal(
        trajectory.positions[:, :FEED], np.tile(start[:FEED], (len(trajectory.positions), 1))
    )
    feed_velocity = trajectory.velocities[:, FEED]
    assert feed_velocity.max() == pytest.approx(0.0015, rel=1e-9)
    assert feed_velocity[0] == 0.0 and feed_velocity[-1] == 0.0
    assert trajectory.positions[-1, FEED] == 0.03
    # Duration: the time-optimal profile (distance / rate plus the acceleration ramps).
    v, a, j = 0.0015, limits.acceleration[FEED], limits.jerk[FEED]
    assert trajectory.duration == pytest.approx(
        0.028 / v + v / a + a / j if v >= a * a / j else 0.028 / v + 2 * math.sqrt(v / j), abs=DT
    )
    with pytest.raises(PlanningError, match="exceeds the drill_feed velocity limit"):
        plan_feed(start, 0.03, 1.0, limits, DT)
    # A gentler start and stop may be asked for, not a harsher one.
    gentle = plan_feed(start, 0.03, 0.0015, limits, DT, acceleration=0.01, jerk=0.05)
    assert np.max(np.abs(gentle.accelerations[:, FEED])) <= 0.01 * (1 + 1e-6)
    assert np.max(np.abs(np.diff(gentle.accelerations[:, FEED]))) <= 0.05 * DT * (1 + 1e-6)
    assert gentle.duration > trajectory.duration
    with pytest.raises(PlanningError, match=r"feed acceleration must be in \(0, 0.1\]"):
        plan_feed(start, 0.03, 0.0015, limits, DT, acceleration=1.0)
    with pytest.raises(PlanningError, match="drill_feed .* above its soft limit"):
        plan_feed(start, 0.5, 0.001, limits, DT)


def test_incision_plan_drills_along_the_axis_to_depth(parameters, limits, kinematics):
    task = load_task("incision")
    trajectory = plan_incision(task, parameters, DT)
    names = [p.name for p in trajectory.phases]
    assert names == [
        "start",
        "approach",
        "align",
        "settle",
        "feed",
        "dwell",
        "retract",
        "withdraw",
        "park",
        "end",
    ]
    assert_continuous_within_limits(trajectory, limits)
    feed = trajectory.phase("feed")
    window = (trajectory.times >= feed.start_time - 1e-9) & (trajectory.times <= feed.end_time + 1e-9)
    arm = trajectory.positions[window, :FEED]
    np.testing.assert_array_equal(arm, np.tile(arm[0], (len(arm), 1)))  # the arm holds during the feed
    tips = np.array([kinematics.tip(q) for q in trajectory.positions[window]])
    offset = tips - task.entry
    depth = offset @ task.direction
    lateral = np.linalg.norm(offset - depth[:, None] * task.direction, axis=1)
    assert lateral.max() < 1e-9
    assert depth[0] == pytest.approx(-task.standoff, abs=1e-9)
    assert depth[-1] == pytest.approx(task.depth, abs=1e-9)
    assert np.all(np.diff(depth) >= -1e-12)  # never backs out while feeding
    assert np.max(trajectory.velocities[window, FEED]) == pytest.approx(task.feed_rate, rel=1e-9)
    np.testing.assert_allclose(trajectory.positions[0], task.park)
    np.testing.assert_allclose(trajectory.positions[-1], task.park)
