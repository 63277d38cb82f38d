"""`ros2 launch quirobot gazebo.launch.py` (headless) five times in a row: each start-up brings
the three controllers to active, its controller manager triggers its cycles on the ROS clock
(simulated time), Gazebo never aborts, and SIGINT ends everything it started.

Before config/controllers_gazebo.yaml set the controller manager's use_sim_time, 5 of 10 start-ups
aborted Gazebo right after "Activating controllers: [ joint_state_broadcaster ]" with "can't compare
times with different time sources" (controller_manager::update called from gz_ros2_control); the
first start-up here did so too on this environment before the fix. Why: controllers_gazebo.yaml.

Needs Gazebo (`../shared/ros2/install.sh VENV --gazebo`): skipped without ros_gz_sim, failed under
CI's ROS tier (QUIROBOT_ROS_TIER). Run: `bash .ci/ros-tier -k gazebo`.
"""

from __future__ import annotations

import os

import pytest

pytest.importorskip("launch_testing")
rclpy = pytest.importorskip("rclpy")

from gazebo_session import (  # noqa: E402
    CONTROLLERS,
    ROS_TRIGGER_CLOCK,
    TIME_SOURCE_CRASH,
    GazeboLaunch,
    wait_for_controllers,
)
from ros_graph import GraphClient  # noqa: E402

STARTUPS = 5


def _require_gazebo() -> None:
    from ament_index_python.packages import PackageNotFoundError, get_package_prefix

    for package in ("ros_gz_sim", "ros_gz_bridge", "gz_ros2_control"):
        try:
            get_package_prefix(package)
        except PackageNotFoundError:
            if os.environ.get("QUIROBOT_ROS_TIER"):
                pytest.fail(f"the ROS tier has no {package}: install the environment with --gazebo")
            pytest.skip(f"no {package} (Gazebo)")


@pytest.fixture
def graph():
    rclpy.init()
    client = GraphClient("test_gazebo_startup")
    yield client
    client.close()
    rclpy.shutdown()


def test_five_startups_in_a_row_come_up_and_stop_cleanly(graph):
    _require_gazebo()
    for attempt in range(1, STARTUPS + 1):
        launch = GazeboLaunch(label=f"gazebo_startup_{attempt}")
        try:
            try:
                states = wait_for_controllers(graph, launch)
            except AssertionError as error:
                raise AssertionError(f"start-up {attempt}: {error}") from None
            assert {n: states[n] for n in CONTROLLERS} == dict.fromkeys(CONTROLLERS, "active")
            launch.wait_for_spawners()
            code = launch.stop()
            log = launch.log()
            assert TIME_SOURCE_CRASH not in log, f"start-up {attempt}: Gazebo aborted, {launch.log_path}"
            assert ROS_TRIGGER_CLOCK in log, f"start-up {attempt}: not on the ROS clock, {launch.log_path}"
            assert code == 0, f"start-up {attempt}: launch exit code {code}, {launch.log_path}"
            assert launch.abnormal_exits() == [], f"start-up {attempt}: {launch.log_path}"
            assert launch.leftovers() == [], f"start-up {attempt}: left running"
        finally:
            launch.kill()
