"""Deactivating task_node mid-goal cancels the goal (issue 33 item 3: the inactive node drilled the
remaining 20 mm and reported success), over DDS on the installed package; /quirobot/state's
operating state (procedures.operating_state, issue 35 item 1) is BUSY while the goal waits and
INACTIVE once the node is deactivated. SIGINT mid-goal (a Ctrl-C of the launch) cancels the goal
the same way and task_node ends cleanly: status 0 within launch's 5 s, the goal's thread ended
before the node was destroyed (rclpy 7.1's executor.shutdown does not wait for it: task_node
crashed, -11, on a SIGINT in CI; the old node here kept the goal waiting and was still running
when launch would have escalated).

task_node alone (no drives, no controllers): a DrillHole goal is accepted and waits for the stack
(feedback phase "waiting"); /task_node/change_state deactivate then ends it at once with
CANCELED_RETRACTED, "canceled (task_node deactivated) while waiting: nothing moved" (the old node
kept the goal waiting until its ready_timeout and then refused it as not ready). The cancel is the
executor's own (in bone the feed retracts: test_drill_hole_monitoring.py measures that on the
in-process plant); what is tested here is the node's transition reaching it.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time

import pytest

pytest.importorskip("rclpy")
ament_index = pytest.importorskip("ament_index_python.packages")

#: s the goal would wait for the stack on the old node before being refused (the test's bound).
READY_TIMEOUT = 600.0
#: s from SIGINT to task_node's end: launch's sigterm_timeout (it escalates after it).
SIGINT_BOUND = 5.0


@pytest.fixture(scope="module")
def installed() -> None:
    try:
        ament_index.get_package_prefix("quirobot")
    except ament_index.PackageNotFoundError:
        pytest.skip("quirobot is not installed in the ROS environment (run .ci/ros-tier)")


@pytest.fixture
def task_node(installed, tmp_path):
    executable = os.path.join(ament_index.get_package_prefix("quirobot"), "lib", "quirobot", "task_node")
    command = [executable, "--ros-args", "-p", f"ready_timeout:={READY_TIMEOUT}"]
    log = tmp_path / "task_node.log"
    with log.open("w") as out:  # a file, not a pipe: nothing blocks on an unread pipe
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    process.log = log
    yield process
    for stop, wait in ((signal.SIGINT, 20), (signal.SIGKILL, 10)):  # the whole group (ros2 run's child)
        if process.poll() is not None:
            break
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, stop)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=wait)
    print(log.read_text()[-3000:])


class GoalClient:
    """The test's node: a DrillHole client whose shipped incision goal, accepted by task_node,
    waits for the stack (there is none: feedback phase "waiting"); `close()` it."""

    def __init__(self, task_node) -> None:
        import rclpy
        from quirobot.action import DrillHole
        from quirobot.msg import OperatingState
        from rclpy.action import ActionClient
        from rclpy.qos import DurabilityPolicy, QoSProfile

        from quirobot_control.nodes.drill_hole_goal import drill_hole_goal
        from quirobot_control.planning.tasks import load_task

        self.task_node = task_node
        rclpy.init()
        self.node = rclpy.create_node(f"deactivate_test_{os.getpid()}")
        self.client = ActionClient(self.node, DrillHole, "/quirobot/drill_hole")
        self.states: list = []
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.node.create_subscription(OperatingState, "/quirobot/state", self.states.append, latched)
        self.spin_until(lambda: self.client.server_is_ready(), 120.0, "the DrillHole action server")
        task = load_task("incision")
        self.goal = drill_hole_goal(task.entry, task.direction, task.depth, task.feed_rate, 60.0)
        self.feedback: list = []
        sent = self.client.send_goal_async(
            self.goal, feedback_callback=lambda m: self.feedback.append(m.feedback)
        )
        self.spin_until(sent.done, 60.0, "the goal's acceptance")
        self.handle = sent.result()
        assert self.handle.accepted
        self.spin_until(
            lambda: any(f.phase == "waiting" for f in self.feedback), 60.0, "the goal waiting for the stack"
        )

    def spin_until(self, done, timeout: float, what: str) -> None:
        import rclpy

        end = time.monotonic() + timeout
        while not done():
            assert self.task_node.poll() is None, f"task_node exited with {self.task_node.returncode}"
            assert time.monotonic() < end, f"timed out after {timeout:g} s waiting for {what}"
            rclpy.spin_once(self.node, timeout_sec=0.05)

    def close(self) -> None:
        import rclpy

        self.node.destroy_node()
        rclpy.shutdown()


def test_deactivating_task_node_mid_goal_cancels_the_goal(task_node):
    from lifecycle_msgs.msg import State, Transition
    from lifecycle_msgs.srv import ChangeState, GetState
    from quirobot.action import DrillHole
    from quirobot.msg import OperatingState

    test = GoalClient(task_node)
    try:
        node, spin_until, states = test.node, test.spin_until, test.states
        # Active first (its action server appears inside on_activate, before the transition ends:
        # a deactivate then is not a transition of "activating").
        get_state = node.create_client(GetState, "/task_node/get_state")

        def active() -> bool:
            if not get_state.service_is_ready():
                return False
            asked = get_state.call_async(GetState.Request())
            spin_until(asked.done, 60.0, "/task_node/get_state")
            return asked.result().current_state.id == State.PRIMARY_STATE_ACTIVE

        spin_until(active, 120.0, "task_node active")
        spin_until(
            lambda: states and states[-1].state == OperatingState.STATE_BUSY,
            60.0,
            "/quirobot/state BUSY while the goal waits",
        )
        change = node.create_client(ChangeState, "/task_node/change_state")
        spin_until(change.service_is_ready, 60.0, "/task_node/change_state")
        answer = change.call_async(
            ChangeState.Request(transition=Transition(id=Transition.TRANSITION_DEACTIVATE))
        )
        spin_until(answer.done, 60.0, "the deactivate transition")
        assert answer.result().success
        result = test.handle.get_result_async()
        # Far below READY_TIMEOUT: the old node kept waiting for the stack until then.
        spin_until(result.done, 120.0, "the goal's result after the deactivation")
        message = result.result().result
        assert message.error_code == DrillHole.Result.CANCELED_RETRACTED, message.message
        assert not message.success
        assert message.message.startswith("canceled (task_node deactivated)"), message.message
        assert message.stop_code == DrillHole.Result.STOP_NONE  # a cancel, not a stop
        spin_until(
            lambda: states[-1].state == OperatingState.STATE_INACTIVE and not states[-1].busy,
            60.0,
            "/quirobot/state INACTIVE after the deactivation",
        )
        # Inactive, it takes no new goal.
        again = test.client.send_goal_async(test.goal)
        spin_until(again.done, 60.0, "the answer to a goal sent to the inactive node")
        assert not again.result().accepted
    finally:
        test.close()


def test_sigint_mid_goal_cancels_it_and_task_node_ends_cleanly(task_node):
    test = GoalClient(task_node)
    try:
        sent = time.monotonic()
        task_node.send_signal(signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            task_node.wait(timeout=4 * SIGINT_BOUND)
        took = time.monotonic() - sent
    finally:
        test.close()
    log = task_node.log.read_text()
    assert task_node.returncode == 0, f"task_node: status {task_node.returncode} after SIGINT:\n{log[-3000:]}"
    assert took <= SIGINT_BOUND, f"task_node took {took:.1f} s to end after SIGINT:\n{log[-3000:]}"
    # The goal ended, its thread logging why, before the node was destroyed: by the node's cancel,
    # or first by a message it could no longer send ("task_node shut down mid-goal").
    assert re.search(r"DrillHole (canceled|aborted) \(\w+\): .*task_node shut down", log), log[-3000:]
    assert "callback still ran" not in log, log[-3000:]
