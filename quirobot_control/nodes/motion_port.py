"""task_node's motion port: the DrillHole executor's `MotionPort` over ROS (procedures.drill_hole_executor).

- `StackListener`: what the port knows of the stack beneath it. The measured state from
  /quirobot/joint_states (on `InputNode`, a node of its own), the drives' state from
  /quirobot/drives/state (their latched stop and its code included: the one way drive_node
  publishes a stop), the active controllers from the controller manager's list_controllers
  (polled once a second), the robot description from /robot_description.
- `RosMotionPort`: trajectories go to joint_trajectory_controller and drill_feed_controller
  (FollowJointTrajectory) stamped with a common start time; the drilling context goes out latched
  on /quirobot/drilling_context; feedback on the running goal's handle; frames through tf2 (the
  latest transform, waited for up to FRAME_WAIT s). A motion whose acceptance has not arrived
  when it must stop is cancelled through the controller's cancel service with the zero goal id
  and stamp (every goal of that controller) and again when its acceptance arrives (ros2/rclpy#1123:
  nodes.rclpy_workarounds.race_free_action_client). A controller's result that has not come 10 s
  after its goal ended (the action's status topic says so) is asked for again
  (nodes.action_result: a lost service response would hold the DrillHole goal at its plan's end).
- `InputNode`: the high-rate inputs (joint states, /tf, /clock) on a second node spun by its own
  thread.

rclpy is imported only inside functions.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from quirobot_control.hardware.controllers import ARM_CONTROLLER, FEED_CONTROLLER
from quirobot_control.nodes.action_result import ResultRequests, goal_result_request
from quirobot_control.nodes.rclpy_workarounds import (
    race_free_action_client,
    spin_until_shutdown,
    take_clock_on,
)
from quirobot_control.planning.drill_hole import waypoints
from quirobot_control.procedures.drill_hole_port import Measurement, MotionRecord, MotionStatus, StackStatus
from quirobot_control.procedures.drill_hole_types import DrillFeedback
from quirobot_control.safety.hole_context import HoleContext
from quirobot_control.safety.stop_codes import StopCode
from quirobot_description.parameters import JOINT_NAMES, DrillParameters, axes_for

#: The drill's commanded axes (DrillHole drills): the arm's joints, then the feed.
DRILL_AXES = axes_for("drill")
#: The trajectory controllers a plan is split over (bringup.launch.py spawns them).
CONTROLLERS = {"arm": ARM_CONTROLLER, "feed": FEED_CONTROLLER}
COLUMNS = {"arm": list(range(len(JOINT_NAMES))), "feed": [DrillParameters.feed_index]}
#: s of wall time without joint states after which they count as lost on any clock (a
#: simulation that stopped altogether stops its clock too).
STATES_LOST_WALL = 5.0
#: s (wall) a goal's frame may take to reach tf2's buffer (a registration published just before).
FRAME_WAIT = 1.0
#: s (wall): the longest the executor's sleep on a simulated clock lasts if that clock stops.
SLEEP_WALL_LIMIT = 1.0
#: s to wait for an executor's callbacks, and the inputs' thread, to end on shutdown.
SHUTDOWN_WAIT = 5.0


class StackListener:
    """The stack beneath the port as task_node hears it (module docstring); thread-safe."""

    def __init__(self, node, group, states_topic: str, state_changed) -> None:
        from controller_manager_msgs.srv import ListControllers
        from quirobot.msg import DrivesState
        from rclpy.qos import DurabilityPolicy, QoSProfile, qos_profile_sensor_data
        from sensor_msgs.msg import JointState
        from std_msgs.msg import String

        self.node = node
        # Before the subscriptions: their callbacks run on other executor threads at once.
        self.state_changed = state_changed  # called with no argument on a change of the stack
        self.lock = threading.Lock()
        self.position: dict[str, float] = {}
        self.effort: dict[str, float] = {}
        self.states_wall = -np.inf  # time.monotonic() of the last joint states
        self.states_stamp = -np.inf  # the node's clock then (s)
        self.states_measured = -np.inf  # their header stamp (s): when drive_node measured them
        self.drives = StackStatus()
        self.active_controllers: set[str] = set()
        self.description = False
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
        self.list_controllers = node.create_client(
            ListControllers, "/controller_manager/list_controllers", callback_group=group
        )

    def now(self) -> float:
        return self.node.get_clock().now().nanoseconds * 1e-9

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
                breakthrough_early=message.breakthrough_early,
                commanded=message.commanded,
                hole_goal_id=message.hole_goal_id,
                hole_refused_goal_id=message.hole_refused_goal_id,
                hole_refused=message.hole_refused,
                hole_unwatched=message.hole_unwatched,
            )
        self.state_changed()

    def _on_description(self, message) -> None:
        self.description = bool(message.data)

    def poll_controllers(self) -> None:
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
            self.drives = StackStatus(
                True,
                self.drives.enabled,
                self.drives.homed,
                "",
                breakthrough="",
                commanded=self.drives.commanded,
            )

    def status(self, servers_ready) -> StackStatus:
        """The stack's status; `servers_ready(part)`: that part's action server is up."""
        missing = tuple(
            name
            for part, name in CONTROLLERS.items()
            if name not in self.active_controllers or not servers_ready(part)
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
            drives.breakthrough_early,
            drives.commanded,
            drives.hole_goal_id,
            drives.hole_refused_goal_id,
            drives.hole_refused,
            drives.hole_unwatched,
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


def trajectory_goal(goal, part: str, trajectory, waypoint_period: float):
    """`goal` (an empty FollowJointTrajectory goal) filled with `part`'s columns of `trajectory`,
    its waypoints every `waypoint_period` s; its start (header stamp) left for the sender."""
    from rclpy.duration import Duration
    from trajectory_msgs.msg import JointTrajectoryPoint

    message = goal.trajectory
    columns = COLUMNS[part]
    message.joint_names = [DRILL_AXES[c] for c in columns]
    for index in waypoints(trajectory, waypoint_period):
        point = JointTrajectoryPoint()
        point.positions = [float(v) for v in trajectory.positions[index, columns]]
        point.velocities = [float(v) for v in trajectory.velocities[index, columns]]
        point.accelerations = [float(v) for v in trajectory.accelerations[index, columns]]
        point.time_from_start = Duration(seconds=float(index * trajectory.dt)).to_msg()
        message.points.append(point)
    return goal


class RosMotionPort:
    """The DrillHole executor's MotionPort over ROS (module docstring)."""

    def __init__(self, node, group, states_topic: str, waypoint_period: float) -> None:
        from action_msgs.srv import CancelGoal
        from control_msgs.action import FollowJointTrajectory
        from quirobot.msg import DrillingContext as ContextMsg
        from rclpy.clock import Clock, ClockType
        from rclpy.qos import DurabilityPolicy, QoSProfile
        from tf2_ros import Buffer, TransformListener

        self.node, self.waypoint_period = node, waypoint_period
        self.state_changed = lambda: None  # the node sets its state publisher
        self.goal_handle = None
        self.stack = StackListener(node, group, states_topic, lambda: self.state_changed())
        self.inputs = self.stack.inputs
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.context_publisher = node.create_publisher(ContextMsg, "/quirobot/drilling_context", latched)
        self.goal_type = FollowJointTrajectory.Goal
        self.prepared: dict[str, tuple] = {}  # part -> (trajectory, its goal message), from prepare
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
        self.steady = Clock(clock_type=ClockType.STEADY_TIME)
        node.create_timer(1.0, self.stack.poll_controllers, callback_group=group, clock=self.steady)
        self.results = ResultRequests()  # the controllers' results still awaited
        node.create_timer(1.0, self.results.poll, callback_group=group, clock=self.steady)
        self.tf_buffer = Buffer()
        self.tf_listener = TransformListener(self.tf_buffer, self.inputs.node)
        self.inputs.start()

    def world_from(self, frame: str) -> np.ndarray:
        """(4, 4) world_from_frame: tf2's latest transform (MotionPort.world_from)."""
        return world_from_tf(self.tf_buffer, frame)

    def clear_stop(self) -> None:
        self.stack.clear_stop()

    # --- MotionPort ----------------------------------------------------------------------------
    def now(self) -> float:
        return self.stack.now()

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
        return self.stack.status(lambda part: self.clients[part].server_is_ready())

    def measured(self) -> Measurement | None:
        return self.stack.measured()

    def prepare(self, part: str, trajectory) -> None:
        """`part`'s goal for `trajectory` built now and kept for `send` (MotionPort.prepare says
        why)."""
        goal = trajectory_goal(self.goal_type(), part, trajectory, self.waypoint_period)
        self.prepared[part] = (trajectory, goal)

    def send(self, part: str, trajectory, start: float) -> MotionRecord:
        from rclpy.time import Time

        kept, goal = self.prepared.pop(part, (None, None))
        if kept is not trajectory:  # not prepared (a retract, a withdraw): built now
            goal = trajectory_goal(self.goal_type(), part, trajectory, self.waypoint_period)
        goal.trajectory.header.stamp = Time(nanoseconds=round(start * 1e9)).to_msg()
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
        logger, name = self.node.get_logger(), CONTROLLERS[part]
        request = goal_result_request(
            handle,
            lambda response: _on_result(response, record),
            on_again=lambda n: logger.warn(f"{name}: goal ended without its result: asking again (#{n + 1})"),
        )
        self.results.add(request)

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


