"""Deactivating task_node mid-goal cancels the goal (issue 33 item 3: the inactive node drilled the
remaining 20 mm and reported success), over DDS on the installed package; /quirobot/state's
operating state (procedures.operating_state, issue 35 item 1) is BUSY while the goal waits and
INACTIVE once the node is deactivated.

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
import signal
import subprocess
import time

import pytest

pytest.importorskip("rclpy")
ament_index = pytest.importorskip("ament_index_python.packages")

#: s the goal would wait for the stack on the old node before being refused (the test's bound).
READY_TIMEOUT = 600.0


@pytest.fixture(scope="module")
def installed() -> None:
    try:
        ament_index.get_package_prefix("quirobot")
    except ament_index.PackageNotFoundError:
        pytest.skip("quirobot is not installed in the ROS environment (run .ci/ros-tier)")


@pytest.fixture
def task_node(installed, tmp_path):
    command = ["ros2", "run", "quirobot", "task_node", "--ros-args", "-p", f"ready_timeout:={READY_TIMEOUT}"]
    log = tmp_path / "task_node.log"
    with log.open("w") as out:  # a file, not a pipe: nothing blocks on an unread pipe
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    yield process
    for stop, wait in ((signal.SIGINT, 20), (signal.SIGKILL, 10)):  # the whole group (ros2 run's child)
        if process.poll() is not None:
            break
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, stop)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=wait)
    print(log.read_text()[-3000:])


def test_deactivating_task_node_mid_goal_cancels_the_goal(task_node):
    import rclpy
    from lifecycle_msgs.msg import State, Transition
    from lifecycle_msgs.srv import ChangeState, GetState
    from quirobot.action import DrillHole
    from quirobot.msg import OperatingState
    from rclpy.action import ActionClient
    from rclpy.qos import DurabilityPolicy, QoSProfile

    from quirobot_control.nodes.drill_hole_goal import drill_hole_goal
    from quirobot_control.planning.tasks import load_task

    rclpy.init()
    node = rclpy.create_node(f"deactivate_test_{os.getpid()}")
    try:

        def spin_until(done, timeout: float, what: str) -> None:
            end = time.monotonic() + timeout
            while not done():
                assert task_node.poll() is None, f"task_node exited with {task_node.returncode}"
                assert time.monotonic() < end, f"timed out after {timeout:g} s waiting for {what}"
                rclpy.spin_once(node, timeout_sec=0.05)

        client = ActionClient(node, DrillHole, "/quirobot/drill_hole")
        states: list = []
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        node.create_subscription(OperatingState, "/quirobot/state", states.append, latched)
        spin_until(lambda: client.server_is_ready(), 120.0, "the DrillHole action server")
        task = load_task("incision")
        goal = drill_hole_goal(task.entry, task.direction, task.depth, task.feed_rate, 60.0)
        feedback: list = []
        sent = client.send_goal_async(goal, feedback_callback=lambda m: feedback.append(m.feedback))
        spin_until(sent.done, 60.0, "the goal's acceptance")
        handle = sent.result()
        assert handle.accepted
        spin_until(
            lambda: any(f.phase == "waiting" for f in feedback), 60.0, "the goal waiting for the stack"
        )
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
        result = handle.get_result_async()
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
        again = client.send_goal_async(goal)
        spin_until(again.done, 60.0, "the answer to a goal sent to the inactive node")
        assert not again.result().accepted
    finally:
        node.destroy_node()
        rclpy.shutdown()
