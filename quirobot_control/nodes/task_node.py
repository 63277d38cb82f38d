"""ROS 2 lifecycle node `task_node`: the task-level API, a skin over the ROS-free DrillHole executor.

Behaviour lives in `quirobot_control.procedures` (readiness, checks, plan, execution, cancel
policy, error codes, metrics: `DrillHoleExecutor`, tested in-process in
test/control/procedures/test_drill_hole_executor.py); this node only translates:

- Action server /quirobot/drill_hole (quirobot/action/DrillHole), advertised once the node is
  active (a goal sent as soon as it appears is never refused for a start-up still between
  configure and activate): a goal is accepted unless the
  node is inactive or a goal runs, then handed to the executor; its `DrillResult` becomes the
  result (error_code, success, message, achieved_depth, max_lateral_deviation, bone_model,
  bit_in_bone) and the goal's terminal status. The goal's `task` (else the `task` parameter)
  names the scene/task file; neither: no bone model. A cancel request is always accepted and
  passed to the executor (in bone: the feed retracts along the axis). Deactivating the node
  mid-goal cancels the goal the same way (its result: CANCELED_RETRACTED, "canceled (task_node
  deactivated)"; its status aborted, as rcl_action ends a goal canceled only after a client's
  cancel request).
- `RosMotionPort`: the executor's motion port. Trajectories go to joint_trajectory_controller and
  drill_feed_controller (FollowJointTrajectory) stamped with a common start time; the measured
  state comes from /quirobot/joint_states, the drives' (their latched stop included: the one
  way drive_node publishes a stop) from /quirobot/drives/state, the active
  controllers from the controller manager's list_controllers (polled once a second), the robot
  description from /robot_description; the drilling context goes out latched on
  /quirobot/drilling_context. A motion whose acceptance has not arrived when it must stop is
  cancelled through the controller's cancel service with the zero goal id and stamp (every goal
  of that controller) and again when its acceptance arrives (rclpy issue 1123: in rclpy 7.1.6 an
  acceptance can be lost under a multi-threaded executor; the action clients here take a lock as
  the upstream fix does).
- /quirobot/scene (visualization_msgs/MarkerArray, transient local, 10 Hz on the steady clock):
  the `task` parameter's bone and no-go zones, the planned axis of the running goal (from
  /quirobot/drilling_context), the path the drill tip has drilled in bone and the live tip (FK
  of the measured joints); built by planning.scene (`ScenePublisher` only converts).
- /quirobot/state (quirobot/msg/OperatingState, transient local): ready and waiting_for (the
  executor's `waiting_for`), enabled, homed, busy, fault, phase ("starting" until the stack has
  been ready once), bit_in_bone; on every change and once a second (steady clock: also before
  the simulated clock runs). /diagnostics: the same as "quirobot/task".
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

import contextlib
import sys
import threading
import time

import numpy as np

from quirobot_control.planning.drill_hole import waypoints
from quirobot_control.procedures.drill_hole_executor import (
    DrillFeedback,
    DrillResult,
    ErrorCode,
    Measurement,
    MotionRecord,
    MotionStatus,
    Outcome,
    StackStatus,
)
from quirobot_control.safety.hole_context import HoleContext
from quirobot_control.safety.stop_codes import StopCode
from quirobot_description.parameters import JOINT_NAMES, DrillParameters, axes_for

#: The cause a goal canceled by the node's deactivation ends with (its result's message).
DEACTIVATED = "canceled (task_node deactivated)"
#: The drill's commanded axes (DrillHole drills): the arm's joints, then the feed.
DRILL_AXES = axes_for("drill")
#: The trajectory controllers a plan is split over (bringup.launch.py spawns them).
CONTROLLERS = {"arm": "joint_trajectory_controller", "feed": "drill_feed_controller"}
COLUMNS = {"arm": list(range(len(JOINT_NAMES))), "feed": [DrillParameters.feed_index]}
#: s of wall time without joint states after which they count as lost on any clock (a
#: simulation that stopped altogether stops its clock too).
STATES_LOST_WALL = 5.0
#: s (wall) a service call to drive_node, or the drives' confirmation of an enable, may take.
SERVICE_TIMEOUT = 10.0
#: s (wall) a goal's frame may take to reach tf2's buffer (a registration published just before).
FRAME_WAIT = 1.0
#: s (wall): the longest the executor's sleep on a simulated clock lasts if that clock stops.
SLEEP_WALL_LIMIT = 1.0


def main(args: list[str] | None = None) -> int:
    import faulthandler

    import rclpy
    from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor

    faulthandler.enable()  # a crash prints every thread's Python stack (to the launch's log)
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
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        # The executor's callbacks (a goal's loop, the state timer) end before their node is
        # destroyed: a callback still running on a destroyed node crashed task_node on shutdown
        # once in CI (exit -11 after SIGINT).
        executor.shutdown(timeout_sec=SHUTDOWN_WAIT)
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


def race_free_action_client(node, action_type, name: str, group):
    """An rclpy ActionClient whose request bookkeeping and response handling share one lock (the
    fix of rclpy issue 1123, merged upstream after 7.1.6: a response taken by another executor
    thread before the request's sequence number was recorded is dropped and its future never
    completes)."""
    from rclpy.action import ActionClient

    class RaceFreeActionClient(ActionClient):
        def __init__(self) -> None:
            super().__init__(node, action_type, name, callback_group=group)
            self._request_lock = threading.RLock()

        def send_goal_async(self, goal, feedback_callback=None, goal_uuid=None):
            with self._request_lock:
                return super().send_goal_async(goal, feedback_callback, goal_uuid)

        def _cancel_goal_async(self, goal_handle):
            with self._request_lock:
                return super()._cancel_goal_async(goal_handle)

        def _get_result_async(self, goal_handle):
            with self._request_lock:
                return super()._get_result_async(goal_handle)

        async def execute(self, taken_data):
            with self._request_lock:
                return await super().execute(taken_data)

    return RaceFreeActionClient()


class RosMotionPort:
    """The DrillHole executor's MotionPort over ROS (module docstring)."""

    def __init__(self, node, group, states_topic: str, waypoint_period: float) -> None:
        from action_msgs.srv import CancelGoal
        from control_msgs.action import FollowJointTrajectory
        from controller_manager_msgs.srv import ListControllers
        from quirobot.msg import DrillingContext as ContextMsg
        from quirobot.msg import DrivesState
        from rclpy.clock import Clock, ClockType
        from rclpy.qos import DurabilityPolicy, QoSProfile, qos_profile_sensor_data
        from sensor_msgs.msg import JointState
        from std_msgs.msg import String

        self.node, self.waypoint_period = node, waypoint_period
        # Before the subscriptions: their callbacks run on other executor threads at once.
        self.state_changed = lambda: None  # the node sets its state publisher
        self.lock = threading.Lock()
        self.position: dict[str, float] = {}
        self.effort: dict[str, float] = {}
        self.states_wall = -np.inf  # time.monotonic() of the last joint states
        self.states_stamp = -np.inf  # the node's clock then (s)
        self.states_measured = -np.inf  # their header stamp (s): when drive_node measured them
        self.drives = StackStatus()
        self.active_controllers: set[str] = set()
        self.description = False
        self.goal_handle = None
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        # The high-rate inputs (joint states, /tf, /clock) on a node of their own (InputNode).
        self.inputs = InputNode(node)
        self.inputs.node.create_subscription(
            JointState, states_topic, self._on_states, qos_profile_sensor_data
        )
        node.create_subscription(
            DrivesState, "/quirobot/drives/state", self._on_drives, latched, callback_group=group
        )
        node.create_subscription(
            String, "/robot_description", self._on_description, latched, callback_group=group
        )
        self.context_publisher = node.create_publisher(ContextMsg, "/quirobot/drilling_context", latched)
        self.goal_type = FollowJointTrajectory.Goal
        self.clients = {
            part: race_free_action_client(
                node, FollowJointTrajectory, f"/{name}/follow_joint_trajectory", group
            )
            for part, name in CONTROLLERS.items()
        }
        self.cancel_services = {
            part: node.create_client(
                CancelGoal, f"/{name}/follow_joint_trajectory/_action/cancel_goal", callback_group=group
            )
            for part, name in CONTROLLERS.items()
        }
        self.list_controllers = node.create_client(
            ListControllers, "/controller_manager/list_controllers", callback_group=group
        )
        self.steady = Clock(clock_type=ClockType.STEADY_TIME)
        node.create_timer(1.0, self._poll_controllers, callback_group=group, clock=self.steady)
        from tf2_ros import Buffer, TransformListener

        self.tf_buffer = Buffer()
        self.tf_listener = TransformListener(self.tf_buffer, self.inputs.node)
        self.inputs.start()

    def world_from(self, frame: str) -> np.ndarray:
        """(4, 4) world_from_frame: tf2's latest transform (MotionPort.world_from)."""
        from rclpy.time import Time
        from tf2_ros import TransformException

        from quirobot_kinematics.rotations import matrix_from_quaternion

        deadline = time.monotonic() + FRAME_WAIT
        while not self.tf_buffer.can_transform("world", frame, Time()) and time.monotonic() < deadline:
            time.sleep(0.05)
        try:
            transform = self.tf_buffer.lookup_transform("world", frame, Time()).transform
        except TransformException as error:
            raise LookupError(" ".join(str(error).split()) or type(error).__name__) from error
        q, t = transform.rotation, transform.translation
        T = np.eye(4)
        T[:3, :3] = matrix_from_quaternion(q.x, q.y, q.z, q.w)
        T[:3, 3] = t.x, t.y, t.z
        return T

    # --- inputs --------------------------------------------------------------------------------
    def _on_states(self, message) -> None:
        with self.lock:
            for k, name in enumerate(message.name):
                if k < len(message.position):
                    self.position[name] = message.position[k]
                if k < len(message.effort):
                    self.effort[name] = message.effort[k]
            self.states_wall = time.monotonic()
            self.states_stamp = self.now()
            stamp = message.header.stamp.sec + message.header.stamp.nanosec * 1e-9
            self.states_measured = stamp if stamp > 0.0 else self.states_stamp  # unstamped: on receipt

    def _on_drives(self, message) -> None:
        # The drives' stop arrives here only (drive_node logs it; /quirobot/state shows it).
        with self.lock:
            self.drives = StackStatus(
                True,
                message.enabled,
                message.homed,
                message.stop_reason,
                breakthrough=message.breakthrough,
                stop_code=StopCode(message.stop_code),
            )
        self.state_changed()

    def _on_description(self, message) -> None:
        self.description = bool(message.data)

    def _poll_controllers(self) -> None:
        from controller_manager_msgs.srv import ListControllers

        if not self.list_controllers.service_is_ready():
            return
        future = self.list_controllers.call_async(ListControllers.Request())
        future.add_done_callback(self._on_controllers)

    def _on_controllers(self, future) -> None:
        answer = future.result()
        active = {c.name for c in answer.controller if c.state == "active"} if answer is not None else set()
        changed = active != self.active_controllers
        self.active_controllers = active
        if changed:
            self.state_changed()

    def clear_stop(self) -> None:
        """drive_node acknowledged its stop (it republishes its state; do not show the old one)."""
        with self.lock:
            self.drives = StackStatus(True, self.drives.enabled, self.drives.homed, "", breakthrough="")

    # --- MotionPort ----------------------------------------------------------------------------
    def now(self) -> float:
        return self.node.get_clock().now().nanoseconds * 1e-9

    def sleep(self, seconds: float) -> None:
        """`seconds` of the node's clock: the plant's in simulation, so the executor observes the
        same plant instants however loaded the machine (a wall-clock sleep saw fewer of them the
        slower the simulation ran); at most SLEEP_WALL_LIMIT s of wall time, so a simulation that
        stopped its clock is still noticed."""
        from rclpy.clock import JumpThreshold
        from rclpy.duration import Duration

        clock = self.node.get_clock()
        if not clock.ros_time_is_active:
            time.sleep(seconds)
            return
        until = clock.now() + Duration(nanoseconds=round(seconds * 1e9))
        woken = threading.Event()
        every_step = JumpThreshold(
            min_forward=Duration(nanoseconds=1), min_backward=None, on_clock_change=True
        )
        # Called on the inputs node's thread as /clock sets the time (rclpy's own sleep_until does
        # the same, without a wall-time bound).
        with clock.create_jump_callback(
            every_step, post_callback=lambda jump: clock.now() >= until and woken.set()
        ):
            if clock.now() < until:
                woken.wait(SLEEP_WALL_LIMIT)

    def status(self) -> StackStatus:
        missing = tuple(
            name
            for part, name in CONTROLLERS.items()
            if name not in self.active_controllers or not self.clients[part].server_is_ready()
        )
        with self.lock:
            drives = self.drives
        return StackStatus(
            drives.drives_heard,
            drives.enabled,
            drives.homed,
            drives.stop_reason,
            missing,
            self.description,
            drives.breakthrough,
            drives.stop_code,
        )

    def measured(self) -> Measurement | None:
        """The joint states; their age on the node's clock (the plant's in simulation: a stalled
        simulation does not age them), or on the wall clock once that reaches STATES_LOST_WALL."""
        with self.lock:
            if not all(name in self.position for name in DRILL_AXES):
                return None
            position = np.array([self.position[name] for name in DRILL_AXES])
            effort = np.array([self.effort.get(name, np.nan) for name in DRILL_AXES])
            stamp, wall, measured = self.states_stamp, self.states_wall, self.states_measured
        age, wall_age = self.now() - stamp, time.monotonic() - wall
        return Measurement(
            position, effort, max(age, wall_age) if wall_age >= STATES_LOST_WALL else age, measured
        )

    def send(self, part: str, trajectory, start: float) -> MotionRecord:
        from builtin_interfaces.msg import Time
        from rclpy.duration import Duration
        from trajectory_msgs.msg import JointTrajectoryPoint

        goal = self.goal_type()
        message = goal.trajectory
        seconds = int(np.floor(start))
        message.header.stamp = Time(sec=seconds, nanosec=int(round((start - seconds) * 1e9)) % 1_000_000_000)
        columns = COLUMNS[part]
        message.joint_names = [DRILL_AXES[c] for c in columns]
        for index in waypoints(trajectory, self.waypoint_period):
            point = JointTrajectoryPoint()
            point.positions = [float(v) for v in trajectory.positions[index, columns]]
            point.velocities = [float(v) for v in trajectory.velocities[index, columns]]
            point.accelerations = [float(v) for v in trajectory.accelerations[index, columns]]
            point.time_from_start = Duration(seconds=float(index * trajectory.dt)).to_msg()
            message.points.append(point)
        record = MotionRecord(lambda: self._cancel_all(part))
        future = self.clients[part].send_goal_async(goal)
        future.add_done_callback(lambda f: self._on_response(f, record, part))
        return record

    def _on_response(self, future, record: MotionRecord, part: str) -> None:
        handle = future.result()
        if handle is None or not handle.accepted:
            record.refused(f"{CONTROLLERS[part]} rejected the trajectory")
            return
        record.accepted(handle.cancel_goal_async)
        handle.get_result_async().add_done_callback(lambda f: self._on_result(f, record))

    @staticmethod
    def _on_result(future, record: MotionRecord) -> None:
        from action_msgs.msg import GoalStatus

        response = future.result()
        if response.status == GoalStatus.STATUS_SUCCEEDED:
            record.ended(MotionStatus.SUCCEEDED)
        elif response.status == GoalStatus.STATUS_CANCELED:
            record.ended(MotionStatus.CANCELED, "canceled")
        else:
            result = response.result
            record.ended(MotionStatus.ABORTED, result.error_string or f"error code {result.error_code}")

    def _cancel_all(self, part: str) -> None:
        """The controller's cancel service with the zero goal id and stamp: every goal it has."""
        from action_msgs.srv import CancelGoal

        self.cancel_services[part].call_async(CancelGoal.Request())
        self.node.get_logger().warn(f"{CONTROLLERS[part]}: every goal cancelled (an acceptance not received)")

    def goal_clients(self) -> int:
        """DrillHole action clients on the graph (each subscribes to the action's feedback)."""
        return self.node.count_subscribers("/quirobot/drill_hole/_action/feedback")

    def publish_feedback(self, feedback: DrillFeedback) -> None:
        from quirobot.action import DrillHole

        handle = self.goal_handle
        if handle is not None:
            handle.publish_feedback(
                DrillHole.Feedback(
                    phase=feedback.phase,
                    depth=float(feedback.depth),
                    thrust=float(feedback.thrust),
                    lateral_error=float(feedback.lateral_error),
                    progress=float(feedback.progress),
                )
            )

    def publish_context(self, goal_id: str, context: HoleContext | None) -> None:
        from quirobot_control.nodes.hole_context_msg import to_message

        self.context_publisher.publish(to_message(goal_id, context, self.node.get_clock().now().to_msg()))


