"""`ros2 launch quirobot gazebo.launch.py` (headless) five times in a row: each start-up brings
the three controllers to active, its controller manager triggers its cycles on the ROS clock
(simulated time), Gazebo never aborts, and SIGINT ends everything it started.

Before config/controllers_gazebo.yaml set the controller manager's use_sim_time, 5 of 10 start-ups
aborted Gazebo right after "Activating controllers: [ joint_state_broadcaster ]" with "can't compare
times with different time sources" (controller_manager::update called from gz_ros2_control); the
first start-up here did so too on this environment before the fix. Why: controllers_gazebo.yaml.

And a FollowJointTrajectory goal on the arm and one on the drill feed reach their targets on
Gazebo's physics, where Gazebo's own pose of the drill tip (its drill_bit link, from
/world/empty/dynamic_pose/info over gz-transport) agrees with the closed-form FK of the joint
states within TIP_BOUND_M / TIP_BOUND_RAD (their reasons there).

Needs Gazebo (`../shared/ros2/install.sh VENV --gazebo`): skipped without ros_gz_sim, failed under
CI's ROS tier (QUIROBOT_ROS_TIER). Run: `bash .ci/ros-tier -k gazebo`.
"""

from __future__ import annotations

import time

import pytest

pytest.importorskip("launch_testing")
rclpy = pytest.importorskip("rclpy")

from gazebo_session import (  # noqa: E402
    CONTROLLERS,
    ROS_TRIGGER_CLOCK,
    TIME_SOURCE_CRASH,
    GazeboLaunch,
    gazebo_poses,
    require_gazebo,
    wait_for_controllers,
)
from ros_graph import GraphClient  # noqa: E402

STARTUPS = 5


@pytest.fixture
def graph():
    rclpy.init()
    client = GraphClient("test_gazebo_startup")
    yield client
    client.close()
    rclpy.shutdown()


def test_five_startups_in_a_row_come_up_and_stop_cleanly(graph):
    require_gazebo()
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
            print(f"start-up {attempt}: /clock bridge's abnormal exits: {launch.bridge_failures()}")
            assert launch.leftovers() == [], f"start-up {attempt}: left running"
        finally:
            launch.kill()


#: An in-limit arm pose (m, m, m, rad, rad) and drill-feed position (m) to drive to (as
#: test_launch_bringup.py's mock goal).
ARM_GOAL = [0.62, 0.81, 0.35, 0.6, 0.9]
FEED_GOAL = 0.03
#: Gazebo's drill_bit link against the closed-form FK of the joint states, at rest (m, rad).
#: Orientation: both evaluate the same rotations in double precision from the same joint angles
#: (about 10 operations x 2.2e-16: 1e-15 rad; measured 5e-16), so 1e-8 rad is a wide bound that a
#: wrong axis, sign or lumped frame (0.01 rad and up) cannot pass. Position: measured 1.2e-6 m and
#: 1.0e-7 m in two runs while the joint states equal their targets to 1e-13; Gazebo's link poses
#: (DART, joints driven by gz_ros2_control's velocity commands) sit up to 1.5e-7 m off the joint
#: coordinates per axis even at z_ram, three prismatic joints from the fixed base: a physics-side
#: residual this test does not explain, far above rounding (7e-15 m). The bound is the task's own
#: precision instead, the 10 um within which the same hole must repeat (issue 34): Gazebo's ground
#: truth and the FK agree to better than what the DrillHole test asks of the hole; a wrong joint
#: offset, axis or tool length would be millimetres.
TIP_BOUND_M = 1e-5
TIP_BOUND_RAD = 1e-8


#: Reads of the joint states around Gazebo's poses before the joints count as still moving.
REST_ATTEMPTS = 30


def _poses_at_rest(graph, launch, names: list[str]) -> tuple[dict[str, float], float, dict]:
    """Gazebo's poses between two joint-state reads that agree (m, rad) as the single check before
    did, np.testing.assert_allclose(atol=1e-12) with its default rtol of 1e-7: the joints at rest.
    A controller's goal succeeds within its goal tolerance, and the feed may still settle after it
    (a CI run read it 7.4 nm apart across the poses); each attempt spends the simulated time of
    three messages, and the joints must come to rest within REST_ATTEMPTS of them."""
    moved: dict[str, float] = {}
    for _ in range(REST_ATTEMPTS):
        before = graph.joint_positions()
        stamp, poses = gazebo_poses(launch, "/world/empty/dynamic_pose/info")
        after = graph.joint_positions()
        moved = {
            n: abs(after[n] - before[n])
            for n in names
            if not abs(after[n] - before[n]) <= 1e-12 + 1e-7 * abs(before[n])
        }
        if not moved:
            return after, stamp, poses
    raise AssertionError(
        f"the joints did not come to rest after the goals ({REST_ATTEMPTS} reads): moved {moved}"
    )


