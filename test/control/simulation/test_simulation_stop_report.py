"""The simulation report after a stop (issue 11, item 11): what happens after the stop is kept,
and a stop before the feed still gives a log, a plot and the reason.

The reference for "what the physics did" is the same closed loop run to the end of the plan with
stop_on_error=False (the controller stopped at the fault, the physics going on): the default run's
log and metrics must agree with it over the post-stop window.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.planning.tasks import load_task, plan_incision
from quirobot_control.reporting.plots import plot_result
from quirobot_control.reporting.recording import write_mcap
from quirobot_control.simulation.closed_loop import POST_STOP_TIME, ClosedLoopSimulation, Drilling
from quirobot_control.simulation.incision import TaskResult, common_metrics, incision_metrics
from quirobot_control.simulation.metrics import TaskMetrics

DEPTH = 0.004  # m: a short incision keeps the run quick


@pytest.fixture(scope="module")
def plan(parameters):
    from dataclasses import replace

    task = replace(load_task("incision"), depth=DEPTH)
    control = control_configuration(parameters)
    return task, control, plan_incision(task, parameters, control.dt)


def run_with_fault(parameters, plan, phase: str, fraction: float, **options):
    task, control, trajectory = plan
    simulation = ClosedLoopSimulation(
        parameters, control, trajectory, drilling=Drilling(task.entry, task.direction, task.bone)
    )
    window = trajectory.phase(phase)
    fault_cycle = int(
        round((window.start_time + fraction * (window.end_time - window.start_time)) / control.dt)
    )

    def inject(k, sim):
        if k == fault_cycle:
            sim.drives["gantry_z"].inject_fault("overcurrent in phase W")

    simulation.before_cycle = inject
    return simulation.run(**options), fault_cycle


def test_the_log_and_the_depth_metric_cover_the_physics_after_a_stop(parameters, plan):
    task, control, trajectory = plan
    log, fault_cycle = run_with_fault(parameters, plan, "feed", 0.5)
    truth, _ = run_with_fault(parameters, plan, "feed", 0.5, stop_on_error=False)
    assert log.stop_reason == "drive fault on gantry_z: overcurrent in phase W"
    assert log.stop_time == pytest.approx(fault_cycle * control.dt)
    post = int(round(POST_STOP_TIME / control.dt))
    assert len(log.time) == fault_cycle + post + 1  # the physics ran on after the stop
    np.testing.assert_array_equal(log.tip, truth.tip[: len(log.time)])  # the same physics
    metrics = incision_metrics(task, trajectory, log)
    depth = (truth.tip[: len(log.time)] - task.entry) @ task.direction
    assert metrics.max_depth == pytest.approx(float(depth.max()), abs=1e-12)
    # The arm is at rest at the end of the window: nothing after it is missing from the report.
    assert np.max(np.abs(truth.velocity[len(log.time) - 1])) < 1e-3


def test_a_stop_before_the_feed_still_reports_and_writes_the_log_and_plot(parameters, plan, tmp_path):
    task, control, trajectory = plan
    log, fault_cycle = run_with_fault(parameters, plan, "approach", 0.5)
    assert log.time[-1] < trajectory.phase("feed").start_time
    run = common_metrics(log, trajectory)
    drilled = incision_metrics(task, trajectory, log)  # no exception: nothing was drilled
    metrics = TaskMetrics(run, incision=drilled)
    assert run.completed is False
    assert run.stop_reason == "drive fault on gantry_z: overcurrent in phase W"
    assert math.isnan(drilled.lateral_deviation) and drilled.depth_overshoot == 0.0
    result = TaskResult(task=task, trajectory=trajectory, log=log, metrics=metrics)
    assert write_mcap(tmp_path / "early.mcap", log, trajectory).stat().st_size > 0
    assert plot_result(result, tmp_path / "early.png").stat().st_size > 0