#: s to wait for an executor's callbacks, and the inputs' thread, to end on shutdown.
SHUTDOWN_WAIT = 5.0


class InputNode:
    """`<node>_inputs`: a second node, spun by a single-threaded executor on a thread of its own,
    for the inputs that arrive at the control rate: the joint states, /tf and, with use_sim_time,
    /clock (it sets the task node's clock). rclpy's executors rebuild their whole wait set each time
    they wake: on the task node's (its services, action server and clients, parameter and
    lifecycle services) each of the 100-250 Hz messages cost about 1 ms of CPU, which made task_node
    the stack's second-largest CPU user in simulation (bench/sim_goal.py); this one waits on three
    subscriptions."""

    def __init__(self, node) -> None:
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.time_source import TimeSource

        self.node = rclpy.create_node(
            f"{node.get_name()}_inputs",
            namespace=node.get_namespace(),
            use_global_arguments=False,  # the launch's parameters (use_sim_time) are the task node's
            start_parameter_services=False,
        )
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self._spin, name="task_node inputs", daemon=True)
        self.time_source = None
        if node.get_parameter("use_sim_time").value:
            # The task node's clock follows /clock taken here. Its own time source subscribes to
            # /clock when use_sim_time is set; rclpy offers no public way to move that
            # subscription, so it is detached through the node's time source attribute.
            node._time_source.detach_node()
            self.time_source = TimeSource(node=self.node)
            self.time_source.ros_time_is_active = True
            self.time_source.attach_clock(node.get_clock())

    def start(self) -> None:
        self.thread.start()

    def _spin(self) -> None:
        from rclpy.executors import ExternalShutdownException

        with contextlib.suppress(ExternalShutdownException):  # rclpy shut down: the process ends
            self.executor.spin()

    def close(self) -> None:
        """Its executor stopped and its thread ended before its node (and the /clock subscription
        setting the task node's clock) is destroyed: nothing runs on a destroyed node."""
        self.executor.shutdown(timeout_sec=SHUTDOWN_WAIT)
        if self.thread.is_alive():
            self.thread.join(timeout=SHUTDOWN_WAIT)
        if self.time_source is not None:
            self.time_source.detach_node()
        self.node.destroy_node()


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
    from quirobot_control.procedures.drill_hole_executor import DrillRequest

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
    from quirobot_control.procedures.task_node_parameters import TASK_NODE, executor_timing
    from quirobot_description.ros_parameters import declare_parameters

    class TaskNode(LifecycleNode):
        def __init__(self) -> None:
            super().__init__("task_node")
            self.group = ReentrantCallbackGroup()
            self.active = False
            # Declared from their schema (procedures.task_node_parameters), nowhere else.
            parameters = declare_parameters(self, TASK_NODE)
            self.autostart = parameters["autostart"]
            self.states_topic = parameters["joint_states_topic"]
            self.task = parameters["task"]
            self.timing = executor_timing(parameters)
            self.waypoint_period = parameters["waypoint_period"]
            if parameters["registration_file"]:  # a bad file stops the node in one line (main)
                self.frame_broadcaster = broadcast_registration(self, parameters["registration_file"])
            self.calibration = None  # the nominal model
            if parameters["calibration_file"]:  # a bad file: one line (main), as the registration
                from quirobot_description.geometric_errors import read_calibration

                self.calibration = read_calibration(parameters["calibration_file"])
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
            self.port.state_changed = self._publish_state
            latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
            self.state_publisher = self.create_publisher(OperatingState, "/quirobot/state", latched)
            self.status_reporter = StateReporter(self)
            self.drive_services = DriveServices(self)
            self.scene = ScenePublisher(self)
            self.create_timer(1.0, self._publish_state, callback_group=self.group, clock=self.port.steady)
            self._publish_state()

        def on_activate(self, state) -> TransitionCallbackReturn:
            self.active = True
            if not hasattr(self, "server"):  # advertised once active: a goal found is never refused for
                self.server = ActionServer(  # a start-up still between configure and activate
                    self,
                    DrillHole,
                    "/quirobot/drill_hole",
                    execute_callback=self._execute,
                    goal_callback=lambda request: (
                        GoalResponse.ACCEPT if self.active and self.drill.accept() else GoalResponse.REJECT
                    ),
                    cancel_callback=self._on_cancel,
                    callback_group=self.group,
                )
            self.get_logger().info("task_node active: /quirobot/drill_hole")
            return super().on_activate(state)

        def on_deactivate(self, state) -> TransitionCallbackReturn:
            # No new goal; a running one is canceled as a client's cancel is (in bone the feed
            # retracts along the axis) and ends canceled: an inactive node drilled the rest of the
            # hole and reported success (issue 33 item 3). The retract runs on after this returns.
            self.active = False
            if hasattr(self, "drill") and self.drill.busy:
                self.drill.request_cancel(DEACTIVATED)
                self.get_logger().warning("deactivated mid-goal: the DrillHole goal is canceled")
            return super().on_deactivate(state)

        def destroy_node(self) -> None:
            # rclpy's destroy_node leaves action servers and clients (waitables) to the garbage
            # collector, which can run after the node's handle is gone (task_node exited -11 after
            # SIGINT, twice in long CI runs): they go first, here.
            if hasattr(self, "server"):
                self.server.destroy()
            if hasattr(self, "port"):
                for client in self.port.clients.values():
                    client.destroy()
                self.port.inputs.close()
            super().destroy_node()

        def _publish_state(self) -> None:
            if hasattr(self, "status_reporter"):
                self.status_reporter.publish()

        # --- the action ------------------------------------------------------------------------
        def _on_cancel(self, goal_handle) -> CancelResponse:
            self.drill.request_cancel()
            return CancelResponse.ACCEPT

        def _execute(self, goal_handle):
            self.port.goal_handle = goal_handle
            try:
                goal_id = bytes(goal_handle.goal_id.uuid).hex()
                result = self.drill.run(request_from_goal(goal_handle.request, self.task, goal_id))
            except Exception as error:  # a bug must not leave the goal without an end
                result = DrillResult(
                    Outcome.ABORTED,
                    ErrorCode.ABORTED_FAULT,
                    f"internal error: {error!r}",
                    stop_code=StopCode.INTERNAL,
                )
                self.get_logger().error(f"DrillHole: {error!r}")
            finally:
                self.port.goal_handle = None
            # One call site per severity: rclpy's logger refuses a call site whose severity changes.
            if result.outcome is Outcome.ABORTED:
                self.get_logger().error(f"DrillHole aborted ({result.error_code.name}): {result.message}")
            else:
                self.get_logger().info(
                    f"DrillHole {result.outcome.value} ({result.error_code.name}): {result.message}"
                )
            terminal_status(goal_handle, result.outcome)()
            self._publish_state()
            return result_message(result)

    return TaskNode()


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


