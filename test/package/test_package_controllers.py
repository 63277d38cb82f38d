"""The controller configurations agree with the URDF's ros2_control block and the parameter file.

config/controllers.yaml serves the mock and the real hardware (position + velocity commands);
config/controllers_gazebo.yaml serves gz_ros2_control, position commands only: its write()
(jazzy gz_system.cpp) applies a claimed velocity command as is and ignores the position command
then, so the trajectory would run open loop. Plain YAML and xacro output, no ROS needed.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.hardware.controllers import CONTROLLERS, spawned_controllers
from quirobot_description.parameters import JOINT_NAMES
from quirobot_description.urdf import HARDWARE, TOOLS, robot_description
from quirobot_description.validation import FAIL, PASS, check_urdf

ROOT = Path(__file__).resolve().parents[2]
JTC = "joint_trajectory_controller/JointTrajectoryController"
#: controllers file -> the hardware it serves
FILES = {"controllers.yaml": ("mock", "real"), "controllers_gazebo.yaml": ("gazebo",)}
TRAJECTORY_CONTROLLERS = {
    "joint_trajectory_controller": list(JOINT_NAMES),
    "drill_feed_controller": ["drill_feed"],
}


def _load(name: str) -> dict:
    return yaml.safe_load((ROOT / "config" / name).read_text())


def _urdf(hardware: str, tool: str = "drill") -> ET.Element:
    return ET.fromstring(robot_description(tool, hardware))


def _interfaces(root: ET.Element) -> dict[str, tuple[list[str], list[str]]]:
    """joint -> (command interfaces, state interfaces) of the ros2_control block, in order."""
    return {
        joint.get("name"): (
            [c.get("name") for c in joint.findall("command_interface")],
            [s.get("name") for s in joint.findall("state_interface")],
        )
        for joint in root.find("ros2_control").findall("joint")
    }


@pytest.mark.parametrize("name", FILES)
def test_update_rate_is_the_drive_control_rate(name, parameters):
    assert (
        _load(name)["controller_manager"]["ros__parameters"]["update_rate"] == parameters.drive.control_rate
    )


@pytest.mark.parametrize("name", FILES)
def test_the_named_controllers_are_the_files(name):
    """hardware.controllers names every controller the file declares (the launch files spawn
    them by those names), the broadcaster first, and only those."""
    manager = _load(name)["controller_manager"]["ros__parameters"]
    declared = [key for key, value in manager.items() if isinstance(value, dict) and "type" in value]
    assert sorted(declared) == sorted(CONTROLLERS)
    assert CONTROLLERS[0] == "joint_state_broadcaster"
    assert spawned_controllers("drill") == list(CONTROLLERS)
    assert spawned_controllers("arthroscope") == spawned_controllers("none") == list(CONTROLLERS[:2])


@pytest.mark.parametrize("name", FILES)
def test_controller_types(name):
    manager = _load(name)["controller_manager"]["ros__parameters"]
    assert manager["joint_state_broadcaster"]["type"] == "joint_state_broadcaster/JointStateBroadcaster"
    for controller in TRAJECTORY_CONTROLLERS:
        assert manager[controller]["type"] == JTC


@pytest.mark.parametrize(("name", "hardware"), [(n, h) for n, hs in FILES.items() for h in hs])
@pytest.mark.parametrize("controller", TRAJECTORY_CONTROLLERS)
def test_trajectory_controllers_claim_exactly_the_urdfs_interfaces(name, hardware, controller):
    params = _load(name)[controller]["ros__parameters"]
    joints = TRAJECTORY_CONTROLLERS[controller]
    assert params["joints"] == joints
    interfaces = _interfaces(_urdf(hardware))
    for joint in joints:
        commands, states = interfaces[joint]
        assert params["command_interfaces"] == commands, f"{hardware} {joint}"
        assert set(params["state_interfaces"]) <= set(states)
        tolerances = params["constraints"][joint]
        assert tolerances["goal"] > 0, f"{name} {joint}"
        # Path unchecked by JTC, guarded on time-aligned samples: on the robot a stale joint state,
        # on Gazebo a jump of the controllers' clock would abort good motions (docs/gazebo.md).
        assert tolerances["trajectory"] == 0.0, f"{name} {joint}"
    assert set(params["constraints"]) - {"stopped_velocity_tolerance", "goal_time"} == set(joints)
    # JTC runs PIDs only for a velocity-only or an effort command interface: none here, so no gains
    assert params["command_interfaces"] in (["position", "velocity"], ["position"])
    assert "gains" not in params
    # deprecated in Jazzy's JTC ("use interpolate_from_desired_state and set feedback gains to zero")
    assert "open_loop_control" not in params


def test_gazebo_claims_position_only_and_the_others_position_and_velocity():
    """Checked on every tool: the velocity branch of gz_ros2_control's write() never runs."""
    for tool in TOOLS:
        for hardware in HARDWARE:
            expected = ["position"] if hardware == "gazebo" else ["position", "velocity"]
            for joint, (commands, _) in _interfaces(_urdf(hardware, tool)).items():
                assert commands == expected, f"{hardware} {tool} {joint}"
    for controller in TRAJECTORY_CONTROLLERS:
        assert _load("controllers_gazebo.yaml")[controller]["ros__parameters"]["command_interfaces"] == [
            "position"
        ]


