"""scope_servo_node's ROS parameters, each declared once (`quirobot_description.node_parameters`).

scope_servo_node declares them through `quirobot_description.ros_parameters.declare_parameters`;
docs/node_parameters.md's table is generated from this one.
"""

from __future__ import annotations

from quirobot_description.node_parameters import NodeParameter, NodeSchema

__all__ = ["SCOPE_SERVO_NODE"]

SCOPE_SERVO_NODE = NodeSchema(
    "scope_servo_node",
    (
        NodeParameter(
            "task",
            "string",
            "arthroscopy",
            "The arthroscopy task file (its portal, depth range, speed limits, dead-man timeout, no-go "
            'zones), a shipped name ("arthroscopy") or a path.',
        ),
        NodeParameter(
            "joint_states_topic",
            "string",
            "/quirobot/joint_states",
            "The measured joint states (sensor_msgs/JointState) the servo mode starts from.",
        ),
        NodeParameter(
            "command_topic",
            "string",
            "/joint_trajectory_controller/joint_trajectory",
            "Where the joint commands go (trajectory_msgs/JointTrajectory, one point each, as MoveIt "
            "Servo streams them to joint_trajectory_controller).",
        ),
        # Bounds (design assumption): at least 10 Hz, one command per dead-man timeout of the
        # shipped arthroscopy task (0.1 s, MoveIt Servo's incoming_command_timeout), so that one
        # command never outlives the dead-man (issue 33 items 4 and 10: at 1 Hz one command moved
        # the tip 20 mm); at most 1000 Hz, the drives' control rate (quirobot.yaml control_rate):
        # faster commands would be dropped between two control periods.
        NodeParameter(
            "rate",
            "double",
            100.0,
            "Rate of the servo's joint commands and of the view cone markers (MoveIt Servo's "
            "publish_period 0.01 s). Its period may not exceed the task's dead-man timeout (10 Hz at "
            "least for the shipped task): a slower rate is refused at start-up.",
            unit="Hz",
            low=10.0,
            high=1000.0,
        ),
    ),
)