class ScenePublisher:
    """/quirobot/scene (module docstring): planning.scene's markers of the task, the goal and the
    tip as a MarkerArray."""

    PERIOD = 0.1  # s (steady clock): RViz's view of the tip at 10 Hz

    def __init__(self, node) -> None:
        from quirobot.msg import DrillingContext as ContextMsg
        from rclpy.qos import DurabilityPolicy, QoSProfile
        from visualization_msgs.msg import MarkerArray

        from quirobot_control.axes.virtual_fixtures import ToolGeometry
        from quirobot_control.planning.tasks import load_task
        from quirobot_description.parameters import load_parameters

        self.node = node
        self.tool = ToolGeometry.from_parameters(load_parameters())
        task = load_task(node.task) if node.task else None
        self.zones = task.no_go_zones if task is not None else ()
        bone = getattr(task, "bone", None)
        self.bone = (task.entry, task.direction, bone) if bone is not None else None
        self.axis = None  # (entry, direction, depth) of the running goal
        self.path = None  # planning.scene.DrilledPath of the running goal
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.publisher = node.create_publisher(MarkerArray, "/quirobot/scene", latched)
        node.create_subscription(
            ContextMsg, "/quirobot/drilling_context", self._on_context, latched, callback_group=node.group
        )
        node.create_timer(self.PERIOD, self.publish, callback_group=node.group, clock=node.port.steady)
        self.publish()

    def _on_context(self, message) -> None:
        from quirobot_control.planning.scene import DrilledPath

        if not message.active:
            return  # the last goal's axis and path stay drawn until the next goal
        entry = np.array([message.entry.x, message.entry.y, message.entry.z])
        direction = np.array([message.direction.x, message.direction.y, message.direction.z])
        axis = (entry, direction, float(message.depth))
        if self.axis is None or not all(np.array_equal(a, b) for a, b in zip(axis, self.axis, strict=True)):
            self.axis, self.path = axis, DrilledPath(entry, direction / np.linalg.norm(direction))

    def publish(self) -> None:
        from quirobot_control.axes.virtual_fixtures import tip_positions
        from quirobot_control.nodes.markers import marker_array
        from quirobot_control.planning.scene import scene_markers

        measured = self.node.port.measured()
        tip = None if measured is None else tip_positions(measured.position[None], self.tool)[0]
        path = self.path
        if path is not None and tip is not None:
            path.add(tip)
        markers = scene_markers(
            zones=self.zones,
            bone=self.bone,
            planned_axis=self.axis,
            drilled_path=None if path is None else path.array(),
            tip=tip,
        )
        self.publisher.publish(marker_array(markers, self.node.get_clock().now().to_msg()))