def world_from_tf(buffer, frame: str) -> np.ndarray:
    """(4, 4) world_from_frame: the tf2 `buffer`'s latest transform, waited for up to FRAME_WAIT s;
    LookupError saying why if there is none."""
    from rclpy.time import Time
    from tf2_ros import TransformException

    from quirobot_kinematics.rotations import matrix_from_quaternion

    deadline = time.monotonic() + FRAME_WAIT
    while not buffer.can_transform("world", frame, Time()) and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        transform = buffer.lookup_transform("world", frame, Time()).transform
    except TransformException as error:
        raise LookupError(" ".join(str(error).split()) or type(error).__name__) from error
    q, t = transform.rotation, transform.translation
    T = np.eye(4)
    T[:3, :3] = matrix_from_quaternion(q.x, q.y, q.z, q.w)
    T[:3, 3] = t.x, t.y, t.z
    return T


def _on_result(response, record: MotionRecord) -> None:
    """A trajectory's FollowJointTrajectory get_result response into its record."""
    from action_msgs.msg import GoalStatus

    if response.status == GoalStatus.STATUS_SUCCEEDED:
        record.ended(MotionStatus.SUCCEEDED)
    elif response.status == GoalStatus.STATUS_CANCELED:
        record.ended(MotionStatus.CANCELED, "canceled")
    else:
        result = response.result
        record.ended(MotionStatus.ABORTED, result.error_string or f"error code {result.error_code}")


