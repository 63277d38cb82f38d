"""ROS 2 node `drive_node`: the drive side of topic_based_ros2_control (thin adapter).

Subscribes to the controllers' commands (sensor_msgs/msg/JointState on
/quirobot/joint_commands: name, position, velocity) and publishes the joint states
(/quirobot/joint_states) at the control rate, both with sensor-data QoS, as
topic_based_ros2_control/TopicBasedSystem expects (hardware:=real in the URDF). Every behaviour
is in `quirobot_control.drive_bridge.DriveBridge`; rclpy is imported only inside `main`.

Parameters:
- commands_topic, states_topic: defaults as in the URDF's <ros2_control> block.
- drive_backend: "simulated" (SimulatedDrives on the MuJoCo plant, default) or "canopen" (the
  CiA 402 servo drives on the CAN buses of the parameter file, canopen.channels).
- can_interface: python-can interface of the buses (default socketcan).
- can_channels: "bus=channel" pairs (e.g. "can0=vcan0,can1=vcan1,can2=vcan2") for buses whose
  channel is not their own name (default: none).

A start-up failure (no such CAN interface, a node that does not answer, ...) is logged in one
line and the node exits with status 1 without enabling anything. On shutdown every drive is
stopped and the buses are released.
"""

from __future__ import annotations

import sys


def main(args: list[str] | None = None) -> int:
    import rclpy
    from rclpy.node import Node
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import JointState

    from quirobot_control.canopen_backend import CanBusConfig, parse_channel_map
    from quirobot_control.drive_bridge import BridgeError, DriveBridge, open_backend
    from quirobot_control.incision import control_configuration
    from quirobot_description.parameters import load_parameters

    rclpy.init(args=args)
    node = Node("drive_node")
    commands_topic = node.declare_parameter("commands_topic", "/quirobot/joint_commands").value
    states_topic = node.declare_parameter("states_topic", "/quirobot/joint_states").value
    backend_name = node.declare_parameter("drive_backend", "simulated").value
    can_interface = node.declare_parameter("can_interface", "socketcan").value
    can_channels = node.declare_parameter("can_channels", "").value
    try:
        params = load_parameters()
        control = control_configuration(params)
        can = CanBusConfig(can_interface, parse_channel_map(can_channels))
        bridge = DriveBridge(params, control, open_backend(backend_name, params, control, can=can))
    except (ValueError, OSError) as error:
        node.get_logger().fatal(f"drive start-up failed: {' '.join(str(error).split())}")
        node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
        return 1
    node.get_logger().info(f"drives up ({backend_name} backend)")
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
        for problem in bridge.close():
            node.get_logger().warning(f"shutdown: {problem}")
        node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
