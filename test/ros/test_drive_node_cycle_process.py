"""Real rclpy: drive_node's own ROS side (nodes.drive_node.DriveNode: its subscriptions, timers,
services and DrivesState) over the real drives' cycle in a process of its own
(bridge.cycle_process, issue 32 item 1), against six simulated CiA 402 drives on python-can's
udp_multicast in a third process (test/support/drives_process.py, their watchdogs live).

What drive_node does with real drives must hold through the process: the commands reach the
drives, the joint states and the drives' state come back, the lifecycle services run; a callback
that blocks drive_node's executor 200 ms costs the bus nothing (before issue 32 the cycle was a
thread beside that executor, and shared its GIL: test_drive_cycle_rclpy.py measured 5-20 ms SYNC
gaps with the drives in the same process, and saw one trip a drive in CI): no SYNC gap comes near
the 200 ms (the cycle's own record); and when the cycle process dies, the drives stop on their
watchdogs and drive_node publishes the stop (DrivesState: not enabled, the reason) that the
controller stopper and task_node act on.

The drives' watchdogs judge the cycle's milliseconds only roughly here: six Python drive models on
the same two cores, with four busy processes beside them, once saw "no SYNC for 10 ms" while the
cycle's record held no gap over 7.4 ms. A drive that lost its master fails the test unless that
record holds a gap as long as the heartbeat watchdog's slack (drive.master_timeout minus
canopen.heartbeat_period: 6 ms), a stall of the host: then any failure before the child's death
(a drive that stopped itself, a service refused by a stopped drive) skips the test, naming the gap
(as test/package/test_bench_drive_loop.py skips on a host floor over its limit). Not a gap of 100
ms or more: that is the 200 ms block reaching the bus, and fails. On this VM with four busy
processes the cycle's record held 14-66 ms gaps (the hypervisor's steal; the bench's host floor
column); the cycle against the host's own floor is bench/drive_loop.py's (issue 32).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

rclpy = pytest.importorskip("rclpy")
TEST = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(TEST / "support"), str(TEST / "control" / "bridge")]  # the CANopen rig

from drives_process import DrivesProcess  # noqa: E402
from virtual_can import START, wait_until  # noqa: E402

from quirobot_control.bridge.cycle_process import ROS_SIDE_PRIORITY  # noqa: E402
from quirobot_control.bridge.cycle_realtime import lower_process  # noqa: E402
from quirobot_control.hardware.control_config import control_configuration  # noqa: E402
from quirobot_description.urdf import robot_description  # noqa: E402

TIMEOUT = 20.0  # s (wall) for anything to arrive on a loaded machine
SLOW = 0.2  # s, a blocking callback of drive_node's executor


def spin_until(executor, condition, timeout: float = TIMEOUT) -> bool:
    end = time.monotonic() + timeout
    while not condition() and time.monotonic() < end:
        executor.spin_once(timeout_sec=0.01)
    return condition()


def test_drive_node_drives_the_cycle_process_and_publishes_its_death(tmp_path):
    from quirobot.msg import DrivesState
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from rclpy.parameter import Parameter
    from rclpy.qos import DurabilityPolicy, QoSProfile, qos_profile_sensor_data
    from sensor_msgs.msg import JointState
    from std_srvs.srv import Trigger

    from quirobot_control.nodes.drive_node import DriveNode, _declare_parameters, _start_real_cycle

    drives = DrivesProcess.start()
    params = drives.params
    control = control_configuration(params)
    description = robot_description("drill", "real")
    rclpy.init()
    overrides = [
        Parameter("drive_backend", value="canopen"),
        Parameter("robot_description", value=description),
        Parameter("stop_controllers", value=["quirobot_test_no_controller"]),
    ]
    node = Node("drive_node", parameter_overrides=overrides)
    client_node = Node("drive_node_test_client")
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    executor.add_node(client_node)
    skin, process, done = None, None, threading.Event()
    try:
        skin = DriveNode(node, _declare_parameters(node), None, control)
        process = _start_real_cycle(params, control, description, drives.config, node)  # drive_node's
        skin.attach(process.bridge, process)
        states, drive_states = [], []
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        # Five joint states (drive_node publishes one a period: the test's executor must keep up).
        joint_states = client_node.create_subscription(
            JointState,
            "/quirobot/joint_states",
            lambda message: states.append(message) if len(states) < 5 else None,
            qos_profile_sensor_data,
        )
        client_node.create_subscription(DrivesState, "/quirobot/drives/state", drive_states.append, latched)
        commands = client_node.create_publisher(
            JointState, "/quirobot/joint_commands", qos_profile_sensor_data
        )
        names = list(process.names)

        def command() -> None:  # as ros2_control_node, from outside drive_node's executor
            message = JointState()
            message.name = names
            message.position = [START[n] for n in names]
            message.velocity = [0.0] * len(names)
            while not done.wait(0.01):
                commands.publish(message)

        commander = threading.Thread(target=command, daemon=True)
        commander.start()
        assert spin_until(executor, lambda: drive_states and drive_states[-1].commanded), drive_states[-1:]
        start = int(process.request("timing")["cycles"])
        slack = params.drive.master_timeout - params.canopen.heartbeat_period  # s, the heartbeat's
        try:
            drives.live()
            first = skin.published_cycle
            assert spin_until(executor, lambda: skin.published_cycle > first + 50 and len(states) == 5)
            client_node.destroy_subscription(joint_states)  # 1 kHz of messages this test reads no more
            assert list(states[-1].name) == names
            assert abs(states[-1].position[names.index("gantry_x")] - START["gantry_x"]) < 1e-4
            assert drive_states[-1].enabled and drive_states[-1].stop_reason == ""

            # The lifecycle services, run by the child exclusively while the bus stays alive.
            for service, answer in (("disable", "disabled"), ("enable", "enabled")):
                client = client_node.create_client(Trigger, f"/quirobot/drives/{service}")
                future = client.call_async(Trigger.Request())
                assert spin_until(executor, future.done), service
                assert future.result().success and future.result().message == answer, future.result()
            assert drives.master_lost() == {}
            assert spin_until(executor, lambda: drive_states[-1].commanded), drive_states[-1]
            assert drive_states[-1].enabled and drives.enabled(), drives.states()

            # A callback of drive_node's executor that blocks it 200 ms, three times: the cycle, in
            # its own process, sends every SYNC; the relayed commands pause (the bridge holds
            # position on its 20 ms watchdog) but come back before its 0.5 s stop.
            slow, since = [], process.request("timing")["cycles"]
            blocker = node.create_timer(0.3, lambda: slow.append(time.sleep(SLOW)))
            assert spin_until(executor, lambda: len(slow) >= 3)
            blocker.cancel()
            assert spin_until(executor, lambda: skin.published_cycle > first + 100)
            timing = process.request("timing", int(since))
            print(f"the cycle while drive_node's executor was blocked: {timing}")
            gap = timing["sync_gap_max"]  # s, the longest without a SYNC (the cycle's record)
            # Under the 200 ms block by half: the kernel's real-time throttling (sched_rt_runtime_us,
            # 95 % of each second) can pause every real-time thread for 50 ms on two loaded cores (a
            # 54 ms gap seen with four busy processes), which is the host's, not the executor's.
            assert gap < SLOW / 2, f"a {gap * 1e3:.1f} ms SYNC gap: drive_node's executor reached the bus"
            assert drives.master_lost() == {}
            assert drive_states[-1].stop_reason == "" and drive_states[-1].enabled, drive_states[-1]
            assert drives.enabled(), drives.states()
        except AssertionError as failure:  # the module doc: a stall of the host, or a failure
            gap = process.request("timing", start)["sync_gap_max"]
            if slack <= gap < SLOW / 2:
                why = " ".join(str(failure).split())[:300]
                pytest.skip(
                    f"the host stalled the cycle: {gap * 1e3:.1f} ms between SYNCs (its own record), "
                    f"past the drives' heartbeat slack {slack * 1e3:.0f} ms: {why}"
                )
            raise

        # The cycle process dies: the drives stop themselves, drive_node says so.
        os.kill(process.child.pid, signal.SIGKILL)
        assert spin_until(
            executor, lambda: drive_states[-1].stop_reason.startswith("drive cycle process ended")
        ), drive_states[-1]
        assert not drive_states[-1].enabled
        assert wait_until(lambda: len(drives.master_lost()) == len(names), 2.0), drives.master_lost()
    finally:
        done.set()
        if process is not None:
            process.stop()
        lower_process(ROS_SIDE_PRIORITY)  # this test process back to normal scheduling
        executor.shutdown(timeout_sec=1.0)
        node.destroy_node()
        client_node.destroy_node()
        rclpy.shutdown()
        drives.close()
