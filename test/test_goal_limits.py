"""DrillHole goals against the robot's limits (issue 19 items 5 and 8).

- a cancel in bone stops the feed at least as fast as the drilling monitor's own feed stop
  (simulation.closed_loop.FeedStop, the independent reference here) before it retracts;
- a goal deeper than the bone model's far side (plus the breakthrough allowance) or whose feed
  rate makes the bone model predict more thrust than the robot's thrust limit is refused with
  the number and the limit, as a "limit" refusal (REJECTED_LIMIT of action/DrillHole.action);
- the goal's max_thrust (never above the robot's) is the drilling monitor's thrust limit during
  the feed (monitor_settings_for_goal), and a closed-loop run stops the feed at it.
"""

from __future__ import annotations

import numpy as np
import pytest

from quirobot_control.loop.control_config import control_configuration
from quirobot_control.planning.drill_hole import DrillGoal, plan_cancel_retract, plan_drill_hole
from quirobot_control.planning.tasks import load_task
from quirobot_control.planning.trajectory import JointTrajectory, Phase
from quirobot_control.simulation.closed_loop import ClosedLoopSimulation, Drilling, FeedStop
from quirobot_description import robot_parameters
from quirobot_description.parameters import FEED_INDEX

DT = 0.002


@pytest.fixture(scope="module")
def params():
    return robot_parameters()


@pytest.fixture(scope="module")
def incision():
    return load_task("incision")


@pytest.mark.parametrize("feed_rate", [0.0015, 0.005, 0.01])
def test_a_cancel_stops_the_feed_at_least_as_fast_as_the_monitors_feed_stop(params, incision, feed_rate):
    """Before: the cancel decelerated at the task's 0.01 m/s^2 (1.25 mm deeper at 5 mm/s), ten
    times gentler than the monitor's feed stop at the feed's 0.1 m/s^2 (0.125 mm)."""
    q = incision.park.copy()
    q[FEED_INDEX] = 0.02
    cancel = plan_cancel_retract(q, incision, params, DT, feed_velocity=feed_rate)
    extra = cancel.positions[:, FEED_INDEX].max() - q[FEED_INDEX]
    monitor_stop = FeedStop(0.0, q[FEED_INDEX], feed_rate, params.drill.feed_acceleration)
    assert extra <= monitor_stop.rest_position - q[FEED_INDEX] + 1e-9, (extra, monitor_stop.rest_position)
    assert extra > 0.0  # it stops, it does not jump back


def _cancelled_in_bone(params, incision, feed_rate: float) -> tuple[float, float]:
    """Closed loop (ideal plant, the bone's thrust): a DrillHole plan at `feed_rate` m/s cancelled
    half-way through the feed, from the settle phase on. Returns (the true tip's depth at the
    cancel, its deepest after it), m."""
    control = control_configuration(params)
    dt = control.dt
    goal = DrillGoal(incision.entry, incision.direction, incision.depth, feed_rate, 80.0)
    plan = plan_drill_hole(goal, incision.park, params, dt)
    trajectory, task = plan.trajectory, plan.task
    settle, feed = trajectory.phase("settle"), trajectory.phase("feed")
    k0 = round(settle.start_time / dt)
    k = round(0.5 * (feed.start_time + feed.end_time) / dt)
    cancel = plan_cancel_retract(
        trajectory.positions[k], task, params, dt, trajectory.velocities[k, FEED_INDEX]
    )
    before = (k - k0) * dt
    run = JointTrajectory(
        dt=dt,
        positions=np.vstack([trajectory.positions[k0 : k + 1], cancel.positions[1:]]),
        velocities=np.vstack([trajectory.velocities[k0 : k + 1], cancel.velocities[1:]]),
        accelerations=np.vstack([trajectory.accelerations[k0 : k + 1], cancel.accelerations[1:]]),
        phases=(
            Phase("feed", 0.0, before),
            *(Phase(p.name, p.start_time + before, p.end_time + before) for p in cancel.phases),
        ),
    )
    simulation = ClosedLoopSimulation(
        params, control, run, drilling=Drilling(task.entry, task.direction, task.bone)
    )
    log = simulation.run()
    assert log.stop_reason is None, log.stop_reason
    depth = (log.tip - task.entry) @ task.direction
    at_cancel = k - k0
    return float(depth[at_cancel]), float(depth[at_cancel:].max())


def test_a_cancel_in_bone_goes_little_deeper_in_closed_loop(params, incision):
    """5 mm/s in the canal: the true tip goes 0.125 mm (v^2 / 2a at the feed's 0.1 m/s^2) plus
    the tracking lag deeper before the retract; before, 1.25 mm (the task's 0.01 m/s^2)."""
    feed_rate = 0.005
    at_cancel, deepest = _cancelled_in_bone(params, incision, feed_rate)
    assert at_cancel > incision.bone.layers[0].thickness  # in bone, past the near cortex
    planned = feed_rate**2 / (2.0 * params.drill.feed_acceleration)
    assert deepest - at_cancel < planned + 0.05e-3, (deepest - at_cancel) * 1e3
