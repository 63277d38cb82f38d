"""The DrillHole action's core: goal checks, the plan, progress (ROS-free; the cancel policy is in
test_cancel_policy.py)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from shipped_control import FEED_MASS

from quirobot_control.axes.limits import JointLimits
from quirobot_control.planning.drill_hole import (
    DrillGoal,
    GoalRejectedError,
    path_tolerances,
    phase_progress,
    plan_cancel_retract,
    plan_drill_hole,
    slowed_for_lag,
    tip_progress,
    waypoints,
)
from quirobot_control.planning.tasks import Kinematics, load_task
from quirobot_description import robot_parameters
from quirobot_description.parameters import DrillParameters
from quirobot_kinematics import KinematicModel

#: The drill feed's column in the drill's axis vectors.
FEED = DrillParameters.feed_index

DT = 0.002  # s: coarser than the control period, the checks do not depend on it


@pytest.fixture(scope="module")
def params():
    return robot_parameters()


@pytest.fixture(scope="module")
def incision():
    return load_task("incision")


@pytest.fixture(scope="module")
def shipped(incision):
    return DrillGoal(incision.entry, incision.direction, incision.depth, incision.feed_rate, 60.0)


@pytest.fixture(scope="module")
def plan(shipped, incision, params):
    return plan_drill_hole(shipped, incision.park, params, DT, feed_mass=FEED_MASS)


def test_shipped_incision_plans_every_phase_and_reaches_depth_on_the_axis(plan, incision, params):
    names = [phase.name for phase in plan.trajectory.phases]
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
    kin = Kinematics(KinematicModel.from_parameters(params))
    at_depth = plan.trajectory.sample(plan.trajectory.phase("dwell").start_time)[0]
    depth, lateral = tip_progress(kin.tip(at_depth), incision.entry, incision.direction)
    assert depth == pytest.approx(incision.depth, abs=1e-6)
    assert lateral < 1e-6
    # It starts at the start pose and ends there at rest, after the withdraw up the axis.
    np.testing.assert_allclose(plan.trajectory.positions[0], incision.park, atol=1e-12)
    np.testing.assert_allclose(plan.trajectory.positions[-1], incision.park, atol=1e-12)
    assert np.all(plan.trajectory.velocities[-1] == 0.0)
    withdrawn = plan.trajectory.sample(plan.trajectory.phase("withdraw").end_time)[0]
    depth, lateral = tip_progress(kin.tip(withdrawn), incision.entry, incision.direction)
    assert depth < -incision.standoff and lateral < 1e-6


def test_direction_of_any_length_is_normalised(shipped, incision, params):
    scaled = replace(shipped, direction=3.0 * incision.direction)
    plan = plan_drill_hole(scaled, incision.park, params, DT, feed_mass=FEED_MASS)
    np.testing.assert_allclose(plan.task.direction, incision.direction, atol=1e-12)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"entry": np.array([5.0, 1.0, -1.35])}, "gantry_x"),
        ({"entry": np.array([1.0, 1.0, 0.5])}, "gantry_z"),
        ({"depth": 0.2}, "drill_feed travel"),
        ({"feed_rate": 0.05}, "drill_feed velocity limit"),
        ({"max_thrust": 1e4}, "the robot's thrust limit 80 N"),
        ({"max_thrust": 5.0}, "predicts"),
        ({"depth": float("nan")}, "depth must be finite"),
        ({"entry": np.array([1.0, float("inf"), -1.35])}, "entry must be finite"),
        ({"direction": np.zeros(3)}, "non-zero"),
        ({"feed_rate": -0.001}, "feed_rate must be > 0"),
    ],
)
def test_goal_rejected_with_the_reason(shipped, incision, params, change, words):
    with pytest.raises(GoalRejectedError, match=words):
        plan_drill_hole(replace(shipped, **change), incision.park, params, DT, feed_mass=FEED_MASS)


def test_start_outside_the_soft_limits_is_rejected_naming_the_joint(shipped, incision, params):
    start = incision.park.copy()
    start[0] = -1.0
    with pytest.raises(GoalRejectedError, match="gantry_x"):
        plan_drill_hole(shipped, start, params, DT, feed_mass=FEED_MASS)


def test_a_measured_start_just_outside_a_soft_limit_is_at_it(shipped, incision, params):
    """drive_node's feed held at its soft limit read 15 nm below it and the goal was rejected (seen
    in the ROS tier): within the controllers' goal tolerance a measured joint is at the limit."""
    import yaml

    from quirobot_description.data_files import find_data_file

    controllers = yaml.safe_load(find_data_file("config/controllers.yaml").read_text())
    goal_tolerance = path_tolerances(controllers, kind="goal")
    soft_lower = JointLimits.from_parameters(params).soft_lower
    start = incision.park.copy()
    start[FEED] = soft_lower[FEED] - 1.53e-8
    with pytest.raises(GoalRejectedError, match="drill_feed"):
        plan_drill_hole(shipped, start, params, DT, feed_mass=FEED_MASS)
    plan = plan_drill_hole(shipped, start, params, DT, start_tolerance=goal_tolerance, feed_mass=FEED_MASS)
    assert plan.trajectory.positions[0, FEED] >= soft_lower[FEED]
    start[FEED] = soft_lower[FEED] - 2 * goal_tolerance[FEED]
    with pytest.raises(GoalRejectedError, match="drill_feed"):
        plan_drill_hole(shipped, start, params, DT, start_tolerance=goal_tolerance, feed_mass=FEED_MASS)


