"""What the hardware:=real launch tests share: the launch, drive_node's log, the tolerances.

`bringup.launch.py hardware:=real tool:=drill` (drive_backend simulated): ros2_control_node
with joint_state_topic_hardware_interface, the spawners, robot_state_publisher and drive_node
(SimulatedDrives on the MuJoCo plant). drive_node logs a stop once, as
"drives stopped: <reason>", and its start-up handshake events (see drive_bridge).

Import it only after `pytest.importorskip("launch_testing")` (it imports ROS at module level).
"""

from __future__ import annotations

import re

import launch_testing.actions
from ament_index_python.packages import get_package_share_directory
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource

from launch import LaunchDescription

CONTROLLERS = ("joint_state_broadcaster", "joint_trajectory_controller", "drill_feed_controller")
#: drive_node's topics (the <ros2_control> block's joint_commands_topic / joint_states_topic).
COMMANDS = "/quirobot/joint_commands"
STATES = "/quirobot/joint_states"
#: The hardware component's name (the <ros2_control> block's).
HARDWARE = "QuirobotSystem"
STOPPED = "drives stopped: "
HANDSHAKE = "start-up: first controller command accepted"


def bringup_real() -> LaunchDescription:
    launch_file = f"{get_package_share_directory('quirobot')}/launch/bringup.launch.py"
    return LaunchDescription(
        [
            IncludeLaunchDescription(
                PythonLaunchDescriptionSource(launch_file),
                launch_arguments={"hardware": "real", "tool": "drill", "drive_backend": "simulated"}.items(),
            ),
            launch_testing.actions.ReadyToTest(),
        ]
    )


def drive_node_log(proc_output) -> str:
    """Everything drive_node wrote so far (stdout and stderr), without colour escapes."""
    text = "".join(io.text.decode(errors="replace") for io in proc_output if "drive_node" in io.process_name)
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def stops(proc_output) -> list[str]:
    """The stop lines drive_node logged so far."""
    return [line for line in drive_node_log(proc_output).splitlines() if STOPPED in line]
