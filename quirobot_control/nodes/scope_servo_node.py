"""ROS 2 lifecycle node `scope_servo_node`: the arthroscope's servo mode, a skin over
procedures.scope_servo.

Behaviour (docking check, RCM solve, limits, dead-man hold, the fault, view cone) lives in the
ROS-free `ScopeServoSession` (tested in test/control/procedures/test_scope_servo.py); this node
translates. The mode is the node's lifecycle (rclpy.lifecycle, as ros2_control's controllers;
README, "Servo the scope"):

- configure: the session over the task file's portal (the file is read at start-up: a refused
  file is one line and exit 2); cleanup drops it;
- activate (`ros2 lifecycle set /scope_servo_node activate`): enters the servo mode from the
  measured joints; refused (the transition fails, the reason logged) unless they are fresh (at
  most the task's joint_state_timeout old by their header stamps) and hold the scope docked in
  the portal;
- deactivate: leaves it; the scope holds at the last command, sent once more with zero velocity;
- a fault (the measured scope axis off the portal, `ScopeServoSession.measure`; no fresh joint
  states, the session's joint-state watchdog at every command) leaves the mode the same way and
  deactivates the node, the reason logged: no more commands until activated again;
- /quirobot/scope/servo (geometry_msgs/TwistStamped, MoveIt Servo's convention: the scope tip's
  linear m/s and angular rad/s in `world`) -> the session's commands with their header's stamp
  and frame_id: a twist stamped more than the dead-man timeout from the node's clock (an old or
  unstamped one, or one from a sender on another clock) or in another frame is refused, and so
  is one outside the mode; each kind of refusal is logged at once, then at most every 2 s with
  the count (`RefusalLog`). The stamps are compared with the node's clock: sender and node on
  one clock (use_sim_time alike; the launch file's `use_sim_time`);
- every 1/rate s while active: the next joint command as a one-point
  trajectory_msgs/JointTrajectory on `command_topic` (joint_trajectory_controller's topic
  interface, as MoveIt Servo streams), time_from_start one period (a lifecycle publisher: silent
  unless active);
- /quirobot/scope/view_cone (visualization_msgs/MarkerArray): the scope's view cone at the
  commanded pose (active) or the measured one (configured, inactive), from the arthroscope's
  field of view.

Parameters: procedures.scope_servo_parameters (docs/node_parameters.md); a `rate` whose period is
longer than the task's dead-man timeout is refused at start-up (one line, exit 2). rclpy is
imported only inside functions.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from quirobot_description.parameters import axes_for

#: The arthroscope's commanded axes: the arm's joints (the scope has no axis of its own).
SCOPE_AXES = axes_for("arthroscope")


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
    from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import JointState
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
    from visualization_msgs.msg import MarkerArray

    from quirobot_control.nodes.markers import marker_array
    from quirobot_control.planning.arthroscopy import load_arthroscopy
    from quirobot_control.procedures.procedure import task_kind
    from quirobot_control.procedures.scope_servo import (
        RefusalLog,
        ScopeServoSession,
        TwistRefusal,
        check_command_period,
    )
    from quirobot_control.procedures.scope_servo_parameters import SCOPE_SERVO_NODE
    from quirobot_description.parameters import load_parameters
    from quirobot_description.ros_parameters import declare_parameters

    SUCCESS, FAILURE = TransitionCallbackReturn.SUCCESS, TransitionCallbackReturn.FAILURE
    ENTER = "ros2 lifecycle set /scope_servo_node activate"

    class ScopeServoNode(LifecycleNode):
        def __init__(self) -> None:
            super().__init__("scope_servo_node")
            parameters = declare_parameters(self, SCOPE_SERVO_NODE)
            kind, path = task_kind(parameters["task"])
            if kind != "arthroscopy":
                raise ValueError(f"task {parameters['task']!r} is a {kind} task, not an arthroscopy task")
            self.task = load_arthroscopy(path)
            self.session: ScopeServoSession | None = None  # None: unconfigured
            self.period = 1.0 / parameters["rate"]
            check_command_period(self.task, self.period)
            self.refusal_log = RefusalLog()
            self.q: np.ndarray | None = None
            self.create_subscription(
                JointState, parameters["joint_states_topic"], self._on_states, qos_profile_sensor_data
            )
            self.create_subscription(TwistStamped, "/quirobot/scope/servo", self._on_twist, 10)
            self.commands = self.create_lifecycle_publisher(JointTrajectory, parameters["command_topic"], 10)
            self.cone = self.create_publisher(MarkerArray, "/quirobot/scope/view_cone", 10)
            self.create_timer(self.period, self._tick)

        def now(self) -> float:
            return self.get_clock().now().nanoseconds * 1e-9

        def on_configure(self, state) -> TransitionCallbackReturn:
            self.session = ScopeServoSession(self.task, load_parameters())
            self.get_logger().info(f"configured: portal {self.task.portal.tolist()} m; enter: {ENTER}")
            return SUCCESS

        def on_cleanup(self, state) -> TransitionCallbackReturn:
            self.session = None
            return SUCCESS

        def on_activate(self, state) -> TransitionCallbackReturn:
            started, why = self.session.enter(self.now())
            if not started:
                self.get_logger().error(f"activate refused: {why}")
                return FAILURE
            self.get_logger().info(why)
            return super().on_activate(state)  # enables the command publisher

        def on_deactivate(self, state) -> TransitionCallbackReturn:
            if self.session.active:  # else it left on a fault, already logged
                self.get_logger().info(self.session.leave()[1])
            self._send_hold()
            return super().on_deactivate(state)

        def on_shutdown(self, state) -> TransitionCallbackReturn:
            self._leave_and_hold()
            return SUCCESS

        def on_error(self, state) -> TransitionCallbackReturn:  # a transition raised: hold, unconfigure
            self._leave_and_hold()
            self.session = None
            return super().on_error(state)

        def _leave_and_hold(self) -> None:
            if self.session is not None and self.session.active:
                self.get_logger().info(self.session.leave()[1])
                self._send_hold()

        def _send_hold(self) -> None:
            """The last command once more, at rest: the controller holds the scope there."""
            if self.session.hold is not None:
                zero = [0.0] * len(SCOPE_AXES)
                self._publish(self.session.hold, zero, self.get_clock().now().to_msg())

        def _publish(self, q, qd, stamp) -> None:
            message = JointTrajectory(joint_names=list(SCOPE_AXES))
            message.header.stamp = stamp
            point = JointTrajectoryPoint(positions=[float(v) for v in q], velocities=[float(v) for v in qd])
            point.time_from_start = Duration(seconds=self.period).to_msg()
            message.points.append(point)
            self.commands.publish(message)

        def _on_states(self, message) -> None:
            position = dict(zip(message.name, message.position, strict=False))
            if not all(name in position for name in SCOPE_AXES):
                return
            self.q = np.array([position[name] for name in SCOPE_AXES])
            if self.session is not None:
                self._fault_if(self.session.measure(self.q, _seconds(message.header.stamp), self.now()))

        def _fault_if(self, fault: str | None) -> None:
            """A fault left the mode (the scope held): log it and deactivate."""
            if fault is not None:
                self.get_logger().error(f"fault, the scope held: {fault}")
                self.trigger_deactivate()

        def _on_twist(self, message) -> None:
            v, w = message.twist.linear, message.twist.angular
            linear, angular = [v.x, v.y, v.z], [w.x, w.y, w.z]
            if self.session is None:
                refusal = TwistRefusal("off", "scope_servo_node is unconfigured (no portal loaded)")
            else:
                stamp, frame = _seconds(message.header.stamp), message.header.frame_id
                refusal = self.session.receive(linear, angular, self.now(), stamp, frame)
                if refusal is None:
                    return
            if refusal.kind == "off":
                refusal = TwistRefusal("off", f"{refusal.why}; enter it: {ENTER}")
            line = self.refusal_log.report(refusal, time.monotonic())
            if line is not None:
                self.get_logger().warning(f"/quirobot/scope/servo: {line}")

        def _tick(self) -> None:
            if self.session is None:
                return
            was_active = self.session.active
            step = self.session.step(self.now(), self.period)
            stamp = self.get_clock().now().to_msg()
            if step is not None:
                self._publish(step.q, step.qd, stamp)
            elif was_active:
                self._fault_if(self.session.fault)
            markers = self.session.view_cone_markers(None if step is not None else self.q)
            if markers:
                self.cone.publish(marker_array(markers, stamp))

    return ScopeServoNode()


def _seconds(stamp) -> float:
    """s of a builtin_interfaces/Time."""
    return stamp.sec + stamp.nanosec * 1e-9


if __name__ == "__main__":
    sys.exit(main())
