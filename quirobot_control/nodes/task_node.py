"""ROS 2 lifecycle node `task_node`: the task-level API, a skin over the ROS-free DrillHole executor.

Behaviour lives in `quirobot_control.procedures` (readiness, checks, plan, execution, cancel
policy, error codes, metrics: `DrillHoleExecutor`, tested in-process in
test/control/procedures/test_drill_hole_executor.py); this node only translates:

- Action server /quirobot/drill_hole (quirobot/action/DrillHole), advertised once the node is
  active (a goal sent as soon as it appears is never refused for a start-up still between
  configure and activate): a goal is accepted unless the
  node is inactive or a goal runs, then handed to the executor; its `DrillResult` becomes the
  result (error_code, stop_code, success, message, achieved_depth, max_lateral_deviation,
  bone_model, bit_in_bone) and the goal's terminal status. The goal's `task` (else the `task` parameter)
  names the scene/task file; neither: no bone model. A cancel request is always accepted and
  passed to the executor (in bone: the feed retracts along the axis). Deactivating the node
  mid-goal cancels the goal the same way (its result: CANCELED_RETRACTED, "canceled (task_node
  deactivated)"; its status aborted, as rcl_action ends a goal canceled only after a client's
  cancel request).
The node is a skin over modules beside it, each with one job:

- nodes.motion_port: `RosMotionPort`, the executor's motion port (trajectories to the
  controllers, the stack's state in, the drilling context out, tf2 frames);
- nodes.state_reporter: /quirobot/state (quirobot/msg/OperatingState, transient local): `state`
  from procedures.operating_state's table (INACTIVE once deactivated, FAULT, BUSY, WAITING,
  UNHOMED, DISABLED, READY), ready and waiting_for (the executor's `waiting_for`), enabled, homed,
  busy, fault with its reason and `stop_code` (safety.stop_codes.merged_fault), phase ("starting"
  until the stack has been ready once), bit_in_bone; /diagnostics "quirobot/task" the same;
- nodes.scene_publisher: /quirobot/scene (visualization_msgs/MarkerArray) for RViz;
- nodes.rclpy_workarounds: the rclpy workarounds, each naming its upstream issue.
- Frames (tf2): a goal's entry and direction may be in any frame tf2 can transform to `world`
  (the port's `world_from`: a tf2_ros Buffer and TransformListener, the latest transform, waited
  for up to FRAME_WAIT s); the executor maps them at goal time and refuses a frame tf2 does not
  know with REJECTED_FRAME naming it. With the parameter `registration_file` (a registration file:
  `quirobot register --output`, config/registration.yaml in simulation) the node publishes its
  transform at start-up with a tf2_ros StaticTransformBroadcaster (`world` -> `patient`), for
  RViz, other nodes and its own goals.
- Services (std_srvs/Trigger) call drive_node's /quirobot/drives/<name>: /quirobot/enable (it
  answers once drive_node reports the drives enabled), /quirobot/disable, /quirobot/home, refused
  while busy; /quirobot/reset_fault acknowledges the drives' latched stop and clears the
  executor's latch.

The node configures and activates itself at start-up (parameter `autostart`). Its parameters are
declared once, with type, default, unit and range, in `procedures.task_node_parameters` (the
table: docs/node_parameters.md); a value outside its range stops it with one line naming it
(exit status 2). rclpy is imported only inside functions.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from quirobot_control.nodes.motion_port import SHUTDOWN_WAIT, RosMotionPort
from quirobot_control.nodes.rclpy_workarounds import (
    destroy_action_entities,
    join_signal_thread,
    shutdown_executor,
    sigint_without_keyboard_interrupt,
    spin_until_shutdown,
)
from quirobot_control.nodes.scene_publisher import ScenePublisher
from quirobot_control.nodes.state_reporter import StateReporter
from quirobot_control.procedures.drill_hole_types import DrillResult, ErrorCode, Outcome
from quirobot_control.safety.stop_codes import StopCode

#: The cause a goal canceled by the node's deactivation ends with (its result's message).
DEACTIVATED = "canceled (task_node deactivated)"
#: ... and by the node's shutdown (SIGINT): a goal still running then ends as soon as it can.
SHUT_DOWN = "canceled (task_node shut down)"
#: s (wall) a service call to drive_node, or the drives' confirmation of an enable, may take.
SERVICE_TIMEOUT = 10.0


def main(args: list[str] | None = None) -> int:
    import faulthandler
    import signal

    import rclpy
    from rclpy.executors import MultiThreadedExecutor

    faulthandler.enable()  # a crash prints every thread's Python stack (to the launch's log)
    sigint_without_keyboard_interrupt()
    rclpy.init(args=args)
    try:
        node = _make_node()
    except ValueError as error:  # a parameter outside its type or range: one line naming it
        print(f"task_node: error: {error}", file=sys.stderr)
        rclpy.try_shutdown()
        return 2
    executor = MultiThreadedExecutor(num_threads=4)
    executor.add_node(node)
    try:
        spin_until_shutdown(executor, node.context)
    finally:
        # rclpy's signal thread is done before an executor is destroyed, and the executor's
        # callbacks (a goal's loop, the state timer) end before their node is: either crashed
        # task_node on SIGINT in CI (exit -11). rclpy's own executor.shutdown does not wait.
        join_signal_thread()
        # launch's SIGTERM, 5 s after its SIGINT if this teardown has not ended by then: every
        # thread's stack to the log, then the default action (exit -15) as before.
        faulthandler.register(signal.SIGTERM, chain=True)
        node.stop_goal(SHUT_DOWN)
        ended = shutdown_executor(executor, SHUTDOWN_WAIT)
        if ended:
            node.destroy_node()
        rclpy.try_shutdown()
    if not ended:  # the pool's threads would hold the interpreter's exit until launch kills it
        print(f"task_node: a callback still ran {SHUTDOWN_WAIT:g} s after shutdown; exiting", file=sys.stderr)
        sys.stderr.flush()
        os._exit(1)
    return 0


def result_message(result: DrillResult):
    """The DrillHole result message of an executor's result."""
    from quirobot.action import DrillHole

    return DrillHole.Result(
        error_code=int(result.error_code),
        success=result.success,
        achieved_depth=float(result.achieved_depth),
        max_lateral_deviation=float(result.max_lateral_deviation),
        bone_model=result.bone_model,
        bit_in_bone=result.bit_in_bone,
        message=result.message,
        stop_code=int(result.stop_code),
    )