def test_predicted_thrust_bounds_the_bone_model(plan, incision):
    bone = incision.bone
    rate = (incision.feed_rate / bone.reference_feed_rate) ** bone.feed_rate_exponent
    cortical = bone.reference_thrust * rate * max(layer.thrust_factor for layer in bone.layers)
    assert plan.predicted_thrust == pytest.approx(cortical, rel=1e-3)


def test_tip_progress_splits_depth_and_lateral():
    entry = np.array([1.0, 2.0, 3.0])
    u = np.array([0.0, 0.6, -0.8])
    side = np.array([1.0, 0.0, 0.0])
    depth, lateral = tip_progress(entry + 0.01 * u + 0.0003 * side, entry, u)
    assert depth == pytest.approx(0.01)
    assert lateral == pytest.approx(0.0003)


def test_phase_progress_walks_the_phases(plan):
    trajectory = plan.trajectory
    for phase in trajectory.phases:
        if phase.end_time - phase.start_time > 2 * DT:
            middle = 0.5 * (phase.start_time + phase.end_time)
            name, fraction = phase_progress(trajectory, middle)
            assert name == phase.name
            assert fraction == pytest.approx(middle / trajectory.duration)
    assert phase_progress(trajectory, -1.0) == (trajectory.phases[0].name, 0.0)
    assert phase_progress(trajectory, 1e9) == (trajectory.phases[-1].name, 1.0)


def test_cancel_retract_takes_the_tip_out_above_the_entry(plan, params):
    trajectory, task = plan.trajectory, plan.task
    feed = trajectory.phase("feed")
    q_mid_feed = trajectory.sample(0.5 * (feed.start_time + feed.end_time))[0]
    kin = Kinematics(KinematicModel.from_parameters(params))
    assert tip_progress(kin.tip(q_mid_feed), task.entry, task.direction)[0] > 0.0  # in bone
    retract = plan_cancel_retract(q_mid_feed, task, params, DT)
    depths = [tip_progress(kin.tip(q), task.entry, task.direction) for q in retract.positions]
    assert depths[-1][0] < 0.0  # out of the bone, above the entry
    assert depths[-1][0] == pytest.approx(-task.standoff, abs=1e-9)
    assert max(lateral for _, lateral in depths) < 1e-6  # along the axis
    assert np.all(np.diff(retract.positions[:, FEED]) <= 1e-15)  # only ever backwards
    assert np.array_equal(
        retract.positions[:, :FEED], np.tile(q_mid_feed[:FEED], (len(retract.positions), 1))
    )


def test_waypoints_keep_the_ends_and_the_period(plan):
    indices = waypoints(plan.trajectory, 0.01)
    assert indices[0] == 0 and indices[-1] == len(plan.trajectory.positions) - 1
    assert set(np.diff(indices[:-1])) == {5}  # 10 ms at 2 ms samples
    assert np.diff(indices)[-1] <= 5


def test_feed_at_its_soft_limit_first_moves_to_the_tasks_retracted_value(shipped, incision, params):
    """The simulated drives start with the feed at its soft lower limit: the retract back there
    would run into the safety controller's envelope, so the plan moves out to the park value."""
    start = incision.park.copy()
    start[FEED] = JointLimits.from_parameters(params).soft_lower[FEED]
    plan = plan_drill_hole(shipped, start, params, DT, feed_mass=FEED_MASS)
    assert plan.trajectory.phases[0].name == "prepare"
    np.testing.assert_allclose(plan.trajectory.positions[0], start, atol=1e-12)
    assert plan.trajectory.positions[-1][FEED] == pytest.approx(incision.park[FEED])
    assert plan.trajectory.phases[-1].name == "end"  # the plan's settling hold at the start pose


def test_goal_tolerances_come_from_the_shipped_controllers():
    import yaml

    from quirobot_description.data_files import find_data_file

    controllers = yaml.safe_load(find_data_file("config/controllers.yaml").read_text())
    tolerance = path_tolerances(controllers, kind="goal")
    assert tolerance.shape == (6,)
    assert (
        tolerance[FEED]
        == controllers["drill_feed_controller"]["ros__parameters"]["constraints"]["drill_feed"]["goal"]
    )
    # the path is left unchecked by the controllers (procedures.path_check checks it, time-aligned)
    assert not path_tolerances(controllers).any()
    with pytest.raises(ValueError, match="drill_feed"):
        path_tolerances({"joint_trajectory_controller": controllers["joint_trajectory_controller"]})


