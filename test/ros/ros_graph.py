"""What the ROS-tier tests share: a client node that talks to the launched stack over DDS.

`GraphClient` wraps one rclpy node with the waits the tests need: a message on a topic, a service
answer, a lifecycle node's transitions and state, the controller manager's active controllers, a
FollowJointTrajectory goal to its result, and the tf tree (robot_state_publisher's /tf and
/tf_static) as (4, 4) transforms. Everything waits on the ROS graph with a deadline and never
sleeps for a fixed time: the machines are loaded and slow, so every timeout is generous and no
test asserts a duration.

Import it only after `pytest.importorskip("rclpy")` (it imports ROS at module level).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np
import rclpy
from rclpy.action import ActionClient
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data

from quirobot_kinematics.rotations import matrix_from_quaternion

#: The controller manager's services (bringup.launch.py starts it as /controller_manager).
CONTROLLER_MANAGER = "/controller_manager"
#: QoS of /tf_static and /robot_description: late joiners get the last message.
LATCHED = QoSProfile(
    depth=100, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE
)


class GoalResult:
    """An action goal's result, for a spin loop's `done`: the product's own retry
    (quirobot_control.nodes.action_result: asked again each time the goal has ended and no answer
    came within `again_after` s; a get_result answer was lost under load in CI)."""

    def __init__(self, handle, again_after: float = 10.0) -> None:
        from quirobot_control.nodes.action_result import goal_result_request

        self._response = None
        self.request = goal_result_request(
            handle,
            self._keep,
            again_after,
            on_again=lambda n: print(f"the goal ended {again_after:g} s ago, no result came: asking again"),
        )

    def _keep(self, response) -> None:
        self._response = response

    def done(self) -> bool:
        return self.request.poll()

    def result(self):
        """The get_result response (`.status`, `.result`); call once `done()`."""
        return self._response


class GraphClient:
    """A test's node on the graph (see the module docstring); `close()` it."""

    def __init__(self, name: str) -> None:
        self.node = rclpy.create_node(name)
        self._subscriptions: dict[tuple[str, type], list] = {}

    def close(self) -> None:
        self.node.destroy_node()

    def spin_until(self, done: Callable[[], bool], timeout: float, what: str) -> None:
        """Spin the node until `done()` or raise AssertionError naming `what` after `timeout` s."""
        end = time.monotonic() + timeout
        while not done():
            if time.monotonic() > end:
                raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
            rclpy.spin_once(self.node, timeout_sec=0.05)

    def spin_until_simulated(
        self, done: Callable[[], bool], budget: float, what: str, stall: float = 180.0
    ) -> None:
        """Spin until `done()`, on the simulated clock (/clock): raise AssertionError naming `what`
        once `budget` s of simulated time have passed without it, or once /clock has not moved for
        `stall` s of wall time (a hung stack). A loaded machine slows the simulation and never
        fails this wait: simulated things are timed in simulated time."""
        from rosgraph_msgs.msg import Clock

        clock = self.messages(Clock, "/clock")

        def now() -> float | None:
            return None if not clock else clock[-1].clock.sec + clock[-1].clock.nanosec * 1e-9

        start = None
        last, last_moved = now(), time.monotonic()
        while not done():
            current = now()
            if current is not None and start is None:
                start = current
            if current != last:
                last, last_moved = current, time.monotonic()
            if start is not None and current - start > budget:
                raise AssertionError(f"no {what} after {budget:g} s of simulated time")
            if time.monotonic() - last_moved > stall:
                raise AssertionError(f"/clock stood still for {stall:g} s (wall) waiting for {what}")
            rclpy.spin_once(self.node, timeout_sec=0.05)

    def messages(self, message_type: type, topic: str, qos=qos_profile_sensor_data) -> list:
        """Every message received on `topic` since the first call for it (a live list)."""
        key = (topic, message_type)
        if key not in self._subscriptions:
            received: list = []
            self.node.create_subscription(message_type, topic, received.append, qos)
            self._subscriptions[key] = received
        return self._subscriptions[key]

    def next_message(
        self,
        message_type: type,
        topic: str,
        timeout: float = 60.0,
        qos=qos_profile_sensor_data,
        accept: Callable[[object], bool] = lambda _: True,
    ):
        """The first message on `topic` after this call that `accept`s."""
        received = self.messages(message_type, topic, qos)
        start = len(received)
        self.spin_until(lambda: any(accept(m) for m in received[start:]), timeout, f"a message on {topic}")
        return next(m for m in received[start:] if accept(m))

    def call(
        self, service_type: type, name: str, request, timeout: float = 30.0, resend_after: float | None = None
    ):
        """The response of service `name` to `request`, within `timeout` s in all.

        `resend_after` (s; a read-only request only): send it again when no answer came within that
        time. A server that answers before its response writer has matched this new client drops
        the answer (the rmw's "failed to send response ... (timeout): client will not receive
        response"), and the client waits for nothing: seen once in CI on the controller manager's
        list_controllers, right after it came up."""
        client = self.node.create_client(service_type, name)
        try:
            self.spin_until(client.service_is_ready, timeout, f"service {name}")
            end = time.monotonic() + timeout
            future, sent = client.call_async(request), time.monotonic()
            while not future.done():
                now = time.monotonic()
                if now > end:
                    raise AssertionError(f"timed out after {timeout:g} s waiting for the answer of {name}")
                if resend_after is not None and now - sent > resend_after:
                    future, sent = client.call_async(request), now
                rclpy.spin_once(self.node, timeout_sec=0.05)
            return future.result()
        finally:
            self.node.destroy_client(client)

    def lifecycle(self, node: str, transition: int, timeout: float = 30.0) -> bool:
        """Ask the lifecycle node `node` ("/scope_servo_node") for a transition (a
        lifecycle_msgs/Transition id), as `ros2 lifecycle set` does: whether it succeeded."""
        from lifecycle_msgs.msg import Transition
        from lifecycle_msgs.srv import ChangeState

        request = ChangeState.Request(transition=Transition(id=transition))
        return self.call(ChangeState, f"{node}/change_state", request, timeout).success

    def lifecycle_state(self, node: str, timeout: float = 30.0) -> tuple[int, str]:
        """`node`'s lifecycle state (`ros2 lifecycle get`): (lifecycle_msgs/State id, label)."""
        from lifecycle_msgs.srv import GetState

        current = self.call(GetState, f"{node}/get_state", GetState.Request(), timeout).current_state
        return current.id, current.label

    def wait_for_lifecycle_state(self, node: str, state: int, timeout: float) -> None:
        """Poll `node`'s lifecycle state until it is `state` (a lifecycle_msgs/State id);
        AssertionError naming the last one seen after `timeout` s."""
        seen: list[str] = []

        def reached() -> bool:
            current, label = self.lifecycle_state(node, timeout)
            seen.append(label)
            return current == state

        try:
            self.spin_until(reached, timeout, f"{node} in lifecycle state {state}")
        except AssertionError as error:
            raise AssertionError(f"{error} (last seen: {seen[-1] if seen else 'none'})") from None

    def controller_states(self) -> dict[str, str]:
        """{controller name: state} from the controller manager."""
        from controller_manager_msgs.srv import ListControllers

        request = ListControllers.Request()
        response = self.call(
            ListControllers, f"{CONTROLLER_MANAGER}/list_controllers", request, resend_after=5.0
        )
        return {c.name: c.state for c in response.controller}

    def wait_for_active_controllers(
        self, names: Sequence[str], timeout: float = 90.0, record: Callable[[], str] | None = None
    ) -> dict[str, str]:
        """Wait until every controller in `names` is active; the last states seen. On a timeout
        the error ends with `record()` (what the launch printed of the start-up, for CI's log)."""
        states: dict[str, str] = {}

        def all_active() -> bool:
            states.update(self.controller_states())
            return all(states.get(n) == "active" for n in names)

        end = time.monotonic() + timeout
        while not all_active():
            if time.monotonic() > end:
                told = f"\n{record()}" if record is not None else ""
                raise AssertionError(f"controllers not active after {timeout:g} s: {states}{told}")
            rclpy.spin_once(self.node, timeout_sec=0.5)
        return states

    def follow_trajectory(
        self,
        controller: str,
        joints: Sequence[str],
        waypoints: Sequence[tuple[float, Sequence[float]]],
        timeout: float = 60.0,
    ):
        """Send a FollowJointTrajectory goal to `controller` ((time s, positions) waypoints, at
        rest at the last one) and return (accepted, result, status)."""
        from builtin_interfaces.msg import Duration
        from control_msgs.action import FollowJointTrajectory
        from trajectory_msgs.msg import JointTrajectoryPoint

        client = ActionClient(self.node, FollowJointTrajectory, f"/{controller}/follow_joint_trajectory")
        try:
            self.spin_until(client.server_is_ready, timeout, f"the action server of {controller}")
            goal = FollowJointTrajectory.Goal()
            goal.trajectory.joint_names = list(joints)
            for k, (t, positions) in enumerate(waypoints):
                point = JointTrajectoryPoint()
                point.positions = [float(p) for p in positions]
                if k == len(waypoints) - 1:
                    point.velocities = [0.0] * len(joints)
                point.time_from_start = Duration(sec=int(t), nanosec=int(round((t % 1.0) * 1e9)))
                goal.trajectory.points.append(point)
            sent = client.send_goal_async(goal)
            self.spin_until(sent.done, timeout, f"{controller} to answer the goal")
            handle = sent.result()
            if not handle.accepted:
                return False, None, None
            result = GoalResult(handle)
            self.spin_until(result.done, timeout + waypoints[-1][0], f"{controller} to finish the goal")
            return True, result.result().result, result.result().status
        finally:
            client.destroy()

    def joint_positions(self, topic: str = "/joint_states", timeout: float = 30.0) -> dict[str, float]:
        """{joint: position} from the next JointState on `topic`."""
        from sensor_msgs.msg import JointState

        message = self.next_message(JointState, topic, timeout)
        return dict(zip(message.name, message.position, strict=True))

    def transforms(self, root: str, frames: Sequence[str], timeout: float = 30.0) -> dict[str, np.ndarray]:
        """{frame: (4, 4) pose in `root`} from /tf and /tf_static (dynamic transforms: the newest
        received), once every frame in `frames` has a complete chain of parents up to `root`."""
        from tf2_msgs.msg import TFMessage

        dynamic = self.messages(TFMessage, "/tf", 100)  # volatile: a latched reader gets nothing
        static = self.messages(TFMessage, "/tf_static", LATCHED)
        tree: dict[str, tuple[str, np.ndarray]] = {}

        def chains_complete() -> bool:
            for message in [*static, *dynamic]:
                for stamped in message.transforms:
                    tree[stamped.child_frame_id] = (stamped.header.frame_id, _matrix(stamped.transform))
            return all(_chain(tree, root, f) is not None for f in frames)

        self.spin_until(chains_complete, timeout, f"tf chains from {', '.join(frames)} to {root}")
        return {f: _chain(tree, root, f) for f in frames}


def _chain(tree: dict[str, tuple[str, np.ndarray]], root: str, frame: str) -> np.ndarray | None:
    """(4, 4) pose of `frame` in `root`, composed along the parents in `tree`; None if incomplete."""
    transform = np.eye(4)
    while frame != root:
        if frame not in tree:
            return None
        parent, local = tree[frame]
        transform = local @ transform
        frame = parent
    return transform


def _matrix(transform) -> np.ndarray:
    t, r = transform.translation, transform.rotation
    matrix = np.eye(4)
    matrix[:3, :3] = matrix_from_quaternion(r.x, r.y, r.z, r.w)
    matrix[:3, 3] = (t.x, t.y, t.z)
    return matrix