def terminal_status(goal_handle, outcome: Outcome):
    """The goal handle's method that ends it as `outcome`. rcl_action lets a goal end canceled
    only once a cancel request moved it to CANCELING: a goal the executor canceled by itself
    (its client disappeared) ends aborted; its error_code still says CANCELED_RETRACTED."""
    if outcome is Outcome.SUCCEEDED:
        return goal_handle.succeed
    if outcome is Outcome.CANCELED and goal_handle.is_cancel_requested:
        return goal_handle.canceled
    return goal_handle.abort


def request_from_goal(goal, default_task: str, goal_id: str = ""):
    """The executor's request from a DrillHole goal message (`goal_id`: the goal's UUID, hex)."""
    from quirobot_control.planning.drill_hole import DrillGoal
    from quirobot_control.procedures.drill_hole_types import DrillRequest

    entry, direction = goal.entry.point, goal.direction.vector
    return DrillRequest(
        goal=DrillGoal(
            entry=np.array([entry.x, entry.y, entry.z]),
            direction=np.array([direction.x, direction.y, direction.z]),
            depth=goal.depth,
            feed_rate=goal.feed_rate,
            max_thrust=goal.max_thrust,
        ),
        task=goal.task or default_task,
        frames=(goal.entry.header.frame_id, goal.direction.header.frame_id),
        goal_id=goal_id,
    )