def test_slowed_for_lag_keeps_the_path_and_the_feed_and_bounds_the_lag_error(plan):
    tolerance = np.array([1e-3, 1e-3, 1e-3, 0.01, 0.01, 2e-4])
    lag = 0.02
    slow = slowed_for_lag(plan.trajectory, lag, tolerance)
    assert [p.name for p in slow.phases] == [p.name for p in plan.trajectory.phases]
    for old, new in zip(plan.trajectory.phases, slow.phases, strict=True):
        a, b = round(new.start_time / DT), round(new.end_time / DT)
        c, d = round(old.start_time / DT), round(old.end_time / DT)
        np.testing.assert_allclose(slow.positions[a], plan.trajectory.positions[c], atol=1e-12)
        np.testing.assert_allclose(slow.positions[b], plan.trajectory.positions[d], atol=1e-12)
        speed = np.abs(slow.velocities[a : b + 1]).max(axis=0)
        if old.name in ("feed", "dwell"):
            assert new.end_time - new.start_time == pytest.approx(old.end_time - old.start_time)
            np.testing.assert_array_equal(slow.positions[a : b + 1], plan.trajectory.positions[c : d + 1])
        else:
            assert np.all(speed * lag <= 0.5 * tolerance * (1 + 1e-6)), old.name
    # The speed really was too high before (the check above can fail).
    assert np.abs(plan.trajectory.velocities).max(axis=0)[0] * lag > 0.5 * tolerance[0]
    # Velocities stay the derivative of the positions (finite differences).
    derivative = np.gradient(slow.positions, DT, axis=0)
    assert np.max(np.abs(derivative - slow.velocities)) < 0.02


def test_feed_left_out_retracts_before_the_arm_moves(shipped, incision, params):
    """After an aborted goal the bit may still be out (in bone): it comes back first."""
    start = incision.park.copy()
    start[FEED] += 0.01
    plan = plan_drill_hole(shipped, start, params, DT, feed_mass=FEED_MASS)
    prepare = plan.trajectory.phase("prepare")
    end = round(prepare.end_time / DT)
    assert plan.trajectory.positions[end][FEED] == pytest.approx(incision.park[FEED])
    assert np.array_equal(plan.trajectory.positions[: end + 1, :FEED], np.tile(start[:FEED], (end + 1, 1)))


def test_cancel_while_feeding_stops_smoothly_then_retracts(plan, params):
    trajectory, task = plan.trajectory, plan.task
    feed = trajectory.phase("feed")
    q, v, _ = trajectory.sample(0.5 * (feed.start_time + feed.end_time))
    assert v[FEED] == pytest.approx(task.feed_rate)
    retract = plan_cancel_retract(q, task, params, DT, v[FEED])
    assert [p.name for p in retract.phases] == ["cancel_stop", "cancel_retract"]
    assert retract.velocities[0, FEED] == pytest.approx(task.feed_rate)  # continues the feed
    deepest = retract.positions[:, FEED].max() - q[FEED]
    feed_acceleration = JointLimits.from_parameters(params).acceleration[FEED]
    assert deepest == pytest.approx(task.feed_rate**2 / (2 * feed_acceleration), rel=0.05)
    kin = Kinematics(KinematicModel.from_parameters(params))
    assert tip_progress(kin.tip(retract.positions[-1]), task.entry, task.direction)[0] == pytest.approx(
        -task.standoff, abs=1e-9
    )
    # Velocity continuous: no step larger than the feed's acceleration limit over one sample.
    steps = np.abs(np.diff(retract.velocities[:, FEED]))
    assert steps.max() <= JointLimits.from_parameters(params).acceleration[FEED] * DT * 1.01


def test_a_start_with_the_tip_in_the_bone_is_refused_naming_the_depth(shipped, incision, params):
    """A goal (or task) whose start pose, its feed retracted, leaves the drill tip past the entry
    would move the tip through bone sideways on its approach and back to park: refused. The
    start pose here is on the drilling axis with the tip 1 mm past the entry, as a task that
    parked tool0 where the tip belonged (its way back to park drove the tip into the bone)."""
    from quirobot_kinematics import ApproachTarget, ik

    feed = incision.park[FEED]  # ik places the drill tip, `feed` past tool0 along the axis
    tip = incision.entry + 0.001 * incision.direction
    start = np.append(ik(ApproachTarget(position=tip, approach=incision.direction), feed=feed), feed)
    with pytest.raises(GoalRejectedError, match=r"drill tip is 1\.000 mm past the entry.*phase start"):
        plan_drill_hole(shipped, start, params, DT, feed_mass=FEED_MASS)
    # 2 mm above the entry on the same axis (where a cancel leaves it) plans.
    tip = incision.entry - 0.002 * incision.direction
    above = np.append(ik(ApproachTarget(position=tip, approach=incision.direction), feed=feed), feed)
    plan_drill_hole(shipped, above, params, DT, feed_mass=FEED_MASS)
