"""config/controllers.yaml agrees with the URDF's ros2_control block and the parameter file."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from quirobot_description.parameters import JOINT_NAMES
from quirobot_description.urdf import robot_description

ROOT = Path(__file__).resolve().parents[1]
JTC = "joint_trajectory_controller/JointTrajectoryController"


@pytest.fixture(scope="module")
def controllers():
    return yaml.safe_load((ROOT / "config" / "controllers.yaml").read_text())


@pytest.fixture(scope="module")
def interfaces():
    """joint -> (command interfaces, state interfaces) of the drill/gazebo description."""
    root = ET.fromstring(robot_description("drill", "gazebo"))
    return {
        joint.get("name"): (
            {c.get("name") for c in joint.findall("command_interface")},
            {s.get("name") for s in joint.findall("state_interface")},
        )
        for joint in root.find("ros2_control").findall("joint")
    }


def test_update_rate_is_the_drive_control_rate(controllers, parameters):
    rate = controllers["controller_manager"]["ros__parameters"]["update_rate"]
    assert rate == parameters.drive.control_rate


def test_controller_types(controllers):
    manager = controllers["controller_manager"]["ros__parameters"]
    assert manager["joint_state_broadcaster"]["type"] == "joint_state_broadcaster/JointStateBroadcaster"
    assert manager["joint_trajectory_controller"]["type"] == JTC
    assert manager["drill_feed_controller"]["type"] == JTC


@pytest.mark.parametrize(
    ("controller", "joints"),
    [("joint_trajectory_controller", list(JOINT_NAMES)), ("drill_feed_controller", ["drill_feed"])],
)
def test_trajectory_controllers_match_the_urdf(controllers, interfaces, controller, joints):
    params = controllers[controller]["ros__parameters"]
    assert params["joints"] == joints
    for joint in joints:
        commands, states = interfaces[joint]
        assert set(params["command_interfaces"]) <= commands
        assert set(params["state_interfaces"]) <= states
        tolerances = params["constraints"][joint]
        assert 0 < tolerances["goal"] < tolerances["trajectory"]
    # JTC applies PID gains only to velocity-only/effort command interfaces; position+velocity
    # needs none (ros2-conventions.md), and effort with position must not be combined for gz.
    assert params["command_interfaces"] == ["position", "velocity"]
    assert "gains" not in params
    assert set(params["constraints"]) - {"stopped_velocity_tolerance", "goal_time"} == set(joints)


def test_every_declared_controller_is_configured(controllers):
    manager = controllers["controller_manager"]["ros__parameters"]
    declared = {name for name, value in manager.items() if isinstance(value, dict) and "type" in value}
    configured = set(controllers) - {"controller_manager"}
    assert configured <= declared
    assert declared - configured <= {"joint_state_broadcaster"}