def test_a_trajectory_goal_reaches_its_target_and_gazebo_agrees_with_the_fk(graph):
    import numpy as np

    from quirobot_description.parameters import JOINT_NAMES, load_parameters
    from quirobot_kinematics.forward import forward_kinematics
    from quirobot_kinematics.model import KinematicModel

    require_gazebo()
    parameters = load_parameters()
    model = KinematicModel.from_parameters(parameters)
    launch = GazeboLaunch(label="gazebo_goal")
    try:
        wait_for_controllers(graph, launch)
        _check_the_scene(launch, parameters)
        sim_start, _ = gazebo_poses(launch, "/world/empty/dynamic_pose/info")
        wall_start = time.monotonic()
        start = graph.joint_positions()
        q0 = [start[n] for n in JOINT_NAMES]
        midway = [0.5 * (a + b) for a, b in zip(q0, ARM_GOAL, strict=True)]
        accepted, result, _ = graph.follow_trajectory(
            "joint_trajectory_controller", JOINT_NAMES, [(3.0, midway), (6.0, ARM_GOAL)], timeout=300.0
        )
        assert accepted, "the arm goal was rejected"
        assert result.error_code == 0, result.error_string  # SUCCESSFUL
        # 30 mm in 6 s: a peak of 7.5 mm/s, inside the feed's 10 mm/s velocity limit
        accepted, result, _ = graph.follow_trajectory(
            "drill_feed_controller", ["drill_feed"], [(6.0, [FEED_GOAL])], timeout=300.0
        )
        assert accepted, "the feed goal was rejected"
        assert result.error_code == 0, result.error_string

        # At rest: the joint states before and after Gazebo's poses must agree (nothing moved).
        names = [*JOINT_NAMES, "drill_feed"]
        after, stamp, poses = _poses_at_rest(graph, launch, names)
        # reported, never asserted (a loaded machine slows Gazebo; lock-step keeps the result)
        print(f"sim/wall over the goals: {(stamp - sim_start) / (time.monotonic() - wall_start):.2f}")
        np.testing.assert_allclose([after[n] for n in JOINT_NAMES], ARM_GOAL, atol=1e-4)  # goal tolerance
        assert abs(after["drill_feed"] - FEED_GOAL) <= 5e-5

        # The model stands where the launch spawned it: the URDF's world at the mount height.
        expected_model = np.eye(4)
        expected_model[2, 3] = parameters.structure.mount_height
        np.testing.assert_allclose(poses["quirobot"], expected_model, atol=1e-12)
        # drill_bit (its frame is the drill tip's: drill_tip_joint is the identity) relative to
        # the model, i.e. in the URDF's world frame, against the FK of the joint states.
        fk = forward_kinematics([after[n] for n in JOINT_NAMES], model, feed=after["drill_feed"])
        gazebo = poses["drill_bit"]
        position_error = float(np.linalg.norm(gazebo[:3, 3] - fk[:3, 3]))
        relative = gazebo[:3, :3].T @ fk[:3, :3]  # the rotation between them: its angle, well
        # conditioned near zero (arccos of the trace alone would lose it below 1e-8)
        axis = [
            relative[2, 1] - relative[1, 2],
            relative[0, 2] - relative[2, 0],
            relative[1, 0] - relative[0, 1],
        ]
        angle_error = float(np.arctan2(0.5 * np.linalg.norm(axis), 0.5 * (np.trace(relative) - 1.0)))
        print(
            f"gazebo drill tip vs FK at t_sim = {stamp:.3f} s: {position_error:.3e} m, {angle_error:.3e} rad"
        )
        assert position_error <= TIP_BOUND_M, (position_error, gazebo, fk)
        assert angle_error <= TIP_BOUND_RAD, (angle_error, gazebo, fk)
        assert launch.stop() == 0
        assert launch.abnormal_exits() == [], launch.log_path
        assert launch.leftovers() == []
    finally:
        launch.kill()


def _check_the_scene(launch: GazeboLaunch, parameters) -> None:
    """The incision task's scene (the launch's default task) stands in Gazebo's world as the
    static model `scene`, at the mount height like the robot: a link per solid of task_node's
    RViz scene (planning.scene.scene_markers of the same task file), at its pose (within rounding:
    SDF text of repr'd doubles), each with its shape as collision and visual."""
    import numpy as np

    from quirobot_control.planning.scene import scene_markers
    from quirobot_control.planning.tasks import load_task
    from quirobot_kinematics.rotations import matrix_from_quaternion

    task = load_task("incision")
    markers = scene_markers(zones=task.no_go_zones, bone=(task.entry, task.direction, task.bone))
    assert {m.namespace for m in markers} == {"no_go_zones", "bone"}  # the table and the tibia's layers
    _, poses = gazebo_poses(launch, "/world/empty/pose/info")
    expected_model = np.eye(4)
    expected_model[2, 3] = parameters.structure.mount_height
    np.testing.assert_allclose(poses["scene"], expected_model, atol=1e-12)
    for marker in markers:
        name = f"{marker.namespace}_{marker.id}"
        assert name in poses, f"no {name} in Gazebo's world"
        np.testing.assert_allclose(poses[name][:3, 3], marker.position, atol=1e-12, err_msg=name)
        np.testing.assert_allclose(
            poses[name][:3, :3], matrix_from_quaternion(*marker.orientation), atol=1e-12, err_msg=name
        )
