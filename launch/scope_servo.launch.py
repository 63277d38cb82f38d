"""Start the arthroscope's servo mode (scope_servo_node) beside a running stack.

    ros2 launch quirobot scope_servo.launch.py [task:=arthroscopy|FILE.yaml]

With the stack up (e.g. bringup.launch.py tool:=arthroscope) and the scope docked in the portal:
`ros2 service call /quirobot/scope/servo_mode std_srvs/srv/SetBool "{data: true}"`, then stream
geometry_msgs/TwistStamped on /quirobot/scope/servo (world frame, MoveIt Servo's convention); the
view cone is drawn from /quirobot/scope/view_cone. Parameters: docs/node_parameters.md.
"""

# ruff: noqa: I001  (the repository's launch/ folder makes isort take ROS's `launch` for first-party)
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(
        [
            DeclareLaunchArgument(
                "task",
                default_value="arthroscopy",
                description="the arthroscopy task file: portal, limits, no-go zones (a name or a path)",
            ),
            Node(
                package="quirobot",
                executable="scope_servo_node",
                parameters=[{"task": LaunchConfiguration("task")}],
                output="screen",
            ),
        ]
    )