class InputNode:
    """`<node>_inputs`: a second node, spun by a single-threaded executor on a thread of its own,
    for the inputs that arrive at the control rate: the joint states, /tf and, with use_sim_time,
    /clock (it sets the task node's clock: rclpy_workarounds.take_clock_on). rclpy's executors
    rebuild their whole wait set each time they wake: on the task node's (its services, action
    server and clients, parameter and lifecycle services) each of the 100-250 Hz messages cost
    about 1 ms of CPU, which made task_node the stack's second-largest CPU user in simulation
    (bench/sim_goal.py); this one waits on three subscriptions."""

    def __init__(self, node) -> None:
        import rclpy
        from rclpy.executors import SingleThreadedExecutor

        self.node = rclpy.create_node(
            f"{node.get_name()}_inputs",
            namespace=node.get_namespace(),
            use_global_arguments=False,  # the launch's parameters (use_sim_time) are the task node's
            start_parameter_services=False,
        )
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self._spin, name="task_node inputs", daemon=True)
        self.time_source = (
            take_clock_on(node, self.node) if node.get_parameter("use_sim_time").value else None
        )

    def start(self) -> None:
        self.thread.start()

    def _spin(self) -> None:
        spin_until_shutdown(self.executor, self.node.context)  # rclpy shut down: the process ends

    def close(self) -> None:
        """Its executor stopped and its thread ended before its node (and the /clock subscription
        setting the task node's clock) is destroyed: nothing runs on a destroyed node."""
        self.executor.shutdown(timeout_sec=0.0)  # wakes its spin; rclpy's shutdown does not wait:
        if self.thread.is_alive():  # the callbacks run on this thread, joined instead
            self.thread.join(timeout=SHUTDOWN_WAIT)
        if self.time_source is not None:
            self.time_source.detach_node()
        self.node.destroy_node()
