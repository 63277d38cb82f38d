"""DriveBridge (the ROS-free core of drive_node): JointState commands in, joint states out."""

from __future__ import annotations

import numpy as np
import pytest

from quirobot_control.drive import DriveState
from quirobot_control.drive_backend import SimulatedBackend
from quirobot_control.drive_bridge import BridgeError, DriveBridge
from quirobot_control.incision import control_configuration
from quirobot_control.trajectory import TRAJECTORY_JOINTS

START = [0.8, 0.9, 1.0, 1.5, 0.5, 0.004]


@pytest.fixture()
def bridge(parameters):
    control = control_configuration(parameters)
    return DriveBridge(parameters, control, SimulatedBackend(parameters, control, START))


def test_commands_are_tracked_and_states_published(bridge):
    names = list(TRAJECTORY_JOINTS)
    target = np.array(START) + np.array([0.002, -0.002, 0.002, 0.01, -0.01, 0.001])
    for k in range(1, 301):
        s = min(k / 200.0, 1.0)  # a 0.2 s ramp
        bridge.command(names, list(START + s * (target - START)), [])
        sample = bridge.step()
    assert sample.names == TRAJECTORY_JOINTS
    assert sample.stop_reason is None
    np.testing.assert_allclose(sample.position, target, atol=2e-6)
    np.testing.assert_allclose(bridge.backend.plant.position, target, atol=2e-6)
    assert sample.time == pytest.approx(0.3)


def test_a_partial_command_keeps_the_other_joints(bridge):
    for _ in range(50):
        bridge.command(["drill_feed"], [0.0045], [0.0])
        sample = bridge.step()
    np.testing.assert_allclose(sample.position[:5], START[:5], atol=2e-6)
    assert sample.position[5] == pytest.approx(0.0045, abs=5e-6)


def test_malformed_commands_are_refused_by_name(bridge):
    with pytest.raises(BridgeError, match="unknown joint 'elbow'"):
        bridge.command(["elbow"], [0.0])
    with pytest.raises(BridgeError, match="2 names, 1 positions"):
        bridge.command(["gantry_x", "gantry_y"], [0.1])


def test_silence_from_ros2_control_stops_the_drives(bridge, parameters):
    bridge.command(list(TRAJECTORY_JOINTS), START, [])
    timeout = control_configuration(parameters).watchdog_stop_timeout
    for _ in range(int(timeout / bridge.dt) + 5):
        sample = bridge.step()
    assert "command watchdog" in sample.stop_reason
    assert all(d.feedback().state is DriveState.QUICK_STOP for d in bridge.drives.values())
