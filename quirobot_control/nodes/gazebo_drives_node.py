"""ROS 2 node `gazebo_drives_node`: the drive side task_node needs, on Gazebo (gazebo.launch.py).

A skin over simulation.gazebo_drives.GazeboDrives (its module doc says what it answers and why):

- /quirobot/drives/state (quirobot/msg/DrivesState, latched): on every change and once a second;
- /quirobot/drilling_context (msg/DrillingContext, latched) -> the hole in force, or refused
  with the reason in the state (`hole_refused`) and the log;
- /quirobot/drives/<enable|disable|home|acknowledge_stop> (std_srvs/Trigger), as drive_node's,
  which task_node's /quirobot/<name> services call.

No parameters beyond use_sim_time (the launch file sets it: the state's stamp on Gazebo's
clock). rclpy is imported only inside functions.
"""

from __future__ import annotations

#: s between two publications of an unchanged state (drive_node's once a second).
REPUBLISH_PERIOD = 1.0


def main(args: list[str] | None = None) -> int:
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from quirobot_control.nodes.rclpy_workarounds import (
        join_signal_thread,
        sigint_without_keyboard_interrupt,
        spin_until_shutdown,
    )

    # Ctrl-C reaches a launch's whole process group and launch sends its own SIGINT too: the
    # second one raised KeyboardInterrupt inside destroy_node (exit -2, a CI run's log).
    sigint_without_keyboard_interrupt()
    rclpy.init(args=args)
    node = _make_node()
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    try:
        spin_until_shutdown(executor, node.context)
    finally:
        join_signal_thread()
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


def _make_node():
    from quirobot.msg import DrillingContext, DrivesState
    from rclpy.node import Node
    from rclpy.qos import DurabilityPolicy, QoSProfile
    from std_srvs.srv import Trigger

    from quirobot_control.nodes.hole_context_msg import from_message
    from quirobot_control.simulation.gazebo_drives import GazeboDrives

    latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)

    class GazeboDrivesNode(Node):
        def __init__(self) -> None:
            super().__init__("gazebo_drives_node")
            self.drives = GazeboDrives()
            self.state = self.create_publisher(DrivesState, "/quirobot/drives/state", latched)
            self.create_subscription(DrillingContext, "/quirobot/drilling_context", self._on_context, latched)
            for name in ("enable", "disable", "home", "acknowledge_stop"):
                self.create_service(Trigger, f"/quirobot/drives/{name}", self._service(name))
            self.create_timer(REPUBLISH_PERIOD, self.publish_state)
            self.publish_state()
            self.get_logger().info(
                "Gazebo's drive side: enabled, homed (absolute joints), no thrust modelled"
            )

        def publish_state(self) -> None:
            fields = self.drives.state()
            message = DrivesState()
            message.stamp = self.get_clock().now().to_msg()
            message.lifecycle, message.enabled, message.homed = fields.lifecycle, fields.enabled, fields.homed
            message.commanded = fields.commanded
            message.hole_goal_id = fields.hole_goal_id
            message.hole_refused_goal_id, message.hole_refused = (
                fields.hole_refused_goal_id,
                fields.hole_refused,
            )
            message.hole_unwatched = fields.hole_unwatched
            self.state.publish(message)

        def _on_context(self, message) -> None:
            try:
                goal_id, context = from_message(message)
                self.get_logger().info(self.drives.set_drilling_context(goal_id, context))
            except ValueError as error:  # HoleRefusedError too
                self.get_logger().error(f"drilling context refused: {' '.join(str(error).split())}")
            self.publish_state()

        def _service(self, name: str):
            def answer(request, response):
                response.success, response.message = True, getattr(self.drives, name)()
                self.get_logger().info(f"/quirobot/drives/{name}: {response.message}")
                self.publish_state()
                return response

            return answer

    return GazeboDrivesNode()
