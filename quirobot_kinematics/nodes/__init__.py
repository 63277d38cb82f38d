"""ROS 2 nodes of quirobot_kinematics: thin adapters over the core (rclpy imported inside them only).

- kinematics_node: MoveIt's GetPositionFK / GetPositionIK services on the closed-form kinematics
  (`ros2 run quirobot kinematics_node`), the translation in quirobot_kinematics.service_translation.

Nothing in the core imports this package.
"""

__all__: list[str] = []
