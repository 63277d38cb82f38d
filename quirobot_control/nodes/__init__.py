"""ROS 2 nodes of quirobot_control: thin adapters over the core (rclpy imported inside them only).

- drive_node: the drive side of joint_state_topic_hardware_interface (`ros2 run quirobot
  drive_node`), every behaviour in bridge.drive_bridge.

Nothing in the core imports this package.
"""

__all__: list[str] = []
