"""A DrillHole goal on Gazebo (issue 34 items 3-5): `ros2 launch quirobot gazebo.launch.py
task:=none drill_hole:=true` brings up Gazebo's physics with gz_ros2_control's controllers, task_node and
gazebo_drives_node (simulation.gazebo_drives: Gazebo's stand-in for drive_node); a client sends
the shipped incision's goal, shortened (5 mm deep, from a pose on its approach), as another node
does:

1. idle: the goal succeeds, its hole within the DrillHole tolerances (depth 0.05 mm, lateral
   0.1 mm), drilled in free space: Gazebo models no drilling thrust and its bone solids are rigid
   collision bodies (task:=none leaves the scene out; the goal has no bone model: a goal with
   one is refused by the drive side, which a third goal checks);
2. ground truth during the goal: Gazebo's own drill_bit position (gz-transport's
   /world/empty/dynamic_pose/info, sampled through the goal) lies on the tip path of the
   closed-form FK of the goal's joint states, within TIP_BOUND_M (`tip_errors`:
   matched by geometry over the goal's states, since the joint states' stamps are the
   controllers' clock, not the physics' that stamps the poses: docs/gazebo.md); the largest
   distance is printed;
3. loaded: the same goal with two busy processes per core beside the stack gives the same hole
   (depth and lateral deviation within SAME_HOLE): Gazebo steps the controller manager in
   lock-step, but the controllers' clock is its node's copy of /clock, which jumps under load
   (docs/gazebo.md; JointStates.frozen counts it), and task_node's path time-out on Gazebo
   (simulation.gazebo_drives.PATH_TIME_OUT) lets the position loop close each jump's step;
   sim/wall of both runs, their path summary and the frozen-clock count printed;
4. Ctrl-C ends everything the launch started.

Needs Gazebo (`../shared/ros2/install.sh VENV --gazebo`), as test_launch_gazebo.py.
"""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

pytest.importorskip("launch_testing")
rclpy = pytest.importorskip("rclpy")

from busy_load import BUSY_PER_CORE, busy_processes  # noqa: E402
from gazebo_session import GazeboLaunch, gazebo_poses, require_gazebo, wait_for_controllers  # noqa: E402
from ros_graph import GoalResult, GraphClient  # noqa: E402
from test_launch_gazebo import TIP_BOUND_M  # noqa: E402

#: The goal: the shipped incision's entry and axis, 5 mm at its feed rate (a shorter feed than
#: its 25.2 mm: the same phases, a shorter run).
DEPTH = 5e-3  # m
#: Where on the goal's approach from the task's park pose the arm starts (`start_on_the_approach`):
#: at 0.8 the slowed approach and the move back are 11 s each instead of 53 s (gazebo.launch.py's
#: task_node slows them for its 50 ms tracking lag, 10 mm/s), a goal of 44 s of simulated time
#: instead of 127, with the same phases and the same cruise speed through the controllers' clock
#: jumps. Each of the two goals ran about 150 s of wall time from the park pose.
APPROACH_DONE = 0.8
DEPTH_TOLERANCE = 0.05e-3  # m, the DrillHole tolerances (test_launch_drill_hole.py)
LATERAL_TOLERANCE = 0.1e-3  # m
#: m: the loaded hole against the idle one (issue 34's "the same hole within 10 um").
SAME_HOLE = 10e-6
#: m: the longest step between consecutive received states' tips through which tip_errors matches
#: a pose against the straight polyline. The test's own /joint_states subscription drops states on
#: a loaded machine (a 0.43 mm "error" across such a gap failed one run), and across a gap the tip
#: path curves away from the chord: by c**2 / (8 R) for a chord c on a radius R, 0.5 um at 0.6 mm
#: where the wrist turns the tip on 0.1 m. The chord can only make a pose look farther from the
#: path than it is (a pose on the path lies within the sagitta of the chord), never nearer: a sample
#: nearest to a longer chord is left out, not passed; three or more must still be matched.
MAX_CHORD_M = 0.6e-3
POSES = "/world/empty/dynamic_pose/info"


@pytest.fixture
def graph():
    rclpy.init()
    client = GraphClient("test_gazebo_drill_hole")
    yield client
    client.close()
    rclpy.shutdown()


