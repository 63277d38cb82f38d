"""ROS 2 lifecycle node `task_node`: the task-level API (thin adapter over planning.drill_hole).

- Action server /quirobot/drill_hole (quirobot/action/DrillHole): the goal is checked and planned
  by `plan_drill_hole` from the measured joint pose; a goal that cannot be done ends at once,
  aborted, with success false and the reason in `message` (an action rejection carries no text).
  The plan runs through ros2_control: the arm's part on joint_trajectory_controller and the feed's
  on drill_feed_controller (FollowJointTrajectory), both goals stamped with the same start time
  (`start_delay`, default 2 s, ahead: a goal accepted after its start time makes the controller
  jump to the sample at that time) so the controllers run them in step. Every phase but the feed
  and the dwell is slowed (`slowed_for_lag`) so that the measured round-trip lag of the joint
  states (`tracking_lag`, default 50 ms) stays inside half the controllers' path tolerances
  (config/controllers.yaml). Feedback at
  `feedback_rate` (default 50 Hz): the plan's phase, progress, and from the measured joint
  states the tip depth past the entry and its distance from the axis (FK) and the feed's effort
  as the thrust.
- Cancel (CancelPolicy): with the bit in a bone phase, the feed retracts along the axis out of the
  bone and the goal ends canceled; elsewhere, on a second cancel or on an error (a drive stop on
  /quirobot/drive_stop, a controller aborting, joint states lost) the controllers' goals are
  cancelled at once (they hold) and the goal ends canceled or aborted with the reason.
- /quirobot/state (quirobot/msg/OperatingState, transient local): enabled, homed, busy, fault and
  its reason, phase; republished on every change and once a second. enabled, homed and the
  drives' stop come from drive_node's /quirobot/drives/state (its hardware component); a goal is
  refused while the drives are disabled, not homed or stopped.
- Services (std_srvs/Trigger) go through the hardware component's lifecycle in drive_node:
  /quirobot/enable and /quirobot/disable call /quirobot/drives/enable and /quirobot/drives/disable
  (activate: drives enabled at the measured pose; deactivate: inverters off, brakes), refused
  while busy; /quirobot/reset_fault calls /quirobot/drives/acknowledge_stop when the drives have
  a latched stop (every drive's fault reset, logged) and clears the node's own fault latch; then
  /quirobot/enable drives again (nothing restarts by itself); /quirobot/home calls
  /quirobot/drives/home (the hardware's homing sequence, while disabled).
- /diagnostics (diagnostic_msgs/DiagnosticArray): the operating state as "quirobot/task"
  (bridge.diagnostics.task_diagnostic; ERROR with the fault's reason), on every change and once a
  second. drive_node publishes the drives' entries.

The node configures and activates itself at start-up (parameter `autostart`, default true);
goals are refused unless it is active. rclpy is imported only inside functions.
"""

from __future__ import annotations

import sys
import threading
import time


def main(args: list[str] | None = None) -> int:
    import rclpy
    from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor

    rclpy.init(args=args)
    node = _make_node()
    executor = MultiThreadedExecutor(num_threads=4)
    executor.add_node(node)
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    return 0


#: s without joint states (the node's clock) that ends a goal: "joint states lost".
STATES_LOST = 0.5
#: s of wall time without joint states after which they count as lost on any clock.
STATES_LOST_WALL = 5.0


