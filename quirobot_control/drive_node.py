"""ROS 2 node `drive_node`: the drive side of topic_based_ros2_control (thin adapter).

Subscribes to the controllers' commands (sensor_msgs/msg/JointState on
/quirobot/joint_commands: name, position, velocity) and publishes the joint states
(/quirobot/joint_states) at the control rate, both with sensor-data QoS, as
topic_based_ros2_control/TopicBasedSystem expects (hardware:=real in the URDF). Every behaviour
is in `quirobot_control.drive_bridge.DriveBridge`; rclpy is imported only inside `main`.

Parameters: commands_topic, states_topic (defaults as in the URDF's <ros2_control> block).
"""

from __future__ import annotations

import sys


def main(args: list[str] | None = None) -> int:
    import rclpy
    from rclpy.node import Node
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import JointState

    from quirobot_control.drive_bridge import BridgeError, DriveBridge
    from quirobot_control.incision import control_configuration
    from quirobot_description.parameters import load_parameters

    rclpy.init(args=args)
    params = load_parameters()
    control = control_configuration(params)
    bridge = DriveBridge(params, control)
    node = Node("drive_node")
    commands_topic = node.declare_parameter("commands_topic", "/quirobot/joint_commands").value
    states_topic = node.declare_parameter("states_topic", "/quirobot/joint_states").value
    publisher = node.create_publisher(JointState, states_topic, qos_profile_sensor_data)
    reported = {"stop": None}

    def on_command(message: JointState) -> None:
        try:
            bridge.command(list(message.name), list(message.position), list(message.velocity))
        except BridgeError as error:
            node.get_logger().error(f"command refused: {error}")

    def on_timer() -> None:
        sample = bridge.step()
        message = JointState()
        message.header.stamp = node.get_clock().now().to_msg()
        message.name = list(sample.names)
        message.position = sample.position
        message.velocity = sample.velocity
        message.effort = sample.effort
        publisher.publish(message)
        if sample.stop_reason and reported["stop"] != sample.stop_reason:
            reported["stop"] = sample.stop_reason
            node.get_logger().error(f"drives stopped: {sample.stop_reason}")

    node.create_subscription(JointState, commands_topic, on_command, qos_profile_sensor_data)
    node.create_timer(control.dt, on_timer)
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    finally:
        node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