class JointStates:
    """/joint_states as (stamp s, the drill's six axes) rows, preallocated for the whole test."""

    CAPACITY = 1_200_000  # 20 min of states at the controller manager's 1 kHz

    def __init__(self, graph: GraphClient) -> None:
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState

        from quirobot_description.parameters import axes_for

        self.axes = axes_for("drill")
        self.rows = np.full((self.CAPACITY, 1 + len(self.axes)), np.nan)
        self.count = 0
        # best effort as joint_state_broadcaster's readers take it, with room for a second of
        # states while this process waits for a CPU (the sensor-data profile keeps 5)
        qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.BEST_EFFORT)
        graph.node.create_subscription(JointState, "/joint_states", self._on_state, qos)

    def _on_state(self, message) -> None:
        if self.count >= self.CAPACITY:
            return
        position = dict(zip(message.name, message.position, strict=False))
        stamp = message.header.stamp.sec + 1e-9 * message.header.stamp.nanosec
        self.rows[self.count] = [stamp, *(position[n] for n in self.axes)]
        self.count += 1

    def frozen(self, first: int, end: int) -> str:
        """Among the states received `first` to `end` (arrival order), the consecutive ones that
        carry one stamp although the joints moved between them: the controllers' clock (the
        controller manager node's copy of /clock, docs/gazebo.md) stood while physics stepped.
        Counted, not asserted: upstream's behaviour, which task_node's path time-out allows for."""
        rows = self.rows[first:end]
        same = rows[1:, 0] == rows[:-1, 0]
        moved = np.any(rows[1:, 1:] != rows[:-1, 1:], axis=1)
        return f"{int(np.count_nonzero(same & moved))} of {max(len(rows) - 1, 0)} consecutive joint states"


class PoseSampler:
    """Gazebo's poses, sampled by a thread of its own while a goal runs (`gz topic`, no rclpy)."""

    def __init__(self, launch: GazeboLaunch) -> None:
        self.launch, self.samples, self.stop = launch, [], threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                self.samples.append(gazebo_poses(self.launch, POSES, timeout=30.0))
            except Exception as error:  # noqa: BLE001 - a sample lost is reported, not fatal
                print(f"gazebo pose sample lost: {error}")
            self.stop.wait(1.0)

    def close(self) -> list:
        self.stop.set()
        self.thread.join(60.0)
        return self.samples


def tip_errors(samples, rows: np.ndarray, model) -> list[tuple[float, float]]:
    """(sim s, distance m) per pose sample: the distance from Gazebo's drill_bit position to the
    tip path of the goal's joint states `rows` (JointStates rows in arrival order, the order of the
    physics steps: the polyline through the FK's tips, trusted across MAX_CHORD_M at most).
    Matched by geometry over the whole goal, not by stamp: the joint states carry the controllers'
    clock, not the physics' that stamps the poses (docs/gazebo.md); matched among the states
    stamped within 0.5 s of the pose, and then within 3 s (sorted by stamp), poses failed idle runs
    at 2.2 and 1.0 mm. A pose nearer another part of the path would lie on the path all the same,
    so nothing wrong is matched; where on the path (when) is not reported: the tip retraces its
    approach when it parks."""
    from quirobot_description.parameters import JOINT_NAMES
    from quirobot_kinematics.forward import forward_kinematics

    if len(rows) < 2:
        return []
    tips = np.array(
        [forward_kinematics(list(r[1 : 1 + len(JOINT_NAMES)]), model, feed=r[-1])[:3, 3] for r in rows]
    )
    a, d = tips[:-1], np.diff(tips, axis=0)
    length2 = np.einsum("ij,ij->i", d, d)
    errors = []
    for stamp, poses in samples:
        if "drill_bit" not in poses:
            continue
        point = poses["drill_bit"][:3, 3]
        t = np.clip(np.einsum("ij,ij->i", point - a, d) / np.where(length2 > 0.0, length2, 1.0), 0.0, 1.0)
        distances = np.linalg.norm(a + t[:, None] * d - point, axis=1)
        k = int(np.argmin(distances))
        if length2[k] > MAX_CHORD_M**2:
            continue  # the test's own subscription missed the states there (see MAX_CHORD_M)
        errors.append((stamp, float(distances[k])))
    return errors


def start_on_the_approach(task, depth: float, done: float) -> list[float]:
    """The joint pose (6,) (m, rad; arm joints then drill_feed) `done` of the way along the
    approach of the goal's plan from the task's park pose: a pose the planner itself passes
    through, so a goal planned from it has the same phases with a shorter approach and return."""
    from quirobot_control.planning.drill_hole import DrillGoal, plan_drill_hole
    from quirobot_control.procedures.drill_hole_types import ExecutorConfig
    from quirobot_description.parameters import load_parameters

    config = ExecutorConfig.shipped(load_parameters())
    goal = DrillGoal(np.asarray(task.entry), np.asarray(task.direction), depth, task.feed_rate, 60.0)
    plan = plan_drill_hole(
        goal,
        np.asarray(task.park, dtype=float),
        config.params,
        config.dt,
        None,
        bone_model=False,
        feed_mass=config.feed_mass,
    ).trajectory
    approach = next(phase for phase in plan.phases if phase.name == "approach")
    t = approach.start_time + done * (approach.end_time - approach.start_time)
    return [float(v) for v in plan.positions[round(t / plan.dt)]]


