"""Start the kinematics services (compute_fk, compute_ik) in the robot's namespace.

    ros2 launch quirobot kinematics.launch.py [namespace:=quirobot]
                                              [orientation_mode:=full|approach]

Parameters come from config/kinematics.yaml; orientation_mode overrides it from the command line.
"""

# ruff: noqa: I001  (the repository's launch/ folder makes isort take ROS's `launch` for first-party)
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from quirobot_kinematics.service_translation import ORIENTATION_MODES


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(
        [
            DeclareLaunchArgument(
                "namespace", default_value="quirobot", description="namespace of compute_fk and compute_ik"
            ),
            DeclareLaunchArgument(
                "orientation_mode",
                default_value="full",
                choices=list(ORIENTATION_MODES),
                description="full: an IK pose must be reachable as given; approach: its roll is free",
            ),
            Node(
                package="quirobot",
                executable="kinematics_node",
                name="kinematics_node",
                namespace=LaunchConfiguration("namespace"),
                parameters=[
                    PathJoinSubstitution([FindPackageShare("quirobot"), "config", "kinematics.yaml"]),
                    {"orientation_mode": LaunchConfiguration("orientation_mode")},
                ],
                output="screen",
            ),
        ]
    )
