"""exit_codes.upstream_deadlock: the one allowance of the launch tests' exit-code check is narrow
(an upstream rclcpp node, killed by launch, at a launch's shutdown); its real-exit behaviour is
tested in test_launch_drive_node.py."""

from __future__ import annotations

import pytest

pytest.importorskip("launch_testing")

from exit_codes import KILLED, STOPPED, upstream_deadlock  # noqa: E402


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
