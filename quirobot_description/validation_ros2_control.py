"""The ros2_control stage of the URDF check: one <ros2_control> block whose hardware plugin is
known and set up, and whose joints are the URDF's movable ones with the interfaces the
controllers claim (position and velocity commands; position only under Gazebo)."""

from __future__ import annotations

from quirobot_description.urdf_elements import MOVABLE, ParsedUrdf

REQUIRED_COMMANDS = ("position", "velocity")
#: gz_ros2_control's write() (jazzy gz_system.cpp) applies a claimed velocity command as is and
#: ignores the position command then: in Gazebo a joint commands position only.
GAZEBO_PLUGIN = "gz_ros2_control/GazeboSimSystem"
REQUIRED_STATES = ("position", "velocity", "effort")
HARDWARE_PLUGINS = {
    "mock_components/GenericSystem": (),
    "gz_ros2_control/GazeboSimSystem": (),
    "joint_state_topic_hardware_interface/JointStateTopicSystem": (
        "joint_commands_topic",
        "joint_states_topic",
        "trigger_joint_command_threshold",
    ),
}


def _is_negative(text: str) -> bool:
    try:
        return float(text) < 0.0
    except ValueError:
        return False


def stage_ros2_control(robot: ParsedUrdf) -> list[str]:
    systems = robot.root.findall("ros2_control")
    if len(systems) != 1:
        return [f"expected one <ros2_control> block, found {len(systems)}"]
    system = systems[0]
    problems = []
    plugin = system.find("hardware/plugin")
    plugin_name = (plugin.text or "").strip() if plugin is not None else ""
    if plugin_name not in HARDWARE_PLUGINS:
        problems.append(f"hardware plugin {plugin_name!r} is not one of {', '.join(HARDWARE_PLUGINS)}")
    else:
        params = {p.get("name"): (p.text or "").strip() for p in system.findall("hardware/param")}
        for required in HARDWARE_PLUGINS[plugin_name]:
            if not params.get(required):
                problems.append(f"hardware {plugin_name}: parameter {required!r} must be set explicitly")
        threshold = params.get("trigger_joint_command_threshold")
        if threshold and not _is_negative(threshold):
            # The plugin publishes only while sum |position state - command| > threshold: a robot
            # holding still would get no commands and drive_node's watchdog would stop it.
            problems.append(
                f"hardware {plugin_name}: trigger_joint_command_threshold {threshold!r} must be negative "
                f"(a command on every cycle)"
            )
        if plugin_name.startswith("gz_ros2_control"):
            gz = robot.root.findall("gazebo/plugin")
            if not any(
                p.get("filename") == "gz_ros2_control-system" and p.findtext("parameters") for p in gz
            ):
                problems.append(
                    "hardware gazebo: no <gazebo> gz_ros2_control-system plugin with <parameters>"
                )
    movable = {name for name, joint in robot.joints.items() if joint.get("type") in MOVABLE}
    declared = {}
    for joint in system.findall("joint"):
        name = joint.get("name", "")
        declared[name] = joint
        if name not in robot.joints:
            problems.append(f"ros2_control joint {name!r} does not exist in the URDF")
            continue
        if name not in movable:
            problems.append(f"ros2_control joint {name!r} is {robot.joints[name].get('type')}, not movable")
        commands = [c.get("name") for c in joint.findall("command_interface")]
        states = [s.get("name") for s in joint.findall("state_interface")]
        if plugin_name == GAZEBO_PLUGIN and "velocity" in commands:
            problems.append(
                f"ros2_control joint {name!r}: a velocity command makes gz_ros2_control track open loop"
            )
        for required in REQUIRED_COMMANDS if plugin_name != GAZEBO_PLUGIN else ("position",):
            if required not in commands:
                problems.append(f"ros2_control joint {name!r}: no {required} command interface")
        if "effort" in commands and "position" in commands:
            problems.append(
                f"ros2_control joint {name!r}: effort and position commands together break gz_ros2_control"
            )
        for required in REQUIRED_STATES:
            if required not in states:
                problems.append(f"ros2_control joint {name!r}: no {required} state interface")
        limit = robot.joints[name].find("limit")
        for command in joint.findall("command_interface"):
            bounds = {p.get("name"): p.text for p in command.findall("param")}
            if command.get("name") == "position" and limit is not None and {"min", "max"} <= set(bounds):
                low, high = float(bounds["min"]), float(bounds["max"])
                lower, upper = float(limit.get("lower", 0)), float(limit.get("upper", 0))
                if low < lower - 1e-12 or high > upper + 1e-12:
                    problems.append(
                        f"ros2_control joint {name!r}: position command range [{low:g}, {high:g}] "
                        f"exceeds the joint limits [{lower:g}, {upper:g}]"
                    )
    for name in sorted(movable - set(declared)):
        problems.append(f"joint {name!r} has no ros2_control interfaces")
    return problems
