"""The commanded axes come from the mounted tool: the arm's joints, then the tool's own axes."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from quirobot_description.parameters import (
    JOINT_NAMES,
    ArthroscopeParameters,
    DrillParameters,
    axes_for,
    drive_axes,
    load_parameters,
)
from quirobot_description.urdf import TOOLS, robot_description


@pytest.mark.parametrize("tool", TOOLS)
def test_axes_for_a_tool_are_the_ros2_control_joints_of_its_description(tool):
    """Cross-check against the xacro: the <ros2_control> joints of the robot with `tool` mounted."""
    root = ET.fromstring(robot_description(tool, "mock"))
    commanded = tuple(joint.get("name") for joint in next(root.iter("ros2_control")).iter("joint"))
    assert axes_for(tool) == commanded


def test_each_tool_owns_its_axes():
    assert DrillParameters.axes == (DrillParameters.feed_joint,) == ("drill_feed",)
    assert ArthroscopeParameters.axes == ()
    assert axes_for("drill")[: len(JOINT_NAMES)] == JOINT_NAMES
    assert axes_for("drill")[DrillParameters.feed_index] == DrillParameters.feed_joint
    assert axes_for("arthroscope") == axes_for("none") == JOINT_NAMES


def test_an_unknown_tool_is_refused_by_name():
    with pytest.raises(KeyError, match="no tool named 'saw'"):
        axes_for("saw")


def test_the_parameter_file_configures_the_drive_of_every_tool_axis():
    params = load_parameters()
    assert drive_axes() == (*JOINT_NAMES, "drill_feed")
    for axis in drive_axes():
        assert axis in params.canopen.node_ids and axis in params.homing
        assert axis in params.drive.quick_stop_deceleration
        assert params.axis(axis).motor is not None
    assert params.axis("drill_feed") is params.drill.feed
    assert params.axis("gantry_x") is params.joint("gantry_x")
    with pytest.raises(KeyError, match="no axis named 'scope_roll'"):
        params.axis("scope_roll")