class StateReporter:
    """/quirobot/state and the "quirobot/task" diagnostic from the port and the executor."""

    def __init__(self, node) -> None:
        from diagnostic_msgs.msg import DiagnosticArray

        self.node = node
        self.lock = threading.Lock()
        self.diagnostics = node.create_publisher(DiagnosticArray, "/diagnostics", 10)

    def publish(self) -> None:
        from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
        from quirobot.msg import OperatingState

        from quirobot_control.bridge.diagnostics import task_diagnostic

        node, executor = self.node, self.node.drill
        with self.lock:
            status = node.port.status()
            missing = executor.waiting_for()
            fault = executor.robot_fault()  # safety.stop_codes.merged_fault, the one rule
            message = OperatingState(
                ready=not missing,
                waiting_for="; ".join(missing),
                enabled=status.enabled,
                homed=status.homed,
                busy=executor.busy,
                fault=bool(fault),
                fault_reason=fault.reason,
                stop_code=int(fault.code),
                bit_in_bone=executor.bit_in_bone,
                phase=executor.phase if executor.started or executor.busy else "starting",
            )
            message.stamp = node.get_clock().now().to_msg()
            node.state_publisher.publish(message)
            entry = task_diagnostic(
                enabled=message.enabled,
                homed=message.homed,
                busy=message.busy,
                phase=message.phase,
                fault_reason=fault.reason,
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
            self.diagnostics.publish(array)


if __name__ == "__main__":
    sys.exit(main())
