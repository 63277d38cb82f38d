"""rviz/quirobot.rviz: shows the robot model from /robot_description and TF, fixed in the URDF's root."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import yaml

from quirobot_description.urdf import robot_description

RVIZ = Path(__file__).resolve().parents[2] / "rviz" / "quirobot.rviz"


def _root_link(text: str) -> str:
    root = ET.fromstring(text)
    children = {joint.find("child").get("link") for joint in root.findall("joint")}
    (name,) = [link.get("name") for link in root.findall("link") if link.get("name") not in children]
    return name


def test_rviz_shows_robot_model_and_tf_in_the_urdf_root_frame():
    config = yaml.safe_load(RVIZ.read_text())["Visualization Manager"]
    displays = {display["Class"]: display for display in config["Displays"]}
    model = displays["rviz_default_plugins/RobotModel"]
    assert model["Enabled"] and model["Description Source"] == "Topic"
    assert model["Description Topic"]["Value"] == "/robot_description"
    # robot_state_publisher latches robot_description: RViz must subscribe transient local to get it
    assert model["Description Topic"]["Durability Policy"] == "Transient Local"
    assert displays["rviz_default_plugins/TF"]["Enabled"]
    assert config["Global Options"]["Fixed Frame"] == _root_link(robot_description()) == "world"


def test_rviz_shows_the_scene_and_the_view_cone():
    """task_node's /quirobot/scene (latched: RViz subscribes transient local) and scope_servo_node's
    /quirobot/scope/view_cone, as MarkerArray displays."""
    config = yaml.safe_load(RVIZ.read_text())["Visualization Manager"]
    markers = {
        display["Topic"]["Value"]: display
        for display in config["Displays"]
        if display["Class"] == "rviz_default_plugins/MarkerArray"
    }
    assert set(markers) == {"/quirobot/scene", "/quirobot/scope/view_cone"}
    assert all(display["Enabled"] for display in markers.values())
    assert markers["/quirobot/scene"]["Topic"]["Durability Policy"] == "Transient Local"
