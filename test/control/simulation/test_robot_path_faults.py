"""Faults injected on the robot's own path (simulation.executor_run: the DrillHole executor over
the drive bridge, CSP drives), as `quirobot simulate --inject` injects them.

An emergency stop mid-feed must leave the bit no more than EXTRA_DEPTH_LIMIT (0.05 mm) deeper. On
the robot's path it went about 0.1 mm deeper: the CSP drives' quick-stop ramp ran on their own
position loop without the host's gravity feed-forward (the torque offset 0x60B2 sent with each
position), so gantry_z sagged until its loop wound up and its brake held (measured: gantry_z
106 um, wrist_pitch 29 urad after a thrust-limit stop, the bone's thrust on the stopped bit
105.9 N). The drives now keep the torque offset last received as their ramp's feed-forward
(drives.drive_control: its source), as the retired ClosedLoopSimulation's CST drives kept the
current in force.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.planning.drill_hole import DrillGoal, plan_drill_hole
from quirobot_control.planning.tasks import load_task
from quirobot_control.simulation.executor_run import run_drill_hole
from quirobot_control.simulation.faults import EXTRA_DEPTH_LIMIT, FaultInjector, Injection, fault_report
from quirobot_description.parameters import DrillParameters

pytest.importorskip("mujoco")

DEPTH = 0.004  # m: through the near cortex into the canal (a shorter run)


def test_a_thrust_limit_stop_leaves_the_stopped_bit_unloaded(parameters):
    """A bone twice as hard as imaged under a 45 N goal limit (test_goal_limits.py): the monitor
    stops the feed in the near cortex; on the stopped bit the bone's thrust must stay below what
    stopped it (measured: 105.9 N, the bit pushed on by gantry_z's sag, past the robot's 80 N)."""
    from quirobot_control.simulation.incision import run_task

    task = load_task("incision")
    harder = replace(
        task.bone,
        layers=tuple(replace(layer, thrust_factor=2.0 * layer.thrust_factor) for layer in task.bone.layers),
    )
    result = run_task(task, parameters, max_thrust=45.0, until="feed", bone=harder)
    assert result.metrics.incision.feed_end == "thrust limit", result.metrics.run.stop_reason
    print(f"thrust-limit stop: peak thrust {result.log.thrust.max():.1f} N")
    assert result.log.thrust.max() < 60.0  # stopped in the near cortex, well under the plant's 76 N


def test_an_emergency_stop_mid_feed_leaves_the_bit_where_it_was(parameters):
    task = load_task("incision")
    control = control_configuration(parameters)
    limit = parameters.drilling.safety.thrust_limit
    goal = DrillGoal(task.entry, task.direction, DEPTH, task.feed_rate, limit)
    feed_mass = control.joint(DrillParameters.feed_joint).effective_inertia
    plan = plan_drill_hole(goal, task.park, parameters, control.dt, task, feed_mass=feed_mass)
    feed = plan.trajectory.phase("feed")
    injector = FaultInjector(Injection("estop", round(feed.start_time + 1.5, 3)))  # the tip ~2 mm deep
    run = run_drill_hole(
        task,
        parameters,
        control,
        depth=DEPTH,
        feed_rate=task.feed_rate,
        thrust_limit=limit,
        injectors=[injector],
    )
    report = fault_report(injector, run.log, task.entry, task.direction)
    print(report)
    assert report.not_applied is None and report.detected_after is not None
    assert run.log.stop_reason is not None and "emergency stop" in run.log.stop_reason
    assert report.stopped_after is not None
    assert report.extra_depth <= EXTRA_DEPTH_LIMIT
