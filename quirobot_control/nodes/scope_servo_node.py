"""ROS 2 node `scope_servo_node`: the arthroscope's servo mode, a skin over procedures.scope_servo.

Behaviour (docking check, RCM solve, limits, dead-man hold, view cone) lives in the ROS-free
`ScopeServoSession` (tested in test/control/procedures/test_scope_servo.py); this node translates:

- /quirobot/scope/servo (geometry_msgs/TwistStamped, MoveIt Servo's convention: the scope tip's
  linear m/s and angular rad/s in `world`) -> the session's commands, stamped on receipt (the
  node's clock: a sender's clock cannot defeat the dead-man timeout);
- /quirobot/scope/servo_mode (std_srvs/SetBool): true enters the mode from the measured joints
  (refused, with the reason, unless the scope is docked in the portal), false leaves it;
- every 1/rate s while the mode is on: the next joint command as a one-point
  trajectory_msgs/JointTrajectory on `command_topic` (joint_trajectory_controller's topic
  interface, as MoveIt Servo streams), time_from_start one period;
- /quirobot/scope/view_cone (visualization_msgs/MarkerArray): the scope's view cone at the
  commanded pose (mode on) or the measured one (mode off), from the arthroscope's field of view.

Parameters: procedures.scope_servo_parameters (docs/node_parameters.md). rclpy is imported only
inside functions.
"""

from __future__ import annotations

import sys

import numpy as np

from quirobot_description.parameters import AXES, FEED_INDEX

ARM = AXES[:FEED_INDEX]


def main(args: list[str] | None = None) -> int:
    import rclpy
    from rclpy.executors import ExternalShutdownException

    rclpy.init(args=args)
    try:
        node = _make_node()
    except ValueError as error:  # a parameter or task file refused: one line naming it
        print(f"scope_servo_node: error: {' '.join(str(error).split())}", file=sys.stderr)
        rclpy.try_shutdown()
        return 2
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    return 0


def _make_node():
    from geometry_msgs.msg import TwistStamped
    from rclpy.duration import Duration
    from rclpy.node import Node
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import JointState
    from std_srvs.srv import SetBool
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
    from visualization_msgs.msg import MarkerArray

    from quirobot_control.nodes.markers import marker_array
    from quirobot_control.planning.arthroscopy import load_arthroscopy
    from quirobot_control.procedures.procedure import task_kind
    from quirobot_control.procedures.scope_servo import ScopeServoSession
    from quirobot_control.procedures.scope_servo_parameters import SCOPE_SERVO_NODE
    from quirobot_description.parameters import load_parameters
    from quirobot_description.ros_parameters import declare_parameters

    class ScopeServoNode(Node):
        def __init__(self) -> None:
            super().__init__("scope_servo_node")
            parameters = declare_parameters(self, SCOPE_SERVO_NODE)
            kind, path = task_kind(parameters["task"])
            if kind != "arthroscopy":
                raise ValueError(f"task {parameters['task']!r} is a {kind} task, not an arthroscopy task")
            self.session = ScopeServoSession(load_arthroscopy(path), load_parameters())
            self.period = 1.0 / parameters["rate"]
            self.q: np.ndarray | None = None
            self.create_subscription(
                JointState, parameters["joint_states_topic"], self._on_states, qos_profile_sensor_data
            )
            self.create_subscription(TwistStamped, "/quirobot/scope/servo", self._on_twist, 10)
            self.create_service(SetBool, "/quirobot/scope/servo_mode", self._on_mode)
            self.commands = self.create_publisher(JointTrajectory, parameters["command_topic"], 10)
            self.cone = self.create_publisher(MarkerArray, "/quirobot/scope/view_cone", 10)
            self.create_timer(self.period, self._tick)
            self.get_logger().info(f"scope_servo_node: portal {self.session.task.portal.tolist()} m")

        def now(self) -> float:
            return self.get_clock().now().nanoseconds * 1e-9

        def _on_states(self, message) -> None:
            position = dict(zip(message.name, message.position, strict=False))
            if all(name in position for name in ARM):
                self.q = np.array([position[name] for name in ARM])

        def _on_twist(self, message) -> None:
            v, w = message.twist.linear, message.twist.angular
            try:
                self.session.receive([v.x, v.y, v.z], [w.x, w.y, w.z], self.now())
            except ValueError as error:
                self.get_logger().warn(f"/quirobot/scope/servo: {error}")

        def _on_mode(self, request, response):
            if request.data:
                response.success, response.message = self.session.enter(self.q, self.now())
            else:
                response.success, response.message = self.session.leave()
            self.get_logger().info(f"/quirobot/scope/servo_mode {request.data}: {response.message}")
            return response

        def _tick(self) -> None:
            step = self.session.step(self.now(), self.period)
            stamp = self.get_clock().now().to_msg()
            if step is not None:
                message = JointTrajectory(joint_names=list(ARM))
                message.header.stamp = stamp
                point = JointTrajectoryPoint(positions=[float(v) for v in step.q])
                point.velocities = [float(v) for v in step.qd]
                point.time_from_start = Duration(seconds=self.period).to_msg()
                message.points.append(point)
                self.commands.publish(message)
            markers = self.session.view_cone_markers(None if step is not None else self.q)
            if markers or self.q is not None:
                self.cone.publish(marker_array(markers, stamp))

    return ScopeServoNode()


if __name__ == "__main__":
    sys.exit(main())
