"""Simulate QUIROBOT in Gazebo (Harmonic, ROS 2 Jazzy) through gz_ros2_control.

    ros2 launch quirobot gazebo.launch.py [tool:=drill|arthroscope|none] [world:=empty.sdf]
        [headless:=true|false]

Starts Gazebo running (-r, else the spawners time out; server only, -s, where there is no
display or with headless:=true), robot_state_publisher with the
hardware:=gazebo description, spawns the robot with its guide plane (report frame 0') at
structure.mount_height above the floor, bridges /clock, then spawns joint_state_broadcaster and,
once it is up, joint_trajectory_controller (and drill_feed_controller with the drill).
Controllers: config/controllers_gazebo.yaml (named by the description's <gazebo> block; position
commands only, see there; it also sets the controller manager's use_sim_time before gz_ros2_control
constructs it, which keeps the start-up from aborting Gazebo: see there). Every node runs on
Gazebo's clock (use_sim_time). How to run it and what is tested: docs/gazebo.md.
"""

# ruff: noqa: I001  (the repository's launch/ folder makes isort take ROS's `launch` for first-party)
import os

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, RegisterEventHandler
from launch.conditions import IfCondition
from launch.event_handlers import OnProcessExit
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import (
    EqualsSubstitution,
    LaunchConfiguration,
    PathJoinSubstitution,
    PythonExpression,
)
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from quirobot_description.launch_description import robot_description_parameter
from quirobot_description.parameters import load_parameters
from quirobot_description.urdf import TOOLS

#: The spawners wait this long (s of wall time) for the controller manager and for a switch
#: (defaults 10 s and 5 s): Gazebo loads the plugin and the robot first, slowly on a loaded machine.
SPAWNER_TIMEOUTS = ["--controller-manager-timeout", "120", "--switch-timeout", "60"]


def headless_default() -> str:
    """Default of `headless`: "true" where there is no display (no DISPLAY nor WAYLAND_DISPLAY)."""
    return "false" if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") else "true"


def generate_launch_description() -> LaunchDescription:
    tool = LaunchConfiguration("tool")
    world = LaunchConfiguration("world")
    server_only = PythonExpression(["'-s ' if '", LaunchConfiguration("headless"), "' == 'true' else ''"])
    mount_height = load_parameters().structure.mount_height  # m, the parameter file's
    robot_description = robot_description_parameter(hardware="gazebo", tool=tool)
    sim_time = {"use_sim_time": True}
    gazebo = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(
            PathJoinSubstitution([FindPackageShare("ros_gz_sim"), "launch", "gz_sim.launch.py"])
        ),
        launch_arguments={"gz_args": ["-r -v 3 ", server_only, world]}.items(),
    )
    state_publisher = Node(
        package="robot_state_publisher",
        executable="robot_state_publisher",
        parameters=[{"robot_description": robot_description, **sim_time}],
        output="screen",
    )
    spawn = Node(
        package="ros_gz_sim",
        executable="create",
        arguments=["-topic", "/robot_description", "-name", "quirobot", "-z", str(mount_height)],
        output="screen",
    )
    clock = Node(
        package="ros_gz_bridge",
        executable="parameter_bridge",
        arguments=["/clock@rosgraph_msgs/msg/Clock[gz.msgs.Clock"],
        parameters=[sim_time],
        output="screen",
    )

    def spawner(controller: str, **kwargs) -> Node:
        return Node(
            package="controller_manager",
            executable="spawner",
            arguments=[controller, "--controller-manager", "/controller_manager", *SPAWNER_TIMEOUTS],
            parameters=[sim_time],
            output="screen",
            **kwargs,
        )

    broadcaster = spawner("joint_state_broadcaster")
    arm = spawner("joint_trajectory_controller")
    feed = spawner("drill_feed_controller", condition=IfCondition(EqualsSubstitution(tool, "drill")))
    return LaunchDescription(
        [
            DeclareLaunchArgument(
                "tool",
                default_value="drill",
                choices=list(TOOLS),
                description="tool on the wrist: drill, arthroscope or none",
            ),
            DeclareLaunchArgument(
                "world", default_value="empty.sdf", description="Gazebo world file (its floor at z = 0)"
            ),
            DeclareLaunchArgument(
                "headless",
                default_value=headless_default(),
                choices=["true", "false"],
                description="Gazebo's server only, no GUI (default: true where there is no display)",
            ),
            gazebo,
            state_publisher,
            clock,
            spawn,
            RegisterEventHandler(OnProcessExit(target_action=spawn, on_exit=[broadcaster])),
            RegisterEventHandler(OnProcessExit(target_action=broadcaster, on_exit=[arm, feed])),
        ]
    )
