"""Start the arthroscope's servo mode (scope_servo_node, a lifecycle node) beside a running stack.

    ros2 launch quirobot scope_servo.launch.py [task:=arthroscopy|FILE.yaml]

The node starts and is configured with the task file's portal (inactive: the view cone follows
the measured joints). With the stack up (e.g. bringup.launch.py tool:=arthroscope) and the scope
docked in the portal, `ros2 lifecycle set /scope_servo_node activate` enters the servo mode, then
stream geometry_msgs/TwistStamped on /quirobot/scope/servo (world frame, MoveIt Servo's
convention); `ros2 lifecycle set /scope_servo_node deactivate` leaves it and holds. The view cone
is drawn from /quirobot/scope/view_cone. Parameters: docs/node_parameters.md.
"""

# ruff: noqa: I001  (the repository's launch/ folder makes isort take ROS's `launch` for first-party)
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, EmitEvent
from launch.events import matches_action
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import LifecycleNode
from launch_ros.events.lifecycle import ChangeState
from lifecycle_msgs.msg import Transition


def generate_launch_description() -> LaunchDescription:
    node = LifecycleNode(
        package="quirobot",
        executable="scope_servo_node",
        name="scope_servo_node",
        namespace="",
        parameters=[{"task": LaunchConfiguration("task")}],
        output="screen",
    )
    # Configure only: entering the mode (activate) needs a docked scope and is the surgeon's call.
    configure = ChangeState(
        lifecycle_node_matcher=matches_action(node), transition_id=Transition.TRANSITION_CONFIGURE
    )
    return LaunchDescription(
        [
            DeclareLaunchArgument(
                "task",
                default_value="arthroscopy",
                description="the arthroscopy task file: portal, limits, no-go zones (a name or a path)",
            ),
            node,
            EmitEvent(event=configure),
        ]
    )
