"""Show QUIROBOT in RViz2: robot_state_publisher fed by xacro, joint sliders, RViz2.

    ros2 launch quirobot display.launch.py [tool:=drill|arthroscope|none] [gui:=true|false]
                                           [rviz:=true|false] [replay:=true|false]

gui:=false runs joint_state_publisher (no window) instead of joint_state_publisher_gui; gui
defaults to true where joint_state_publisher_gui is installed, to false (with a line saying so)
where it is not (a minimal ROS install, the test environment);
rviz:=false leaves RViz2 out (headless, as in test/ros/test_launch_display.py).
replay:=true shows a recorded run instead: no joint publisher, and every node on the bag's clock
(use_sim_time), since a `quirobot simulate` log is stamped in simulated time from 0 s:

    ros2 launch quirobot display.launch.py replay:=true
    ros2 bag play quirobot_output/incision.mcap --clock 100
"""

# ruff: noqa: I001  (the repository's launch/ folder makes isort take ROS's `launch` for first-party)
from launch import LaunchDescription
from ament_index_python.packages import PackageNotFoundError, get_package_prefix
from launch.actions import DeclareLaunchArgument, LogInfo
from launch.conditions import IfCondition
from launch.substitutions import (
    AndSubstitution,
    LaunchConfiguration,
    NotSubstitution,
    PathJoinSubstitution,
)
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from quirobot_description.launch_description import robot_description_parameter
from quirobot_description.urdf import TOOLS

BOOLEAN = ["true", "false"]
GUI_PACKAGE = "joint_state_publisher_gui"


def installed(package: str) -> bool:
    """Whether the ament index knows `package` (what launch_ros needs to start its nodes)."""
    try:
        get_package_prefix(package)
    except PackageNotFoundError:
        return False
    return True


def generate_launch_description() -> LaunchDescription:
    share = FindPackageShare("quirobot")
    tool = LaunchConfiguration("tool")
    gui = LaunchConfiguration("gui")
    rviz = LaunchConfiguration("rviz")
    replay = LaunchConfiguration("replay")
    sim_time = {"use_sim_time": replay}
    robot_description = robot_description_parameter(tool=tool)
    has_gui = installed(GUI_PACKAGE)
    fallback = (
        []
        if has_gui
        else [
            LogInfo(
                msg=f"{GUI_PACKAGE} is not installed: no joint sliders (gui defaults to false, "
                "joint_state_publisher instead, no window)",
                condition=IfCondition(NotSubstitution(replay)),
            )
        ]
    )
    return LaunchDescription(
        [
            DeclareLaunchArgument(
                "tool",
                default_value="drill",
                choices=list(TOOLS),
                description="tool on the wrist: drill, arthroscope or none",
            ),
            DeclareLaunchArgument(
                "gui",
                default_value="true" if has_gui else "false",
                choices=BOOLEAN,
                description=f"joint sliders ({GUI_PACKAGE}; default true where it is installed)",
            ),
            DeclareLaunchArgument("rviz", default_value="true", choices=BOOLEAN, description="start RViz2"),
            DeclareLaunchArgument(
                "replay",
                default_value="false",
                choices=BOOLEAN,
                description="show a recorded run: no joint publisher, use_sim_time (bag play --clock)",
            ),
            Node(
                package="robot_state_publisher",
                executable="robot_state_publisher",
                parameters=[{"robot_description": robot_description, **sim_time}],
                output="screen",
            ),
            *fallback,
            Node(
                package=GUI_PACKAGE,
                executable=GUI_PACKAGE,
                condition=IfCondition(AndSubstitution(gui, NotSubstitution(replay))),
            ),
            Node(
                package="joint_state_publisher",
                executable="joint_state_publisher",
                condition=IfCondition(AndSubstitution(NotSubstitution(gui), NotSubstitution(replay))),
            ),
            Node(
                package="rviz2",
                executable="rviz2",
                arguments=["-d", PathJoinSubstitution([share, "rviz", "quirobot.rviz"])],
                parameters=[sim_time],
                condition=IfCondition(rviz),
                output="screen",
            ),
        ]
    )
