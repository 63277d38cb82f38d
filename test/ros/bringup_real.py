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
from quirobot_control.bridge.drive_bridge import DRIVES_UP, STATES_AT_HARDWARE
from quirobot_control.hardware.controllers import CONTROLLERS

#: drive_node's topics (the <ros2_control> block's joint_commands_topic / joint_states_topic).
COMMANDS = "/quirobot/joint_commands"
STATES = "/quirobot/joint_states"
#: The hardware component's name (the <ros2_control> block's).
HARDWARE = "QuirobotSystem"
STOPPED = "drives stopped: "
HANDSHAKE = "start-up: first controller command accepted"
#: drive_node's note of a controller command far from the measured pose before the handshake.
IGNORED = "start-up: ignored a command"
#: s (wall) for the controllers to come up: the launch's spawner asks again after a lost answer
#: (70 s each, bringup.launch.py's SWITCH_TIMEOUT) on a loaded machine.
START_UP = 180.0


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
    return _log(proc_output, ("drive_node",))


def wait_for_controllers(graph, proc_output) -> dict[str, str]:
    """Every controller of CONTROLLERS active within START_UP s (their states); else an error
    ending with what the spawner and drive_node printed of the start-up (start_up_log)."""
    return graph.wait_for_active_controllers(
        CONTROLLERS, timeout=START_UP, record=lambda: start_up_log(proc_output)
    )


def start_up_log(proc_output, lines: int = 30) -> str:
    """The last `lines` lines the spawners, and drive_node's warnings, errors, start-up and
    controller switches, wrote so far: why a controller did not come up, in a failed test's report."""
    keep = ("WARN", "ERROR", "FATAL", "start-up", "controllers", DRIVES_UP, STATES_AT_HARDWARE)
    written = _log(proc_output, ("spawner", "drive_node"), prefix=True).splitlines()
    shown = [line for line in written if "spawner" in line or any(k in line for k in keep)]
    return "\n".join(shown[-lines:])


def _log(proc_output, processes: tuple[str, ...], prefix: bool = False) -> str:
    """What the processes named (a substring of their process name) wrote so far, without colour
    escapes; with `prefix`, process by process, each line after its process name."""
    texts: dict[str, str] = {}
    for io in proc_output:
        if any(p in io.process_name for p in processes):
            texts[io.process_name] = texts.get(io.process_name, "") + io.text.decode(errors="replace")
    if prefix:
        texts = {n: "".join(f"[{n}] {line}\n" for line in t.splitlines()) for n, t in texts.items()}
    return re.sub(r"\x1b\[[0-9;]*m", "", "".join(texts.values()))


def stops(proc_output) -> list[str]:
    """The stop lines drive_node logged so far."""
    return [line for line in drive_node_log(proc_output).splitlines() if f"]: {STOPPED}" in line]