def _make_node():
    from quirobot.action import DrillHole
    from quirobot.msg import OperatingState
    from rclpy.action import ActionServer, CancelResponse, GoalResponse
    from rclpy.callback_groups import ReentrantCallbackGroup
    from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
    from rclpy.qos import DurabilityPolicy, QoSProfile

    from quirobot_control.procedures.drill_hole_executor import DrillHoleExecutor, ExecutorConfig

    class TaskNode(LifecycleNode):
        def __init__(self) -> None:
            super().__init__("task_node")
            self.group = ReentrantCallbackGroup()
            self.active = False
            _read_parameters(self)
            if self.autostart:
                self._autostart = self.create_timer(0.0, self._autostart_once, callback_group=self.group)

        def _autostart_once(self) -> None:
            self._autostart.cancel()
            self.trigger_configure()
            self.trigger_activate()

        def on_configure(self, state) -> TransitionCallbackReturn:
            try:
                self._configure()
            except Exception as error:  # rclpy's lifecycle would swallow it without a word
                self.get_logger().error(f"configure failed: {error!r}")
                return TransitionCallbackReturn.FAILURE
            return TransitionCallbackReturn.SUCCESS

        def _configure(self) -> None:
            self.port = RosMotionPort(self, self.group, self.states_topic, self.waypoint_period)
            config = ExecutorConfig.shipped(calibration=self.calibration, **self.timing)
            self.drill = DrillHoleExecutor(self.port, config)
            self.port.state_changed = self.publish_state
            latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
            self.state_publisher = self.create_publisher(OperatingState, "/quirobot/state", latched)
            self.status_reporter = StateReporter(self)
            self.drive_services = DriveServices(self)
            self.scene = ScenePublisher(self)
            self.create_timer(1.0, self.publish_state, callback_group=self.group, clock=self.port.steady)
            self.publish_state()

        def on_activate(self, state) -> TransitionCallbackReturn:
            self.active = True
            if not hasattr(self, "server"):  # advertised once active: a goal found is never refused for
                self.server = ActionServer(  # a start-up still between configure and activate
                    self,
                    DrillHole,
                    "/quirobot/drill_hole",
                    execute_callback=lambda goal_handle: execute_goal(self, goal_handle),
                    goal_callback=lambda request: (
                        GoalResponse.ACCEPT if self.active and self.drill.accept() else GoalResponse.REJECT
                    ),
                    cancel_callback=self._on_cancel,
                    callback_group=self.group,
                )
            self.get_logger().info("task_node active: /quirobot/drill_hole")
            self.publish_state()
            return super().on_activate(state)

        def stop_goal(self, cause: str) -> bool:
            """Cancel the running goal, if any, with `cause` (as a client's cancel is); whether
            one was running."""
            running = hasattr(self, "drill") and self.drill.busy
            if running:
                self.drill.request_cancel(cause)
            return running

        def on_deactivate(self, state) -> TransitionCallbackReturn:
            # No new goal; a running one is canceled as a client's cancel is (in bone the feed
            # retracts along the axis) and ends canceled: an inactive node drilled the rest of the
            # hole and reported success (issue 33 item 3). The retract runs on after this returns;
            # /quirobot/state says INACTIVE at once.
            self.active = False
            if self.stop_goal(DEACTIVATED):
                self.get_logger().warning("deactivated mid-goal: the DrillHole goal is canceled")
            self.publish_state()
            return super().on_deactivate(state)

        def destroy_node(self) -> None:
            port = getattr(self, "port", None)
            destroy_action_entities(getattr(self, "server", None), port.clients.values() if port else ())
            if port is not None:
                port.inputs.close()
            super().destroy_node()

        def publish_state(self) -> None:
            if hasattr(self, "status_reporter"):
                self.status_reporter.publish()

        def _on_cancel(self, goal_handle) -> CancelResponse:
            self.drill.request_cancel()
            return CancelResponse.ACCEPT

    return TaskNode()


def _read_parameters(node) -> None:
    """The node's parameters, declared from their schema (procedures.task_node_parameters, nowhere
    else), as its attributes; the registration broadcast and the calibration read (a bad file stops
    the node in one line: main)."""
    from quirobot_control.planning.tasks import NO_BONE
    from quirobot_control.procedures.task_node_parameters import TASK_NODE, executor_timing
    from quirobot_description.ros_parameters import declare_parameters

    parameters = declare_parameters(node, TASK_NODE)
    node.autostart = parameters["autostart"]
    node.states_topic = parameters["joint_states_topic"]
    node.task = "" if parameters["task"] in NO_BONE else parameters["task"]
    node.timing = executor_timing(parameters)
    node.waypoint_period = parameters["waypoint_period"]
    if parameters["registration_file"]:
        node.frame_broadcaster = broadcast_registration(node, parameters["registration_file"])
    node.calibration = None  # the nominal model
    if parameters["calibration_file"]:
        from quirobot_description import robot_parameters
        from quirobot_description.geometric_errors import read_calibration_file

        node.calibration = read_calibration_file(parameters["calibration_file"], robot_parameters().geometric)


def execute_goal(node, goal_handle):
    """The action server's execute callback: the goal run by the executor, its end logged, the
    goal ended with its terminal status; the DrillHole result message."""
    node.port.goal_handle = goal_handle
    try:
        goal_id = bytes(goal_handle.goal_id.uuid).hex()
        result = node.drill.run(request_from_goal(goal_handle.request, node.task, goal_id))
    except Exception as error:  # a bug must not leave the goal without an end
        # rclpy shut down under the goal (SIGINT: main cancels it, its motions then fail to send):
        # said as such, not as a bug; the drives stop with drive_node's own shutdown.
        cause = "task_node shut down mid-goal" if not node.context.ok() else f"internal error: {error!r}"
        result = DrillResult(Outcome.ABORTED, ErrorCode.ABORTED_FAULT, cause, stop_code=StopCode.INTERNAL)
        node.get_logger().error(f"DrillHole: {error!r}")
    finally:
        node.port.goal_handle = None
    # One call site per severity: rclpy's logger refuses a call site whose severity changes.
    if result.outcome is Outcome.ABORTED:
        node.get_logger().error(f"DrillHole aborted ({result.error_code.name}): {result.message}")
    else:
        node.get_logger().info(
            f"DrillHole {result.outcome.value} ({result.error_code.name}): {result.message}"
        )
    if not node.context.ok():  # shut down: no status can be sent any more (rclpy's own abort fails)
        return result_message(result)
    terminal_status(goal_handle, result.outcome)()
    node.publish_state()
    return result_message(result)