def test_gazebo_names_its_own_controllers_file():
    plugin = _urdf("gazebo").find("gazebo/plugin")
    assert Path(plugin.findtext("parameters")) == ROOT / "config" / "controllers_gazebo.yaml"


def test_gazebo_position_loop_tracks_within_the_path_tolerance(parameters):
    """gz_ros2_control's loop: velocity = gain * update_rate * error, no feed-forward.

    The gain must not make the discrete loop oscillate (pole 1 - gain in [0, 1) per step:
    0 < gain <= 1). The constraints are the real robot's: path tolerances 0, unchecked by JTC
    (its reference follows the controllers' clock, which jumps under load on Gazebo:
    docs/gazebo.md), the path checked by task_node (config/control.yaml path_tolerance), and the
    goal tolerances the same. At speed v the loop lags v / (gain * rate); at the speed task_node's
    slowed plans keep to (ExecutorConfig.tracking_lag: v * tracking_lag <= tolerance / 2) that lag
    must stay under a tenth of the path tolerance.
    """
    from quirobot_control.procedures.drill_hole_types import ExecutorConfig

    gazebo, real = _load("controllers_gazebo.yaml"), _load("controllers.yaml")
    control = control_configuration(parameters)
    gain = gazebo["gz_ros_control"]["ros__parameters"]["position_proportional_gain"]
    rate = gazebo["controller_manager"]["ros__parameters"]["update_rate"]
    assert 0.0 < gain <= 1.0
    tracking_lag = ExecutorConfig.tracking_lag  # s, the dataclass default task_node uses
    for controller, joints in TRAJECTORY_CONTROLLERS.items():
        simulated = gazebo[controller]["ros__parameters"]["constraints"]
        measured = real[controller]["ros__parameters"]["constraints"]
        assert simulated == measured, controller
        for joint in joints:
            path = control.joint(joint).path_tolerance
            slowed_speed = 0.5 * path / tracking_lag
            assert slowed_speed / (gain * rate) <= 0.1 * path, joint


@pytest.mark.parametrize("hardware", HARDWARE)
@pytest.mark.parametrize("tool", TOOLS)
def test_initial_positions_lie_inside_the_soft_limits(tool, hardware):
    """Every state interface's initial_value lies within its joint's <safety_controller> soft limits."""
    root = _urdf(hardware, tool)
    joints = {joint.get("name"): joint for joint in root.findall("joint")}
    checked = 0
    for joint in root.find("ros2_control").findall("joint"):
        safety = joints[joint.get("name")].find("safety_controller")
        low, high = float(safety.get("soft_lower_limit")), float(safety.get("soft_upper_limit"))
        for state in joint.findall("state_interface"):
            for param in state.findall("param"):
                if param.get("name") == "initial_value":
                    assert state.get("name") == "position"
                    assert low <= float(param.text) <= high, (
                        f"{joint.get('name')}: {param.text} not in [{low}, {high}]"
                    )
                    checked += 1
    assert checked == len(root.find("ros2_control").findall("joint"))


@pytest.mark.parametrize("name", FILES)
def test_every_declared_controller_is_configured(name):
    controllers = _load(name)
    manager = controllers["controller_manager"]["ros__parameters"]
    declared = {key for key, value in manager.items() if isinstance(value, dict) and "type" in value}
    configured = set(controllers) - {"controller_manager", "gz_ros_control"}
    assert configured <= declared
    assert declared - configured <= {"joint_state_broadcaster"}


def test_check_refuses_a_velocity_command_in_gazebo(parameters):
    """`quirobot check` names a Gazebo joint that claims velocity (it would run open loop)."""
    root = _urdf("gazebo")
    joint = next(j for j in root.find("ros2_control").findall("joint") if j.get("name") == "wrist_yaw")
    ET.SubElement(joint, "command_interface", {"name": "velocity"})
    stage = next(
        r
        for r in check_urdf(ET.tostring(root, encoding="unicode"), parameters, samples=20)
        if r.name == "ros2_control"
    )
    assert stage.status == FAIL
    assert any("wrist_yaw" in problem and "open loop" in problem for problem in stage.problems), (
        stage.problems
    )
    shipped = check_urdf(robot_description("drill", "gazebo"), parameters, samples=20)
    assert next(r for r in shipped if r.name == "ros2_control").status == PASS


def test_the_drives_start_up_watchdog_outlasts_a_lost_spawner_answer(parameters):
    """drive_node's start-up watchdog (activation to the first command) must outlast the spawner's
    retry of a service answer lost to DDS discovery (bringup.launch.py's --service-call-timeout)
    plus the start-up itself (about 30 s on a loaded 2-core machine): a 30 s watchdog under a 70 s
    retry stopped the drives at start-up in CI's ROS tier."""
    launch = (ROOT / "launch" / "bringup.launch.py").read_text()
    match = re.search(r'"--service-call-timeout",\s*"([0-9.]+)"', launch)
    assert match, "bringup.launch.py passes no --service-call-timeout to its spawner"
    retry = float(match.group(1))
    assert control_configuration(parameters).watchdog_startup_timeout >= retry + 30.0