def _make_node():  # noqa: C901, PLR0915  (one class closing over the ROS imports)
    import numpy as np
    import yaml
    from action_msgs.msg import GoalStatus
    from control_msgs.action import FollowJointTrajectory
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
    from quirobot.action import DrillHole
    from quirobot.msg import DrivesState, OperatingState
    from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
    from rclpy.callback_groups import ReentrantCallbackGroup
    from rclpy.duration import Duration
    from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
    from rclpy.qos import DurabilityPolicy, QoSProfile, qos_profile_sensor_data
    from sensor_msgs.msg import JointState
    from std_srvs.srv import Trigger
    from trajectory_msgs.msg import JointTrajectory as TrajectoryMsg
    from trajectory_msgs.msg import JointTrajectoryPoint

    from quirobot_control.bridge.diagnostics import task_diagnostic
    from quirobot_control.loop.control_config import control_configuration
    from quirobot_control.planning.drill_hole import (
        BONE_PHASES,
        Action,
        CancelPolicy,
        DrillGoal,
        Event,
        GoalRejectedError,
        State,
        path_tolerances,
        phase_progress,
        plan_cancel_retract,
        plan_drill_hole,
        slowed_for_lag,
        tip_progress,
        waypoints,
    )
    from quirobot_control.planning.tasks import Kinematics, load_task
    from quirobot_description.data_files import find_data_file
    from quirobot_description.parameters import AXES, FEED_INDEX, load_parameters
    from quirobot_kinematics import KinematicModel

    arm_joints = AXES[:FEED_INDEX]
    feed_joints = AXES[FEED_INDEX:]

    def to_duration(seconds: float):
        return Duration(seconds=float(seconds)).to_msg()

    class TaskNode(LifecycleNode):
        def __init__(self) -> None:
            super().__init__("task_node")
            self.group = ReentrantCallbackGroup()
            self.lock = threading.Lock()
            self.autostart = self.declare_parameter("autostart", True).value
            self.states_topic = self.declare_parameter("joint_states_topic", "/quirobot/joint_states").value
            self.feedback_rate = float(self.declare_parameter("feedback_rate", 50.0).value)
            self.waypoint_period = float(self.declare_parameter("waypoint_period", 0.01).value)
            self.start_delay = float(self.declare_parameter("start_delay", 2.0).value)
            # s: the following error the controllers see per unit speed through drive_node, measured
            # here under load: 0.206 mm at a 10 mm/s feed move, 1.009 mm on gantry_z at <= 25 mm/s.
            self.tracking_lag = float(self.declare_parameter("tracking_lag", 0.05).value)
            self.active = False
            self.enabled = False  # drive_node's hardware component, from /quirobot/drives/state
            self.homed = False
            self.drives_heard = False
            self.drives_stop = ""  # drive_node's latched stop
            self.busy = False
            self.fault_reason = ""  # this node's latch: an aborted goal's reason
            self.phase = ""
            self.position: dict[str, float] = {}
            self.effort: dict[str, float] = {}
            self.states_time = 0.0  # time.monotonic() of the last joint states
            self.states_stamp = 0.0  # the node's clock (s; the plant's with use_sim_time) then
            self.cancel_requests = 0
            self.new_drive_stop = ""
            if self.autostart:
                self._autostart = self.create_timer(0.0, self._autostart_once, callback_group=self.group)

        def _autostart_once(self) -> None:
            self._autostart.cancel()
            self.trigger_configure()
            self.trigger_activate()

        # --- lifecycle -------------------------------------------------------------------
        def on_configure(self, state) -> TransitionCallbackReturn:
            self.params = load_parameters()
            self.dt = control_configuration(self.params).dt
            self.base_task = load_task("incision")
            self.kinematics = Kinematics(KinematicModel.from_parameters(self.params))
            controllers = yaml.safe_load(find_data_file("config/controllers.yaml").read_text())
            self.tolerance = path_tolerances(controllers)
            self.goal_tolerance = path_tolerances(controllers, kind="goal")
            latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
            self.state_publisher = self.create_publisher(OperatingState, "/quirobot/state", latched)
            self.create_subscription(
                JointState,
                self.states_topic,
                self._on_states,
                qos_profile_sensor_data,
                callback_group=self.group,
            )
            self.create_subscription(
                DrivesState,
                "/quirobot/drives/state",
                self._on_drives_state,
                latched,
                callback_group=self.group,
            )
            self.diagnostics_publisher = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
            self.drive_services = {
                name: self.create_client(Trigger, f"/quirobot/drives/{name}", callback_group=self.group)
                for name in ("enable", "disable", "acknowledge_stop", "home")
            }
            self.arm = ActionClient(
                self,
                FollowJointTrajectory,
                "/joint_trajectory_controller/follow_joint_trajectory",
                callback_group=self.group,
            )
            self.feed = ActionClient(
                self,
                FollowJointTrajectory,
                "/drill_feed_controller/follow_joint_trajectory",
                callback_group=self.group,
            )
            for name, callback in (
                ("/quirobot/enable", self._on_enable),
                ("/quirobot/disable", self._on_disable),
                ("/quirobot/reset_fault", self._on_reset_fault),
                ("/quirobot/home", self._on_home),
            ):
                self.create_service(Trigger, name, callback, callback_group=self.group)
            self.server = ActionServer(
                self,
                DrillHole,
                "/quirobot/drill_hole",
                execute_callback=self._execute,
                goal_callback=self._on_goal,
                cancel_callback=self._on_cancel,
                callback_group=self.group,
            )
            self.create_timer(1.0, self._publish_state, callback_group=self.group)
            self._publish_state()
            return TransitionCallbackReturn.SUCCESS

        def on_activate(self, state) -> TransitionCallbackReturn:
            self.active = True
            self.get_logger().info("task_node active: /quirobot/drill_hole")
            return super().on_activate(state)

        def on_deactivate(self, state) -> TransitionCallbackReturn:
            self.active = False
            return super().on_deactivate(state)

        # --- inputs ----------------------------------------------------------------------
        def _on_states(self, message: JointState) -> None:
            with self.lock:
                for k, name in enumerate(message.name):
                    if k < len(message.position):
                        self.position[name] = message.position[k]
                    if k < len(message.effort):
                        self.effort[name] = message.effort[k]
                self.states_time = time.monotonic()
                self.states_stamp = self.get_clock().now().nanoseconds * 1e-9

        def _on_drives_state(self, message: DrivesState) -> None:
            with self.lock:
                new_stop = message.stop_reason and message.stop_reason != self.drives_stop
                self.drives_heard = True
                self.enabled, self.homed, self.drives_stop = (
                    message.enabled,
                    message.homed,
                    message.stop_reason,
                )
                if new_stop:
                    self.new_drive_stop = message.stop_reason
            if new_stop:
                self.get_logger().error(f"drives stopped: {message.stop_reason}")
            self._publish_state()

        def fault(self) -> str:
            """The fault shown: the drives' latched stop, else this node's latch ("" if none)."""
            with self.lock:
                if self.drives_stop:
                    return f"drives stopped: {self.drives_stop}"
                return self.fault_reason

        def states_age(self) -> float:
            """s since the last joint states on the node's clock (the plant's in simulation: a
            stalled simulation does not age them), or on the wall clock if that is STATES_LOST_WALL
            or more (a simulation that stopped altogether stops its clock too)."""
            with self.lock:
                stamp, wall = self.states_stamp, self.states_time
            age = self.get_clock().now().nanoseconds * 1e-9 - stamp
            wall_age = time.monotonic() - wall
            return max(age, wall_age) if wall_age >= STATES_LOST_WALL else age

        def measured(self) -> np.ndarray | None:
            """(6,) measured joint pose, AXES order; None if a joint was never heard of."""
            with self.lock:
                if not all(name in self.position for name in AXES):
                    return None
                return np.array([self.position[name] for name in AXES])

        # --- operating state -------------------------------------------------------------
        def _publish_state(self) -> None:
            if not hasattr(self, "state_publisher"):
                return
            message = OperatingState()
            message.stamp = self.get_clock().now().to_msg()
            fault = self.fault()
            with self.lock:
                message.enabled = self.enabled
                message.homed = self.homed
                message.busy = self.busy
                message.fault = bool(fault)
                message.fault_reason = fault
                message.phase = self.phase
            self.state_publisher.publish(message)
            entry = task_diagnostic(
                enabled=message.enabled,
                homed=message.homed,
                busy=message.busy,
                phase=message.phase,
                fault_reason=fault,
            )
            array = DiagnosticArray()
            array.header.stamp = message.stamp
            array.status.append(
                DiagnosticStatus(
                    level=bytes([entry.level]),
                    name=entry.name,
                    message=entry.message,
                    hardware_id=entry.hardware_id,
                    values=[KeyValue(key=k, value=v) for k, v in entry.values],
                )
            )
            self.diagnostics_publisher.publish(array)

        def _call_drives(self, name: str) -> tuple[bool, str]:
            """Call drive_node's /quirobot/drives/<name> (std_srvs/Trigger): (success, message)."""
            client = self.drive_services[name]
            if not client.wait_for_service(timeout_sec=2.0):
                return False, f"drive_node's /quirobot/drives/{name} is not available"
            answer = self._wait(client.call_async(Trigger.Request()), 10.0)
            if answer is None:
                return False, f"no answer from /quirobot/drives/{name}"
            return answer.success, answer.message

        def _lifecycle(self, name: str, response):
            if self.busy:
                response.success, response.message = False, "busy: cancel the DrillHole goal first"
                return response
            response.success, response.message = self._call_drives(name)
            return response

        def _on_enable(self, request, response):
            return self._lifecycle("enable", response)

        def _on_disable(self, request, response):
            return self._lifecycle("disable", response)

        def _on_home(self, request, response):
            return self._lifecycle("home", response)

        def _on_reset_fault(self, request, response):
            with self.lock:
                busy, drives_stop = self.busy, self.drives_stop
            if busy:
                response.success, response.message = False, "busy"
                return response
            cleared = []
            if drives_stop:
                ok, message = self._call_drives("acknowledge_stop")
                if not ok:
                    response.success, response.message = False, f"drives: {message}"
                    return response
                cleared.append(message)
                with self.lock:  # drive_node republishes its state; do not show the old stop meanwhile
                    self.drives_stop = ""
            with self.lock:
                if self.fault_reason:
                    cleared.append(f"cleared: {self.fault_reason}")
                self.fault_reason = ""
            response.success = True
            response.message = "; ".join(cleared) if cleared else "no fault"
            self._publish_state()
            return response

        # --- the action ------------------------------------------------------------------
        def _on_goal(self, goal_request) -> GoalResponse:
            if not self.active or self.busy:
                return GoalResponse.REJECT
            return GoalResponse.ACCEPT

        def _on_cancel(self, goal_handle) -> CancelResponse:
            with self.lock:
                self.cancel_requests += 1
            return CancelResponse.ACCEPT

        def _send(self, client, trajectory, joints: tuple[str, ...], columns: list[int], start) -> object:
            message = TrajectoryMsg()
            message.header.stamp = start.to_msg()
            message.joint_names = list(joints)
            for index in waypoints(trajectory, self.waypoint_period):
                point = JointTrajectoryPoint()
                point.positions = [float(v) for v in trajectory.positions[index, columns]]
                point.velocities = [float(v) for v in trajectory.velocities[index, columns]]
                point.accelerations = [float(v) for v in trajectory.accelerations[index, columns]]
                point.time_from_start = to_duration(index * trajectory.dt)
                message.points.append(point)
            goal = FollowJointTrajectory.Goal()
            goal.trajectory = message
            return client.send_goal_async(goal)

        @staticmethod
        def _wait(future, timeout: float):
            deadline = time.monotonic() + timeout
            while not future.done() and time.monotonic() < deadline:
                time.sleep(0.005)
            return future.result() if future.done() else None

        def _execute(self, goal_handle):
            with self.lock:
                self.busy, self.cancel_requests, self.new_drive_stop = True, 0, ""
            try:
                return self._run(goal_handle)
            finally:
                with self.lock:
                    self.busy, self.phase = False, ""
                self._publish_state()

        def _finish(self, goal_handle, how: str, message: str, depth: float, lateral: float):
            result = DrillHole.Result()
            result.success = how == "succeed"
            result.achieved_depth = float(depth)
            result.max_lateral_deviation = float(lateral)
            result.message = message
            getattr(goal_handle, {"succeed": "succeed", "cancel": "canceled", "abort": "abort"}[how])()
            # One call site per severity: rclpy's logger refuses a call site whose severity changes.
            if how == "abort":
                self.get_logger().error(f"DrillHole abort: {message}")
            else:
                self.get_logger().info(f"DrillHole {how}: {message}")
            return result

        def _run(self, goal_handle):  # noqa: C901, PLR0912, PLR0915
            request = goal_handle.request
            nan = float("nan")
            fault = self.fault()
            if fault:
                return self._finish(goal_handle, "abort", f"in fault: {fault} (reset_fault)", nan, nan)
            if not self.drives_heard:
                return self._finish(
                    goal_handle, "abort", "no drive state on /quirobot/drives/state", nan, nan
                )
            if not self.enabled:
                return self._finish(goal_handle, "abort", "disabled: call /quirobot/enable", nan, nan)
            if not self.homed:
                return self._finish(goal_handle, "abort", "not homed: call /quirobot/home", nan, nan)
            frames = {request.entry.header.frame_id, request.direction.header.frame_id} - {"", "world"}
            if frames:
                return self._finish(
                    goal_handle, "abort", f"goal rejected: frames {sorted(frames)}: use world", nan, nan
                )
            q = self.measured()
            if q is None or self.states_age() > STATES_LOST:
                return self._finish(goal_handle, "abort", f"no joint states on {self.states_topic}", nan, nan)
            entry, direction = request.entry.point, request.direction.vector
            goal = DrillGoal(
                entry=np.array([entry.x, entry.y, entry.z]),
                direction=np.array([direction.x, direction.y, direction.z]),
                depth=request.depth,
                feed_rate=request.feed_rate,
                max_thrust=request.max_thrust,
            )
            try:
                plan = plan_drill_hole(
                    goal, q, self.params, self.dt, self.base_task, start_tolerance=self.goal_tolerance
                )
            except GoalRejectedError as error:
                return self._finish(goal_handle, "abort", f"goal rejected: {error}", nan, nan)
            if not (self.arm.wait_for_server(timeout_sec=2.0) and self.feed.wait_for_server(timeout_sec=2.0)):
                return self._finish(goal_handle, "abort", "trajectory controllers not available", nan, nan)
            trajectory = slowed_for_lag(plan.trajectory, self.tracking_lag, self.tolerance)
            task = plan.task
            start = self.get_clock().now() + Duration(seconds=self.start_delay)
            arm_future = self._send(self.arm, trajectory, arm_joints, list(range(FEED_INDEX)), start)
            feed_future = self._send(self.feed, trajectory, feed_joints, [FEED_INDEX], start)
            # Wall time: an answer that comes after the start time is refused below anyway.
            handles = {"arm": self._wait(arm_future, 30.0), "feed": self._wait(feed_future, 30.0)}
            if any(h is None or not h.accepted for h in handles.values()):
                for h in handles.values():
                    if h is not None and h.accepted:
                        h.cancel_goal_async()
                silent = [name for name, h in handles.items() if h is None]
                why = (
                    f"the {' and '.join(silent)} controller did not answer within 30 s"
                    if silent
                    else "a trajectory controller refused the plan"
                )
                return self._finish(goal_handle, "abort", why, nan, nan)
            if self.get_clock().now() > start:
                # A controller that gets its goal after the start time jumps to the trajectory's
                # sample at that time: refuse rather than start with a step.
                for h in handles.values():
                    h.cancel_goal_async()
                return self._finish(
                    goal_handle, "abort", "the controllers accepted the plan too late", nan, nan
                )
            results = {name: h.get_result_async() for name, h in handles.items()}
            policy = CancelPolicy()
            policy.handle(Event.GOAL)
            cancels_seen = 0
            deepest, widest = nan, 0.0
            period = 1.0 / self.feedback_rate
            retract = None
            retract_start = 0.0
            why = ""
            while True:
                now = self.get_clock().now()
                t = (now - start).nanoseconds * 1e-9
                if retract is None:
                    phase, progress = phase_progress(trajectory, t)
                else:
                    phase, progress = phase_progress(retract, t - retract_start)
                event = policy.phase_event(phase) if retract is None else None
                if event is not None:
                    policy.handle(event)
                q = self.measured()
                stale = self.states_age()  # takes the lock itself
                with self.lock:
                    thrust = float(self.effort.get(feed_joints[0], nan))
                    drive_stop = self.new_drive_stop
                    cancels = self.cancel_requests
                    self.phase = phase
                depth, lateral = tip_progress(self.kinematics.tip(q), task.entry, task.direction)
                if (phase in BONE_PHASES or retract is not None) and depth >= 0.0:
                    deepest = depth if not deepest >= depth else deepest
                    widest = max(widest, lateral)
                feedback = DrillHole.Feedback()
                feedback.phase, feedback.depth, feedback.thrust = phase, depth, thrust
                feedback.lateral_error, feedback.progress = lateral, float(progress)
                goal_handle.publish_feedback(feedback)
                # Events, most severe first.
                event = None
                if drive_stop:
                    event, why = Event.ERROR, f"drives stopped: {drive_stop}"
                elif stale > STATES_LOST:
                    event, why = Event.ERROR, f"joint states lost for {stale:.2f} s"
                else:
                    for name, future in results.items():
                        if future.done() and future.result().status != GoalStatus.STATUS_SUCCEEDED:
                            outcome = future.result().result
                            event = Event.ERROR
                            detail = outcome.error_string or outcome.error_code
                            why = f"{name} controller stopped the motion: {detail}"
                            break
                if event is None and cancels > cancels_seen:
                    cancels_seen += 1
                    event = Event.CANCEL
                if event is None and all(f.done() for f in results.values()):
                    event = Event.MOTION_DONE
                action = policy.handle(event) if event is not None else Action.NONE
                if action is Action.STOP and event is Event.MOTION_DONE:
                    why = "the motion ended with the bit in a bone phase"
                if action is Action.RETRACT:
                    handles["arm"].cancel_goal_async()  # the arm holds where it is
                    # From the commanded state (the plan at this instant), where the controller is.
                    planned_q, planned_v, _ = trajectory.sample(t)
                    retract = slowed_for_lag(
                        plan_cancel_retract(planned_q, task, self.params, self.dt, planned_v[FEED_INDEX]),
                        self.tracking_lag,
                        self.tolerance,
                    )
                    retract_start = (self.get_clock().now() - start).nanoseconds * 1e-9
                    retract_at = self.get_clock().now()
                    # The same 30 s as a plan's acceptance: on a loaded machine the goal response
                    # queues behind the 1 kHz joint states (CI saw the retract accepted and done by
                    # the controller while this wait, at 5 s, called it refused).
                    handle = self._wait(
                        self._send(self.feed, retract, feed_joints, [FEED_INDEX], retract_at), 30.0
                    )
                    if handle is None or not handle.accepted:
                        policy.handle(Event.ERROR)
                        action, why = Action.STOP, "the feed controller refused the retract"
                    else:
                        results = {"feed": handle.get_result_async()}
                        handles = {"feed": handle}
                if action is Action.STOP:
                    for h in handles.values():
                        h.cancel_goal_async()
                    if event is Event.ERROR or why:
                        with self.lock:
                            self.fault_reason = self.fault_reason or why
                        self._publish_state()
                        return self._finish(goal_handle, "abort", why, deepest, widest)
                    return self._finish(
                        goal_handle, "cancel", f"stopped at once in phase {phase}", deepest, widest
                    )
                if action is Action.SUCCEED:
                    message = (
                        f"drilled {deepest * 1000:.3f} mm (goal {task.depth * 1000:.3f} mm), "
                        f"lateral deviation {widest * 1000:.4f} mm"
                    )
                    return self._finish(goal_handle, "succeed", message, deepest, widest)
                if action is Action.FINISH_CANCEL:
                    return self._finish(
                        goal_handle,
                        "cancel",
                        f"canceled: bit retracted, tip {-depth * 1000:.2f} mm above the entry",
                        deepest,
                        widest,
                    )
                if policy.state is State.STOPPED:
                    return self._finish(goal_handle, "abort", why or "stopped", deepest, widest)
                time.sleep(period)

    return TaskNode()


if __name__ == "__main__":
    sys.exit(main())
