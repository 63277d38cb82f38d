"""Start the arthroscope's servo mode (scope_servo_node, a lifecycle node) beside a running stack.

    ros2 launch quirobot scope_servo.launch.py [task:=arthroscopy|FILE.yaml] [use_sim_time:=false|true]

The node starts and is configured with the task file's portal (inactive: the view cone follows
the measured joints). With the stack up (e.g. bringup.launch.py tool:=arthroscope) and the scope
docked in the portal, `ros2 lifecycle set /scope_servo_node activate` enters the servo mode, then
stream geometry_msgs/TwistStamped on /quirobot/scope/servo (world frame, MoveIt Servo's
convention, each stamped with the node's clock: one older than the dead-man timeout, or in another
frame, is refused); `ros2 lifecycle set /scope_servo_node deactivate` leaves it and holds. The
joint states must be fresh too (the task's joint_state_timeout): with a stack on the simulated
clock (bringup.launch.py sim_clock:=true) give use_sim_time:=true. The view cone is drawn from
/quirobot/scope/view_cone. Parameters: docs/node_parameters.md.
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
        parameters=[
            {"task": LaunchConfiguration("task"), "use_sim_time": LaunchConfiguration("use_sim_time")}
        ],
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
            DeclareLaunchArgument(
                "use_sim_time",
                default_value="false",
                choices=["false", "true"],
                description="the node's clock, which the twists' and joint states' stamps are checked "
                "against: true beside a stack on the simulated clock (bringup.launch.py sim_clock:=true)",
            ),
            node,
            EmitEvent(event=configure),
        ]
    )
