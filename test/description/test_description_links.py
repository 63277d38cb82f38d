"""Links and joints of the expanded URDF against the parameter file and the report's numbers."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from quirobot_description.parameters import JOINT_NAMES, LINK_NAMES
from quirobot_description.urdf import HARDWARE, TOOLS, DescriptionError, robot_description

# Links each tool adds that a joint moves (they carry a body).
TOOL_BODIES = {"drill": ("drill_bit",), "arthroscope": ("arthroscope",), "none": ()}


def _parse(tool="drill", hardware="mock"):
    root = ET.fromstring(robot_description(tool, hardware))
    return (
        root,
        {e.get("name"): e for e in root.findall("link")},
        {e.get("name"): e for e in root.findall("joint")},
    )


def _floats(text):
    return np.array([float(v) for v in text.split()])


@pytest.mark.parametrize("tool", TOOLS)
def test_every_moving_link_has_visual_collision_inertial(tool):
    _, links, joints = _parse(tool)
    moving = set(LINK_NAMES) | set(TOOL_BODIES[tool])
    for name in moving:
        link = links[name]
        for tag in ("visual", "collision", "inertial"):
            assert link.find(tag) is not None, f"{name} has no {tag}"
        assert float(link.find("inertial/mass").get("value")) > 0
    # and nothing else has a body except the fixed structure
    bodies = {n for n, link in links.items() if link.find("visual") is not None}
    assert bodies == moving | {"base_link"}


def test_tree_names_and_types_follow_the_report():
    _, links, joints = _parse("drill")
    assert [joints[n].get("type") for n in JOINT_NAMES] == ["prismatic"] * 3 + ["revolute"] * 2
    chain = ["base_link", *LINK_NAMES]
    for joint_name, parent, child in zip(JOINT_NAMES, chain[:-1], chain[1:], strict=True):
        assert joints[joint_name].find("parent").get("link") == parent
        assert joints[joint_name].find("child").get("link") == child
    assert joints["world_joint"].find("parent").get("link") == "world"
    assert joints["drill_feed"].get("type") == "prismatic"
    # the drill hangs from wrist_pitch_link at tool0's pose (beside the frame-only tool0, which
    # Gazebo's older converter would not look below)
    assert joints["drill_feed"].find("parent").get("link") == "wrist_pitch_link"
    assert joints["drill_feed"].find("origin").attrib == joints["tool0_joint"].find("origin").attrib
    assert {"world", "base_link", "tool0", "drill_bit", "drill_tip"} <= set(links)


def test_limits_are_the_reports():
    # report "Joint limits": 0 <= d1, d2, d3 <= 2 m; 0 <= theta4 <= 360 deg; -75 <= theta5 <= 225 deg
    _, _, joints = _parse()
    expected = {
        "gantry_x": (0.0, 2.0),
        "gantry_y": (0.0, 2.0),
        "gantry_z": (0.0, 2.0),
        "wrist_yaw": (0.0, 2 * math.pi),
        "wrist_pitch": (math.radians(-75), math.radians(225)),
    }
    for name, (lower, upper) in expected.items():
        limit = joints[name].find("limit")
        assert float(limit.get("lower")) == pytest.approx(lower, abs=1e-12)
        assert float(limit.get("upper")) == pytest.approx(upper, abs=1e-12)


def test_effort_and_velocity_are_the_reports():
    # report ch.6: force K_T*I_max*ratio = 360, 270, 570 N; torque 63 N*m; speeds 1 m/s, 10 rpm
    _, _, joints = _parse()
    efforts = [360.0, 270.0, 570.0, 63.0, 63.0]
    velocities = [1.0, 1.0, 1.0, 10 * 2 * math.pi / 60, 10 * 2 * math.pi / 60]
    for name, effort, velocity in zip(JOINT_NAMES, efforts, velocities, strict=True):
        limit = joints[name].find("limit")
        assert float(limit.get("effort")) == pytest.approx(effort, rel=1e-3)
        assert float(limit.get("velocity")) == pytest.approx(velocity, rel=1e-4)


def test_damping_is_the_reports_viscous_friction():
    # report ch.5: 0.06 N*s/m prismatic, 0.05 N*m*s/rad revolute
    _, _, joints = _parse()
    for name in JOINT_NAMES:
        expected = 0.06 if joints[name].get("type") == "prismatic" else 0.05
        assert float(joints[name].find("dynamics").get("damping")) == pytest.approx(expected)


def test_safety_controller_soft_limits_from_parameters(parameters):
    _, _, joints = _parse()
    for joint in parameters.joints:
        safety = joints[joint.name].find("safety_controller")
        assert float(safety.get("soft_lower_limit")) == pytest.approx(
            joint.lower + joint.soft_margin, abs=1e-15
        )
        assert float(safety.get("soft_upper_limit")) == pytest.approx(
            joint.upper - joint.soft_margin, abs=1e-15
        )
        assert float(safety.get("k_position")) == joint.k_position
        assert float(safety.get("k_velocity")) == joint.k_velocity


def test_masses_and_inertias_are_the_parameter_files(parameters):
    _, links, _ = _parse()
    for spec in parameters.links:
        inertial = links[spec.name].find("inertial")
        assert float(inertial.find("mass").get("value")) == spec.mass
        assert np.allclose(_floats(inertial.find("origin").get("xyz")), spec.origin, atol=0)
        i = inertial.find("inertia")
        tensor = np.array(
            [[float(i.get(f"i{a}{b}" if a <= b else f"i{b}{a}")) for b in "xyz"] for a in "xyz"]
        )
        assert np.allclose(tensor, spec.inertia, rtol=1e-12, atol=0)
    # the report's masses (ch.5): carriages 5 kg each, link 4 4 kg, drill 3 kg
    masses = [float(links[n].find("inertial/mass").get("value")) for n in LINK_NAMES]
    assert masses == [5.0, 5.0, 5.0, 4.0, 3.0]


def test_drill_bit_is_a_steel_cylinder_ending_at_the_tip(parameters):
    _, links, _ = _parse("drill")
    drill = parameters.drill
    bit = links["drill_bit"]
    mass = float(bit.find("inertial/mass").get("value"))
    assert mass == pytest.approx(drill.density * math.pi * drill.bit_radius**2 * drill.bit_length, rel=1e-12)
    com = _floats(bit.find("inertial/origin").get("xyz"))
    assert np.allclose(com, [0, 0, -drill.bit_length / 2])


def test_ros2_control_block_per_hardware():
    plugins = {
        "mock": "mock_components/GenericSystem",
        "gazebo": "gz_ros2_control/GazeboSimSystem",
        "real": "joint_state_topic_hardware_interface/JointStateTopicSystem",
    }
    for hardware in HARDWARE:
        for tool in TOOLS:
            root, _, _ = _parse(tool, hardware)
            system = root.find("ros2_control")
            assert system.find("hardware/plugin").text.strip() == plugins[hardware]
            names = [j.get("name") for j in system.findall("joint")]
            assert names == list(JOINT_NAMES) + (["drill_feed"] if tool == "drill" else [])
            for joint in system.findall("joint"):
                # Gazebo: position only (gz_ros2_control runs a claimed velocity command open loop)
                commands = ["position"] if hardware == "gazebo" else ["position", "velocity"]
                assert [c.get("name") for c in joint.findall("command_interface")] == commands
                assert [s.get("name") for s in joint.findall("state_interface")] == [
                    "position",
                    "velocity",
                    "effort",
                ]
            gazebo = root.find("gazebo/plugin")
            assert (gazebo is not None) == (hardware == "gazebo")
            if hardware == "gazebo":
                assert gazebo.get("filename") == "gz_ros2_control-system"
                assert gazebo.findtext("parameters").endswith("config/controllers_gazebo.yaml")
            if hardware == "real":
                params = {p.get("name"): p.text for p in system.findall("hardware/param")}
                assert params["joint_commands_topic"] == "/quirobot/joint_commands"
                assert params["joint_states_topic"] == "/quirobot/joint_states"


def test_materials_have_colours_from_the_parameter_file(parameters):
    _, links, _ = _parse()
    for spec in parameters.links:
        rgba = _floats(links[spec.name].find("visual/material/color").get("rgba"))
        assert np.allclose(rgba, spec.colour)


@pytest.mark.parametrize(("tool", "hardware"), [("laser", "mock"), ("drill", "sim"), ("", "mock")])
def test_unknown_tool_or_hardware_is_refused_naming_the_choices(tool, hardware):
    with pytest.raises(DescriptionError, match="choose one of"):
        robot_description(tool, hardware)


def test_package_uris_false_names_the_same_meshes_by_absolute_paths():
    """The visual meshes by package:// URI (ROS) or as files of this checkout (package_uris=False)."""
    with_uris = robot_description(package_uris=True)
    absolute = robot_description(package_uris=False)
    uris = [m.get("filename") for m in ET.fromstring(with_uris).iter("mesh")]
    paths = [m.get("filename") for m in ET.fromstring(absolute).iter("mesh")]
    assert uris and all(uri.startswith("package://quirobot/meshes/") for uri in uris)
    meshes = Path(__file__).resolve().parents[2] / "quirobot_description" / "meshes"
    assert paths == [str(meshes / uri.rsplit("/", 1)[1]) for uri in uris]
    assert all(Path(path).is_file() for path in paths)
    assert absolute.replace(str(meshes), "package://quirobot/meshes") == with_uris
