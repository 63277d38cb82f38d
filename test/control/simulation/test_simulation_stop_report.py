"""The simulation report after a stop (issue 11, item 11): what happens after the stop is kept,
and a stop before the feed still gives a log, a plot and the reason.

On the robot's own path (simulation.executor_run: a DrillHole goal over the drive bridge, ideal
plant), as `quirobot simulate` runs it: a gantry_z drive fault at a fraction of a phase of the
plan the executor sent.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.planning.tasks import load_task
from quirobot_control.reporting.plots import plot_result
from quirobot_control.reporting.recording import write_mcap
from quirobot_control.simulation.executor_run import run_drill_hole
from quirobot_control.simulation.incision import TaskResult, common_metrics, incision_metrics
from quirobot_control.simulation.metrics import TaskMetrics
from quirobot_control.simulation.simulation_log import POST_STOP_TIME

pytest.importorskip("mujoco")

DEPTH = 0.004  # m: a short incision keeps the run quick


def run_with_fault(parameters, phase: str, fraction: float):
    """(run, the fault's time s on the log's clock): gantry_z faults `fraction` of the way
    through `phase` of the plan the executor sent."""
    task = load_task("incision")
    fault = {}

    def inject(k, robot):
        if "cycle" not in fault and robot.port.sent:
            trajectory = robot.port.sent[0][1]
            window = trajectory.phase(phase)
            at = window.start_time + fraction * (window.end_time - window.start_time)
            fault["cycle"] = int(round(at / trajectory.dt))
        if k == fault.get("cycle"):
            robot.drives["gantry_z"].inject_fault("overcurrent in phase W")

    run = run_drill_hole(
        task,
        parameters,
        control_configuration(parameters),
        depth=DEPTH,
        feed_rate=task.feed_rate,
        thrust_limit=parameters.drilling.safety.thrust_limit,
        injectors=[inject],
    )
    return run, fault["cycle"] * run.trajectory.dt


def test_the_log_and_the_depth_metric_cover_the_physics_after_a_stop(parameters):
    run, fault_time = run_with_fault(parameters, "feed", 0.5)
    log, trajectory, task = run.log, run.trajectory, load_task("incision")
    dt = trajectory.dt
    assert "gantry_z" in log.stop_reason and "overcurrent in phase W" in log.stop_reason, log.stop_reason
    assert fault_time <= log.stop_time <= fault_time + 2 * dt  # read at the next period at most
    assert log.time[-1] >= log.stop_time + POST_STOP_TIME - dt  # the physics ran on after the stop
    metrics = incision_metrics(task, trajectory, log)
    depth = (log.tip - task.entry) @ task.direction
    assert metrics.max_depth == pytest.approx(float(depth.max()), abs=1e-12)
    # The arm is at rest at the end of the window: nothing after it is missing from the report.
    assert np.max(np.abs(log.velocity[-1])) < 1e-3


def test_a_stop_before_the_feed_still_reports_and_writes_the_log_and_plot(parameters, tmp_path):
    run, fault_time = run_with_fault(parameters, "approach", 0.5)
    log, trajectory, task = run.log, run.trajectory, load_task("incision")
    assert log.time[-1] < trajectory.phase("feed").start_time
    result_metrics = common_metrics(log, trajectory)
    drilled = incision_metrics(task, trajectory, log)  # no exception: nothing was drilled
    metrics = TaskMetrics(result_metrics, incision=drilled)
    assert result_metrics.completed is False
    assert "gantry_z" in result_metrics.stop_reason and "overcurrent in phase W" in result_metrics.stop_reason
    assert math.isnan(drilled.lateral_deviation) and drilled.depth_overshoot == 0.0
    result = TaskResult(task=task, trajectory=trajectory, log=log, metrics=metrics)
    assert write_mcap(tmp_path / "early.mcap", log, trajectory).stat().st_size > 0
    assert plot_result(result, tmp_path / "early.png").stat().st_size > 0
