"""exit_codes.upstream_deadlock and upstream_crash_after_shutdown: the two allowances of the launch
tests' exit-code check are narrow (an upstream rclcpp node killed by launch at a launch's shutdown;
ros2_control_node crashing only after its orderly shutdown, our hardware stopped first); the
real-exit behaviour is tested in test_launch_drive_node.py."""

from __future__ import annotations

import pytest

pytest.importorskip("launch_testing")

from exit_codes import CRASHED, KILLED, STOPPED, upstream_crash_after_shutdown, upstream_deadlock  # noqa: E402


def test_an_upstream_rclcpp_node_killed_at_shutdown_is_the_known_deadlock():
    assert upstream_deadlock("robot_state_publisher-6", KILLED, STOPPED)
    assert upstream_deadlock("ros2_control_node-2", KILLED, STOPPED)


@pytest.mark.parametrize(
    ("name", "code", "allowed"),
    [
        ("task_node-4", KILLED, STOPPED),  # the project's own nodes: never
        ("drive_node-3", KILLED, STOPPED),
        ("robot_state_publisher-6", -11, STOPPED),  # a crash is not the deadlock
        ("robot_state_publisher-6", -6, STOPPED),
        ("robot_state_publisher-6", KILLED, (0,)),  # only where a stop by the launch was expected
        ("robot_state_publisher_gui-1", KILLED, STOPPED),  # the executable's name, not a prefix
    ],
)
def test_nothing_else_is(name, code, allowed):
    assert not upstream_deadlock(name, code, allowed)


#: ros2_control_node's last lines before the upstream crash, as a CI rehearsal printed them.
ORDERLY_SHUTDOWN = """\
[INFO] [1796639799.961542699] [controller_manager]: Shutdown request received....
[INFO] [1796639799.961584902] [controller_manager]: Shutting down all controllers in the controller manager.
[INFO] [1796639799.961602228] [controller_manager]: Deactivating controller 'drill_feed_controller'
[INFO] [1796639799.961932650] [resource_manager]: 'deactivate' hardware 'QuirobotSystem'
[INFO] [1796639799.961946491] [resource_manager]: Successful 'deactivate' of hardware 'QuirobotSystem'
[INFO] [1796639799.961951248] [resource_manager]: 'shutdown' hardware 'QuirobotSystem'
[INFO] [1796639799.961953772] [resource_manager]: Successful 'shutdown' of hardware 'QuirobotSystem'
[INFO] [1796639799.961981413] [controller_manager]: Shutting down the controller manager.
"""


def test_a_controller_manager_crash_after_its_orderly_shutdown_is_the_known_upstream_one():
    assert upstream_crash_after_shutdown("ros2_control_node-2", CRASHED, STOPPED, ORDERLY_SHUTDOWN)


@pytest.mark.parametrize(
    ("name", "code", "allowed", "output"),
    [
        ("ros2_control_node-2", CRASHED, STOPPED, ORDERLY_SHUTDOWN.split("Successful 'shutdown'")[0]),
        ("ros2_control_node-2", CRASHED, STOPPED, ORDERLY_SHUTDOWN.replace("Successful 'deactivate'", "")),
        ("ros2_control_node-2", CRASHED, STOPPED, "\n".join(reversed(ORDERLY_SHUTDOWN.splitlines()))),
        ("ros2_control_node-2", CRASHED, STOPPED, ""),
        ("ros2_control_node-2", -6, STOPPED, ORDERLY_SHUTDOWN),  # an abort is not it
        ("ros2_control_node-2", CRASHED, (0,), ORDERLY_SHUTDOWN),
        ("robot_state_publisher-6", CRASHED, STOPPED, ORDERLY_SHUTDOWN),
        ("drive_node-3", CRASHED, STOPPED, ORDERLY_SHUTDOWN),  # the project's own nodes: never
    ],
)
def test_no_other_crash_is(name, code, allowed, output):
    assert not upstream_crash_after_shutdown(name, code, allowed, output)
