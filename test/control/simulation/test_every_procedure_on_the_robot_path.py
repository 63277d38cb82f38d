"""Every procedure of `quirobot simulate` runs on the robot's own path (issue 31 item 3): the drive
bridge (drive_node's core) on the simulated backend, every period of the run; and the
scope servo runs live on it, measuring the joint states the bridge publishes every period, as
scope_servo_node does over DDS (not its own previous commands).
"""

from __future__ import annotations

import numpy as np
import pytest

from quirobot_control.bridge.drive_bridge import DriveBridge
from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.planning.arthroscopy import load_arthroscopy
from quirobot_control.procedures.procedure import procedure_for
from quirobot_control.procedures.scope_servo import ScopeServoSession
from quirobot_control.simulation.arthroscopy_procedure import FEED_PARK, LiveServo
from quirobot_control.simulation.executor_run import run_streamed
from quirobot_description.data_files import find_data_file
from quirobot_description.parameters import JOINT_NAMES

pytest.importorskip("mujoco")


@pytest.mark.parametrize("name", ["line", "arthroscopy", "pin"])
def test_the_procedure_runs_the_drive_bridge_and_no_other_loop(parameters, monkeypatch, name):
    """Each procedure's run steps the drive bridge (its periods counted) every period of its
    duration."""
    periods = []
    run_period = DriveBridge.run_period

    def counted(self, now):
        periods.append(now)
        return run_period(self, now)

    monkeypatch.setattr(DriveBridge, "run_period", counted)
    procedure = procedure_for(name)
    task = procedure.load(find_data_file(f"config/tasks/{name}.yaml"))
    result = procedure.simulate(task, parameters, plant="ideal")
    assert result.metrics.run.completed, result.metrics.run.stop_reason
    assert len(periods) >= result.metrics.run.duration / 1e-3 - 1


def test_the_live_servo_measures_the_robots_joint_states_every_period(parameters):
    """Each period the session measures what the bridge published (the encoders, stamped now),
    which differ from the commands by the robot's tracking error: the loop closes through the
    robot. Against its own commands (run_servo, the preview) they would be equal."""
    task = load_arthroscopy(find_data_file("config/tasks/arthroscopy.yaml"))
    control = control_configuration(parameters)
    session = ScopeServoSession(task, parameters)
    measured = []
    measure = session.measure

    def recorded(q, stamp, now):
        measured.append((np.array(q), stamp, now))
        return measure(q, stamp, now)

    session.measure = recorded
    trajectory, log = run_streamed(
        np.append(session.docked_joints, FEED_PARK),
        LiveServo(task, session, control.dt),
        parameters,
        control,
        plant="ideal",
    )
    assert len(measured) == len(trajectory.positions) - 1  # one a period, before its command
    assert all(stamp == now for _, stamp, now in measured)  # in-process: never late
    arm = len(JOINT_NAMES)
    # Period k measures the state the previous period left: the log's row k - 1 (the encoders).
    for k in (1, len(measured) // 2, len(measured) - 1):
        np.testing.assert_array_equal(measured[k][0], log.measured[k - 1][:arm])
    gaps = [np.max(np.abs(q - trajectory.positions[k][:arm])) for k, (q, _, _) in enumerate(measured)]
    assert max(gaps) > 1e-6  # the robot's tracking error, which its own commands would not show