def broadcast_registration(node, path: str):
    """Publish the registration file's frame (parent -> child) on /tf_static; the broadcaster."""
    from geometry_msgs.msg import TransformStamped
    from tf2_ros import StaticTransformBroadcaster

    from quirobot_kinematics.registration import read_registration
    from quirobot_kinematics.rotations import quaternion_from_matrix

    frame = read_registration(path)
    message = TransformStamped()
    message.header.stamp = node.get_clock().now().to_msg()
    message.header.frame_id, message.child_frame_id = frame.parent, frame.child
    t, r = message.transform.translation, message.transform.rotation
    t.x, t.y, t.z = (float(v) for v in frame.transform[:3, 3])
    r.x, r.y, r.z, r.w = quaternion_from_matrix(frame.transform[:3, :3])
    broadcaster = StaticTransformBroadcaster(node)
    broadcaster.sendTransform(message)
    node.get_logger().info(f"registration {path}: {frame.parent} -> {frame.child} on /tf_static")
    return broadcaster


def wait_until(done, timeout: float) -> bool:
    """Poll `done()` every 5 ms for at most `timeout` s of wall time (a reply over DDS)."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


class DriveServices:
    """/quirobot/enable, /quirobot/disable, /quirobot/home and /quirobot/reset_fault (std_srvs/
    Trigger) over drive_node's /quirobot/drives/<name>; refused while a goal runs."""

    def __init__(self, node) -> None:
        from std_srvs.srv import Trigger

        self.node = node
        self.clients = {
            name: node.create_client(Trigger, f"/quirobot/drives/{name}", callback_group=node.group)
            for name in ("enable", "disable", "acknowledge_stop", "home")
        }
        for name, callback in (
            ("/quirobot/enable", self.enable),
            ("/quirobot/disable", lambda request, response: self.lifecycle("disable", response)),
            ("/quirobot/reset_fault", self.reset_fault),
            ("/quirobot/home", lambda request, response: self.lifecycle("home", response)),
        ):
            node.create_service(Trigger, name, callback, callback_group=node.group)

    def call(self, name: str) -> tuple[bool, str]:
        """Call drive_node's /quirobot/drives/<name> (std_srvs/Trigger): (success, message)."""
        from std_srvs.srv import Trigger

        client = self.clients[name]
        if not client.wait_for_service(timeout_sec=2.0):
            return False, f"drive_node's /quirobot/drives/{name} is not available"
        future = client.call_async(Trigger.Request())
        if not wait_until(future.done, SERVICE_TIMEOUT):
            return False, f"no answer from /quirobot/drives/{name}"
        answer = future.result()
        return answer.success, answer.message

    def lifecycle(self, name: str, response):
        if self.node.drill.busy:
            response.success, response.message = False, "busy: cancel the DrillHole goal first"
            return response
        response.success, response.message = self.call(name)
        return response

    def enable(self, request, response):
        response = self.lifecycle("enable", response)
        # Answer once drive_node reports the drives enabled: a goal sent next finds them so.
        if response.success and not wait_until(lambda: self.node.port.status().enabled, SERVICE_TIMEOUT):
            response.success = False
            response.message = f"drive_node did not report the drives enabled within {SERVICE_TIMEOUT:.0f} s"
        return response

    def reset_fault(self, request, response):
        node = self.node
        if node.drill.busy:
            response.success, response.message = False, "busy"
            return response
        cleared = []
        if node.port.status().stop_reason:
            ok, message = self.call("acknowledge_stop")
            if not ok:
                response.success, response.message = False, f"drives: {message}"
                return response
            cleared.append(message)
            node.port.clear_stop()
        reason = node.drill.reset_fault()
        if reason:
            cleared.append(f"cleared: {reason}")
        response.success = True
        response.message = "; ".join(cleared) if cleared else "no fault"
        node.status_reporter.publish()
        return response


if __name__ == "__main__":
    sys.exit(main())