def test_a_drill_hole_goal_on_gazebo_idle_and_loaded(graph):
    from quirobot.action import DrillHole
    from rclpy.action import ActionClient

    from quirobot_control.nodes.drill_hole_goal import drill_hole_goal
    from quirobot_control.planning.tasks import load_task
    from quirobot_control.procedures.drill_hole_executor import ErrorCode
    from quirobot_description.parameters import JOINT_NAMES, load_parameters
    from quirobot_kinematics.model import KinematicModel

    require_gazebo()
    model = KinematicModel.from_parameters(load_parameters())
    task = load_task("incision")
    launch = GazeboLaunch("task:=none", "drill_hole:=true", label="gazebo_drill_hole")
    client = ActionClient(graph.node, DrillHole, "/quirobot/drill_hole")
    try:
        wait_for_controllers(graph, launch)
        launch.wait_for_spawners()
        states = JointStates(graph)
        # To a pose on the approach from the task's park pose first, as an operator positions the
        # arm: Gazebo's start pose has every axis at its soft lower limit (the description's
        # initial values), and the plan's move back to the start pose would arrive there faster
        # than the safety controller's envelope allows: the goal is refused, naming the joint.
        start = graph.joint_positions()
        ready = start_on_the_approach(task, DEPTH, APPROACH_DONE)
        midway = [0.5 * (start[n] + p) for n, p in zip(JOINT_NAMES, ready, strict=False)]
        accepted, result, _ = graph.follow_trajectory(
            "joint_trajectory_controller",
            JOINT_NAMES,
            [(4.0, midway), (8.0, ready[: len(JOINT_NAMES)])],
            timeout=300.0,
        )
        assert accepted and result.error_code == 0, result.error_string
        accepted, result, _ = graph.follow_trajectory(
            "drill_feed_controller", ["drill_feed"], [(2.0, [ready[-1]])], timeout=300.0
        )
        assert accepted and result.error_code == 0, result.error_string
        graph.spin_until(client.server_is_ready, 120.0, "the /quirobot/drill_hole server")

        def run(goal, label: str):
            feedback = []
            sim_start, _ = gazebo_poses(launch, POSES)
            wall_start = time.monotonic()
            sampler = PoseSampler(launch)
            first = states.count
            future = client.send_goal_async(goal, feedback_callback=lambda m: feedback.append(m.feedback))
            graph.spin_until(future.done, 120.0, "the goal's acceptance")
            handle = future.result()
            assert handle.accepted, f"{label}: the goal was not accepted"
            result_future = GoalResult(handle)
            graph.spin_until(result_future.done, 1800.0, f"{label}: the DrillHole result")
            samples = sampler.close()
            clock = states.frozen(first, states.count)
            goal_states = states.rows[first : states.count].copy()
            sim_end, _ = gazebo_poses(launch, POSES)
            ratio = (sim_end - sim_start) / (time.monotonic() - wall_start)
            result = result_future.result().result
            print(
                f"{label}: error_code {result.error_code}, depth {result.achieved_depth * 1e3:.6f} mm, "
                f"lateral {result.max_lateral_deviation * 1e6:.3f} um, {result.message!r}; "
                f"sim/wall {ratio:.2f}; phases {sorted({f.phase for f in feedback})}; "
                f"one stamp while the joints moved: {clock}"
            )
            return result, samples, goal_states

        goal = drill_hole_goal(task.entry, task.direction, DEPTH, task.feed_rate, 60.0)
        idle, samples, goal_states = run(goal, "idle")
        assert idle.error_code == ErrorCode.SUCCESS and idle.success, idle.message
        assert not idle.bone_model and not idle.bit_in_bone
        assert "Not watched: Gazebo models no drilling thrust" in idle.message, idle.message
        assert abs(idle.achieved_depth - DEPTH) <= DEPTH_TOLERANCE, idle.achieved_depth
        assert idle.max_lateral_deviation <= LATERAL_TOLERANCE, idle.max_lateral_deviation

        errors = tip_errors(samples, goal_states, model)
        assert len(errors) >= 3, f"only {len(errors)} pose samples were matched"
        worst = max(errors, key=lambda e: e[1])
        print(
            f"Gazebo's drill tip against the FK's tip path, {len(errors)} samples during the goal: largest "
            f"{worst[1]:.3e} m at t_sim {worst[0]:.3f} s"
        )
        assert all(error <= TIP_BOUND_M for _, error in errors), errors

        with busy_processes(BUSY_PER_CORE * (os.cpu_count() or 1)):
            loaded, _, _ = run(goal, "loaded")
        assert loaded.error_code == ErrorCode.SUCCESS and loaded.success, loaded.message
        assert abs(loaded.achieved_depth - idle.achieved_depth) <= SAME_HOLE
        assert abs(loaded.max_lateral_deviation - idle.max_lateral_deviation) <= SAME_HOLE

        # A goal with a bone model: the drive side refuses its hole (no thrust on Gazebo).
        refused, _, _ = run(
            drill_hole_goal(task.entry, task.direction, DEPTH, task.feed_rate, 60.0, task="incision"), "bone"
        )
        assert refused.error_code == ErrorCode.REJECTED_NOT_READY, refused.message
        assert "no drilling thrust" in refused.message, refused.message

        client.destroy()
        client = None
        assert launch.stop() == 0
        assert launch.abnormal_exits() == [], launch.log_path
        assert launch.leftovers() == []
    finally:
        if client is not None:
            client.destroy()
        launch.kill()
