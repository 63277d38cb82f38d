"""launch_testing: `sim.launch.py` end to end over DDS, the DrillHole action as another node uses it.

The stack: bringup hardware:=real with drive_node's simulated drives (MuJoCo plant, the shipped
incision's bone thrusting on the tip), the trajectory controllers, and task_node. The test is a
client node:

0. on the fresh launch, /quirobot/state says "starting" (ready false, waiting_for naming what is
   missing) before it is ready, and the shipped goal sent the moment the action server appears
   waits for readiness (feedback phase "waiting") and succeeds (issue 23): the shipped incision
   (config/tasks/incision.yaml), depth within 0.05 mm and lateral deviation within 0.1 mm, in
   the result and, independently, from the test's own FK of drive_node's measured joint states;
   feedback in every phase of the plan, which ends back at the start pose (park); the hole is
   `quirobot simulate`'s on the same plant within 5 um;
1. /quirobot/state (latched): enabled, homed (drive_node's drives), not busy, no fault;
   /diagnostics: task_node's operating state and each drive (state, fault, position, current,
   homed), all OK;
2. a goal outside the workspace ends unsuccessful with a reason naming the joint; a goal in a
   frame tf2 does not know (`nowhere`) is refused with REJECTED_FRAME naming it;
3. a cancel during the feed: the goal ends canceled, the tip (FK of drive_node's states) above the
   entry point, the robot not in fault;
4. a drive fault during the feed (drive_node's test-only ~/inject_fault): the goal aborts with the
   reason, /quirobot/state and /diagnostics (ERROR, naming drill_feed) show the fault and a goal
   is refused until /quirobot/reset_fault (the hardware's acknowledge_stop in drive_node), then
   /quirobot/enable (the hardware's activation): a second goal succeeds within the tolerances,
   nothing restarted;
5. a second cancel during the retract is refused by the action layer (rcl_action: the goal is
   already CANCELING) and the retract goes on out of the bone (issue 19 item 13);
6. Ctrl-C (SIGINT) on `ros2 action send_goal` mid-feed: the bit retracts out of the bone;
7. a client that quits mid-feed (its action client, node and context destroyed) and one killed
   there (SIGKILL, a 2 s DDS lease): task_node sees no DrillHole client left and retracts as for
   a cancel (issue 17 item 5), the quitting one within 4 mm of where it quit;
8. last (about 3 min on a quiet 2-core machine with one loaded run; QUIROBOT_SIM_LOAD=0 skips
   it for a quick local run) load does not change the hole (issue 17 item 4): from where the last
   cancel left the robot (2 mm above the entry), the shipped incision once idle, then
   QUIROBOT_SIM_LOAD times in a row (1; issue 17's three in a row with QUIROBOT_SIM_LOAD=3) with
   two busy processes per core beside the stack (busy_load.py); each loaded hole (the plant's
   true tip) within 1 um of the idle one in depth and lateral deviation, the result's and the
   test's FK of the joint states within that plus one encoder count of every joint; sim/wall and
   the holes go to $QUIROBOT_ARTIFACTS/sim_load.txt.

Every result carries its error_code (action/DrillHole.action's constants).

Timeouts are generous and nothing asserts a duration (the simulation runs on its own clock and
slows down under load: a goal takes 1.5-3 min here, a result is awaited for 10 min of simulated
time). CI's ROS tier:
`.ci/ros-tier -k drill`.
"""

from __future__ import annotations

import os
import time
import unittest
from pathlib import Path

import pytest

pytest.importorskip("launch_testing")
pytest.importorskip("rclpy")

import launch_testing  # noqa: E402
import launch_testing.actions  # noqa: E402
import numpy as np  # noqa: E402
import rclpy  # noqa: E402
from action_msgs.msg import GoalStatus  # noqa: E402
from ament_index_python.packages import get_package_share_directory  # noqa: E402
from bringup_real import STATES, wait_for_controllers  # noqa: E402
from busy_load import BUSY_PER_CORE, busy_processes, write_sim_load  # noqa: E402
from exit_codes import assert_exit_codes  # noqa: E402
from launch.actions import IncludeLaunchDescription  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from rclpy.action import ActionClient  # noqa: E402
from ros_graph import LATCHED, GoalResult, GraphClient  # noqa: E402

from launch import LaunchDescription  # noqa: E402
from quirobot_control.nodes.drill_hole_goal import drill_hole_goal  # noqa: E402
from quirobot_control.planning.drill_hole import tip_progress  # noqa: E402
from quirobot_control.planning.tasks import Kinematics, load_task  # noqa: E402
from quirobot_control.procedures.drill_hole_executor import ErrorCode  # noqa: E402
from quirobot_description.parameters import axes_for, load_parameters
from quirobot_kinematics import KinematicModel  # noqa: E402

#: The drill's commanded axes: the arm's joints, then the feed.
DRILL_AXES = axes_for("drill")

DEPTH_TOLERANCE = 0.05e-3  # m, the issue's
LATERAL_TOLERANCE = 0.1e-3  # m, the issue's
SAME_HOLE = 5e-6  # m: the ROS path's hole against `quirobot simulate`'s on the same plant (issue 17 item 3)
LOADED_SAME_HOLE = 1e-6  # m: a loaded hole against the idle one (issue 17 item 4)
#: Loaded runs in a row: QUIROBOT_SIM_LOAD (default 1 in CI: a clean-clone run with two loaded
#: runs of about 105 s took 28 of CI's 30 minutes here; 3 is issue 17 item 4's "three in a row",
#: 0 skips the test).
LOADED_RUNS = int(os.environ.get("QUIROBOT_SIM_LOAD", "1"))
#: m past the entry: the deepest a client that quits at 2 mm may let the feed go (test_7). Seen
#: within `client_lost` (1 s of plant time at the feed's 1.5 mm/s) plus DDS's announcement; the
#: killed client of test_7b goes on for its lease (2 s of wall time), so no bound there.
QUIT_SEEN_BY = 6e-3
#: A Fast DDS participant profile with a 2 s lease (announced every 0.5 s): the killed console of
#: test_7b is dropped from the graph 2 s after it dies instead of Fast DDS's default 20 s.
SHORT_LEASE_PROFILE = """<?xml version="1.0" encoding="UTF-8" ?>
<profiles xmlns="http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles">
  <participant profile_name="operator_console" is_default_profile="true">
    <rtps><builtin><discovery_config>
      <leaseDuration><sec>2</sec></leaseDuration>
      <leaseAnnouncement><sec>0</sec><nanosec>500000000</nanosec></leaseAnnouncement>
    </discovery_config></builtin></rtps>
  </participant>
</profiles>
"""
#: test_8 is in CI: in the clean-clone CI run of bench/results/sim_load.txt its goals (42 s of plant
#: time each) took 48 s idle (sim/wall 0.87) and 140-150 s loaded (sim/wall 0.28-0.30), the module
#: 12.3 min and CI 25 min. A machine slowed by other work slows it in proportion, hence the
#: module's hour-long ctest guard. QUIROBOT_SIM_LOAD=0 skips it (a quick local run).
SIM_LOAD_SKIPPED = "QUIROBOT_SIM_LOAD=0: the load test (issue 17 item 4) skipped for a quick run"
PLAN_PHASES = ("start", "approach", "align", "settle", "feed", "dwell", "retract", "withdraw", "park")


def patient_registration() -> tuple[np.ndarray, np.ndarray]:
    """world_from_patient of sim.launch.py's registration file, read here with yaml and numpy
    (rotation (3, 3) from its x, y, z, w quaternion; translation (3,) m), not by task_node's code."""
    import yaml

    path = f"{get_package_share_directory('quirobot')}/config/registration.yaml"
    with open(path) as stream:
        transform = yaml.safe_load(stream)["transform"]
    quaternion = np.asarray(transform["rotation"]["value"], float)
    x, y, z, w = quaternion / np.linalg.norm(quaternion)
    rotation = np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )
    return rotation, np.asarray(transform["translation"]["value"], float)


@pytest.mark.launch_test
def generate_test_description():
    launch_file = f"{get_package_share_directory('quirobot')}/launch/sim.launch.py"
    return LaunchDescription(
        [
            IncludeLaunchDescription(
                PythonLaunchDescriptionSource(launch_file),
                launch_arguments={"test_fault_injection": "true"}.items(),
            ),
            launch_testing.actions.ReadyToTest(),
        ]
    )


class TestDrillHole(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        from quirobot.action import DrillHole
        from quirobot.msg import OperatingState

        rclpy.init()
        cls.graph = GraphClient("test_drill_hole")
        # From the start: the states published while the stack starts (issue 23).
        cls.early_states = cls.graph.messages(OperatingState, "/quirobot/state", LATCHED)
        from quirobot.msg import DrillingContext

        cls.contexts = cls.graph.messages(DrillingContext, "/quirobot/drilling_context", LATCHED)
        cls.client = ActionClient(cls.graph.node, DrillHole, "/quirobot/drill_hole")
        cls.task = load_task("incision")
        cls.kinematics = Kinematics(KinematicModel.from_parameters(load_parameters()))

    @classmethod
    def tearDownClass(cls) -> None:
        cls.client.destroy()
        cls.graph.close()
        rclpy.shutdown()

    # --- helpers ---------------------------------------------------------------------------
    def goal(self, entry=None, frame: str = "world"):
        """The shipped incision's goal (or `entry`, m, world), expressed in `frame`: "world", or
        "patient" (sim.launch.py's registration: the test's own inverse of the file's transform)."""
        entry = self.task.entry if entry is None else np.asarray(entry)
        d = self.task.direction
        if frame == "patient":
            rotation, translation = patient_registration()
            entry, d = rotation.T @ (entry - translation), rotation.T @ d  # a point; a vector
        return drill_hole_goal(entry, d, self.task.depth, self.task.feed_rate, 60.0, frame)

    def send(self, goal, feedback: list):
        self.graph.spin_until(lambda: self.client.server_is_ready(), 120.0, "the /quirobot/drill_hole server")
        future = self.client.send_goal_async(goal, feedback_callback=lambda m: feedback.append(m.feedback))
        self.graph.spin_until(future.done, 60.0, "the goal's acceptance")
        handle = future.result()
        self.assertTrue(handle.accepted, "the goal was not accepted")
        return handle

    def wait_result(self, handle, budget: float = 600.0):
        """The goal's result within `budget` s of simulated time (drive_node's /clock): a loaded
        machine slows the surgery (sim/wall 0.12 at load 10) and never fails it."""
        result = GoalResult(handle)
        self.graph.spin_until_simulated(result.done, budget, "DrillHole result")
        return result.result()

    def tip_depth_lateral(self, state) -> tuple[float, float]:
        q = np.array([dict(zip(state.name, state.position, strict=True))[n] for n in DRILL_AXES])
        return tip_progress(self.kinematics.tip(q), self.task.entry, self.task.direction)

    def operating_state(self, accept=lambda m: True, timeout: float = 30.0):
        from quirobot.msg import OperatingState

        received = self.graph.messages(OperatingState, "/quirobot/state", LATCHED)
        self.graph.spin_until(lambda: any(accept(m) for m in received), timeout, "an operating state")
        return [m for m in received if accept(m)][-1]

    def next_state(self, accept, timeout: float = 30.0):
        """The first /quirobot/state published after this call that `accept`s."""
        from quirobot.msg import OperatingState

        return self.graph.next_message(OperatingState, "/quirobot/state", timeout, LATCHED, accept)

    def latest_state(self):
        from quirobot.msg import OperatingState

        received = self.graph.messages(OperatingState, "/quirobot/state", LATCHED)
        start = len(received)
        self.graph.spin_until(lambda: len(received) > start, 30.0, "a new operating state")
        return received[-1]

    def diagnostics(self, accept, timeout: float = 30.0) -> dict:
        """{name: DiagnosticStatus} merged over /diagnostics messages received from now on, once
        `accept(merged)` holds."""
        from diagnostic_msgs.msg import DiagnosticArray

        received = self.graph.messages(DiagnosticArray, "/diagnostics", 100)
        start = len(received)
        merged: dict = {}

        def merged_accepts() -> bool:
            for array in received[start:]:
                merged.update({status.name: status for status in array.status})
            return accept(merged)

        self.graph.spin_until(merged_accepts, timeout, "/diagnostics")
        return merged

    def assert_succeeds_within_tolerance(self, feedback: list, states: list):
        """Send the shipped incision, wait for its success; the result and the test's own FK of
        drive_node's joint states during it within the issue's tolerances. The result."""
        return self.assert_handle_succeeds(self.send(self.goal(), feedback), feedback, states)

    def assert_handle_succeeds(self, handle, feedback: list, states: list):
        """Wait for the goal's success and check it (assert_succeeds_within_tolerance)."""
        first = len(states)
        response = self.wait_result(handle)
        result = response.result
        last = feedback[-1] if feedback else None
        where = (
            f"{result.message} (last feedback: {last.phase}, progress {last.progress:.3f})" if last else ""
        )
        self.assertEqual(response.status, GoalStatus.STATUS_SUCCEEDED, where or result.message)
        self.assertTrue(result.success, result.message)
        self.assertEqual(result.error_code, ErrorCode.SUCCESS, result.message)
        self.assertTrue(result.bone_model, "sim.launch.py names the shipped incision as task_node's task")
        self.assertFalse(result.bit_in_bone)
        self.assertLessEqual(abs(result.achieved_depth - self.task.depth), DEPTH_TOLERANCE, result.message)
        self.assertLessEqual(result.max_lateral_deviation, LATERAL_TOLERANCE, result.message)
        # The test's own measure: FK of every joint state drive_node published during the goal,
        # from the first with the tip above the entry (a goal after a drive fault starts with the
        # bit still in the first hole, where the stop left it). In bone: past the entry and near
        # the axis (a pose far from the axis can be "past the entry" along it; a deviation of the
        # order of the tolerance stays inside the 5 mm).
        measured = [self.tip_depth_lateral(s) for s in states[first:]]
        out = next((k for k, (d, _) in enumerate(measured) if d < 0.0), len(measured))
        in_bone = [(d, lat) for d, lat in measured[out:] if d >= 0.0 and lat < 5e-3]
        self.assertTrue(in_bone, "no joint state with the tip in bone")
        depth = max(d for d, _ in in_bone)
        lateral = max(lat for _, lat in in_bone)
        print(
            f"DrillHole: result {result.achieved_depth * 1e3:.4f} mm deep, lateral "
            f"{result.max_lateral_deviation * 1e6:.2f} um; FK of the states {depth * 1e3:.4f} mm, "
            f"{lateral * 1e6:.2f} um"
        )
        self.assertLessEqual(abs(depth - self.task.depth), DEPTH_TOLERANCE, f"measured depth {depth}")
        self.assertLessEqual(lateral, LATERAL_TOLERANCE, f"measured lateral deviation {lateral}")
        self.measured_hole = (depth, lateral)
        return result

    def assert_same_hole_as_simulate(self, fk: tuple[float, float], true: tuple[float, float]) -> None:
        """The hole drilled over ROS against `quirobot simulate --task incision --plant ideal`'s
        (the core's closed loop on the same MuJoCo plant, run here), each (depth, lateral
        deviation) m: the plant's true tip (/quirobot/sim/true_tip, what simulate measures) and
        the test's FK of drive_node's states, deepest and widest in bone; both within SAME_HOLE."""
        from quirobot_control.simulation.incision import run_task

        metrics = run_task("incision", load_parameters(), plant="ideal").metrics.incision
        simulated = (metrics.max_depth, metrics.lateral_deviation)
        line = (
            f"ideal plant: ROS true tip {true[0] * 1e3:.4f} mm, {true[1] * 1e6:.2f} um (FK of the joint "
            f"states {fk[0] * 1e3:.4f} mm, {fk[1] * 1e6:.2f} um); quirobot simulate "
            f"{simulated[0] * 1e3:.4f} mm, {simulated[1] * 1e6:.2f} um"
        )
        print(f"DrillHole: {line}")
        artifacts = os.environ.get("QUIROBOT_ARTIFACTS")  # CI keeps it (docs quote a run)
        if artifacts:
            (Path(artifacts) / "same_hole.txt").write_text(line + "\n")
        for measured in (true, fk):
            for value, reference in zip(measured, simulated, strict=True):
                self.assertLessEqual(abs(value - reference), SAME_HOLE, line)

    def true_hole(self, tips: list) -> tuple[float, float]:
        """(depth, lateral deviation) m of the plant's true tips (PointStamped) in bone."""
        track = [
            tip_progress(np.array([t.point.x, t.point.y, t.point.z]), self.task.entry, self.task.direction)
            for t in tips
        ]
        in_bone = [(d, lat) for d, lat in track if d >= 0.0 and lat < 5e-3]
        self.assertTrue(in_bone, "no true tip in bone on /quirobot/sim/true_tip")
        return max(d for d, _ in in_bone), max(lat for _, lat in in_bone)

    def wait_in_feed(self, handle, feedback: list, depth: float) -> None:
        """Until the feedback shows the feed `depth` m in bone; fails if the goal ends first."""
        ended = (GoalStatus.STATUS_SUCCEEDED, GoalStatus.STATUS_ABORTED, GoalStatus.STATUS_CANCELED)
        self.graph.spin_until(
            lambda: handle.status in ended or any(f.phase == "feed" and f.depth > depth for f in feedback),
            600.0,
            "the feed in bone",
        )
        self.assertNotIn(handle.status, ended, "the goal ended before the feed")

    # --- tests -----------------------------------------------------------------------------
    def test_0_goal_sent_as_soon_as_the_server_appears_succeeds(self) -> None:
        from geometry_msgs.msg import PointStamped
        from sensor_msgs.msg import JointState

        states = self.graph.messages(JointState, STATES)
        tips = self.graph.messages(PointStamped, "/quirobot/sim/true_tip")
        self.graph.spin_until(self.client.server_is_ready, 180.0, "the /quirobot/drill_hole server")
        feedback: list = []
        future = self.client.send_goal_async(
            self.goal(), feedback_callback=lambda m: feedback.append(m.feedback)
        )
        self.graph.spin_until(future.done, 60.0, "the goal's acceptance")
        self.assertTrue(future.result().accepted)
        self.assert_handle_succeeds(future.result(), feedback, states)
        seen = {f.phase for f in feedback}
        self.assertTrue(set(PLAN_PHASES) <= seen, f"no feedback in {set(PLAN_PHASES) - seen}")
        self.assert_same_hole_as_simulate(self.measured_hole, self.true_hole(tips))
        thrust = max(f.thrust for f in feedback if f.phase == "feed")
        self.assertGreater(thrust, 10.0, "no thrust measured in the feed")  # the bone's (30-40 N)
        # The drilling context: active with the goal's hole at the start, inactive at the end.
        contexts = self.contexts
        self.graph.spin_until(lambda: contexts and not contexts[-1].active, 30.0, "the inactive context")
        active = [c for c in contexts if c.active]
        self.assertTrue(active, "no active drilling context published")
        self.assertAlmostEqual(active[-1].depth, self.task.depth)
        # The hole as the plan decided it (issue 31): the bone, its breakthrough arming, the zones;
        # its end names the same goal.
        self.assertTrue(active[-1].bone_model)
        far_cortex = sum(layer.thickness for layer in self.task.bone.layers[:-1])
        margin = load_parameters().drilling.safety.breakthrough_arm_margin
        self.assertAlmostEqual(active[-1].arm_depth, far_cortex - margin, places=12)
        self.assertEqual([z.name for z in active[-1].no_go_zones], [z.name for z in self.task.no_go_zones])
        self.assertEqual(contexts[-1].goal_id, active[-1].goal_id)
        # Before it was ready the stack said so, and what it waited for: phase "starting" until the
        # goal came, then the executor's "waiting". Seen only if this test's subscription matched
        # task_node's publisher before the stack was ready: the state is latched with depth 1, so
        # a later match receives the latest state alone (a clean-clone CI run whose stack was
        # ready 1.5 s after launch failed twice on it; a run that matched after the goal came saw
        # "waiting" alone).
        first_ready = next((k for k, m in enumerate(self.early_states) if m.ready), None)
        self.assertIsNotNone(first_ready, "/quirobot/state never said ready")
        before_ready = self.early_states[:first_ready]
        starting = [m for m in before_ready if m.phase == "starting"]
        phases = [m.phase for m in before_ready]
        # ("": the executor has taken the goal and not yet named its phase, seen in a CI run.)
        self.assertTrue(set(phases) <= {"starting", "", "waiting"}, f"phases before ready: {phases}")
        self.assertTrue(all(m.waiting_for for m in before_ready), [m.waiting_for for m in before_ready])
        if not starting:
            print(
                "this test's /quirobot/state subscription matched after the goal came "
                "(or after the stack was ready)"
            )
        print(
            f"DrillHole: waited {sum(f.phase == 'waiting' for f in feedback)} feedback periods; "
            f"starting states: {sorted({m.waiting_for for m in starting})}"
        )

    def test_1_state_is_latched_enabled_without_fault(self, proc_output) -> None:
        from sensor_msgs.msg import JointState

        wait_for_controllers(self.graph, proc_output)
        self.graph.next_message(JointState, STATES, timeout=180.0)  # drive_node is up (slow under load)
        state = self.operating_state(lambda m: m.enabled, timeout=120.0)
        self.assertTrue(state.enabled)
        self.assertTrue(state.homed)
        self.assertFalse(state.busy)
        self.assertFalse(state.fault, state.fault_reason)
        names = ["quirobot/task", "quirobot/drives", *(f"quirobot/drives/{joint}" for joint in DRILL_AXES)]
        merged = self.diagnostics(lambda m: all(n in m for n in names))
        for name in names:
            self.assertEqual(merged[name].level, bytes([0]), f"{name}: {merged[name].message}")
        feed = {kv.key: kv.value for kv in merged["quirobot/drives/drill_feed"].values}
        self.assertEqual(feed["state"], "enabled")
        self.assertEqual(feed["homed"], "True")
        self.assertTrue({"position", "current", "fault"} <= set(feed))

    def drill_measured(self, label: str) -> dict:
        """The shipped incision from where the robot is, once it is ready (enabled, not busy): the
        hole drilled (the plant's true tip, drive_node's /quirobot/sim/true_tip: deepest and
        widest in bone), the result's, the test's FK of the joint states during the goal, and
        sim/wall (plant time from the states' stamps over the wall time)."""
        from geometry_msgs.msg import PointStamped
        from sensor_msgs.msg import JointState

        self.operating_state(lambda m: m.enabled and not m.busy, timeout=600.0)
        states = self.graph.messages(JointState, STATES)
        tips = self.graph.messages(PointStamped, "/quirobot/sim/true_tip")
        first, first_tip, wall_start = len(states), len(tips), time.monotonic()
        response = self.wait_result(self.send(self.goal(), []))
        wall = time.monotonic() - wall_start
        result = response.result
        self.assertEqual(response.status, GoalStatus.STATUS_SUCCEEDED, f"{label}: {result.message}")
        during = states[first:]
        self.assertGreater(len(during), 2, f"{label}: no joint states during the goal")
        stamps = [s.header.stamp.sec + s.header.stamp.nanosec * 1e-9 for s in (during[0], during[-1])]
        in_bone = [
            (d, lat) for d, lat in (self.tip_depth_lateral(s) for s in during) if d >= 0.0 and lat < 5e-3
        ]
        self.assertTrue(in_bone, f"{label}: no joint state with the tip in bone")
        true_depth, true_lateral = self.true_hole(tips[first_tip:])
        hole = {
            "label": label,
            "true_depth": true_depth,
            "true_lateral": true_lateral,
            "deepest": max(during, key=lambda s: self.tip_depth_lateral(s)[0]),
            "depth": result.achieved_depth,
            "lateral": result.max_lateral_deviation,
            "fk_depth": max(d for d, _ in in_bone),
            "fk_lateral": max(lat for _, lat in in_bone),
            "sim": stamps[1] - stamps[0],
            "wall": wall,
        }
        hole["ratio"] = hole["sim"] / wall
        print(
            f"DrillHole {label}: true tip {hole['true_depth'] * 1e3:.6f} mm, "
            f"{hole['true_lateral'] * 1e6:.3f} um; result {hole['depth'] * 1e3:.6f} mm, "
            f"{hole['lateral'] * 1e6:.3f} um (FK "
            f"{hole['fk_depth'] * 1e3:.6f} mm, {hole['fk_lateral'] * 1e6:.3f} um); {hole['sim']:.1f} s "
            f"simulated in {wall:.1f} s of wall time: sim/wall {hole['ratio']:.3f}",
            flush=True,
        )
        return hole

    @unittest.skipIf(LOADED_RUNS == 0, SIM_LOAD_SKIPPED)
    def test_8_load_does_not_change_the_hole(self) -> None:
        # Last, from where test_7b's cancel left the robot (2 mm above the entry, on the axis): every
        # goal ends back where it started, so the idle reference and the loaded runs start alike,
        # and their approach and park are short (from the park pose a goal takes twice as long).
        idle = self.drill_measured("idle")
        busy = BUSY_PER_CORE * (os.cpu_count() or 1)
        loaded: list[dict] = []
        write_sim_load([idle], busy)
        with busy_processes(busy):
            for k in range(LOADED_RUNS):
                loaded.append(self.drill_measured(f"loaded {k + 1} ({busy} busy processes)"))
                write_sim_load([idle, *loaded], busy)  # each run as it ends
        # The hole itself within 1 um; what the robot measures of it (the result, the FK of the
        # joint states) within that plus one encoder count of every joint along the hole's depth
        # and across it: each measured state is within half a count of the plant on each axis.
        counts = self.one_count_along_the_hole(idle["deepest"])
        bounds = {"true_depth": LOADED_SAME_HOLE, "true_lateral": LOADED_SAME_HOLE}
        bounds |= {key: LOADED_SAME_HOLE + counts[0] for key in ("depth", "fk_depth")}
        bounds |= {key: LOADED_SAME_HOLE + counts[1] for key in ("lateral", "fk_lateral")}
        print(
            f"DrillHole: one count of every joint moves the measured depth {counts[0] * 1e6:.3f} um, "
            f"the lateral deviation {counts[1] * 1e6:.3f} um"
        )
        for hole in loaded:
            for key, bound in bounds.items():
                difference = abs(hole[key] - idle[key])
                self.assertLessEqual(
                    difference,
                    bound,
                    f"{hole['label']}: {key} {difference * 1e6:.3f} um from the idle hole's "
                    f"(bound {bound * 1e6:.3f} um)",
                )

    def one_count_along_the_hole(self, state) -> tuple[float, float]:
        """m: how far one encoder count of each joint (the parameter file's encoder and
        transmission, summed over the joints) moves the FK depth and lateral deviation at `state`."""
        from quirobot_control.drive_simulators.simulated_drive import drive_for_joint

        params = load_parameters()
        q = np.array([dict(zip(state.name, state.position, strict=True))[n] for n in DRILL_AXES])
        base = np.array(tip_progress(self.kinematics.tip(q), self.task.entry, self.task.direction))
        total = np.zeros(2)
        for k, name in enumerate(DRILL_AXES):
            count = drive_for_joint(params, name).encoder.resolution
            moved = q.copy()
            moved[k] += count
            total += np.abs(
                np.array(tip_progress(self.kinematics.tip(moved), self.task.entry, self.task.direction))
                - base
            )
        return float(total[0]), float(total[1])

    def test_3_goal_outside_the_workspace_is_refused_naming_the_joint(self) -> None:
        feedback: list = []
        handle = self.send(self.goal(entry=[5.0, 1.0, -1.35]), feedback)
        response = self.wait_result(handle, 60.0)
        self.assertFalse(response.result.success)
        self.assertEqual(response.status, GoalStatus.STATUS_ABORTED)
        self.assertEqual(response.result.error_code, ErrorCode.REJECTED_LIMIT, response.result.message)
        self.assertIn("gantry_x", response.result.message)
        self.assertIn("rejected", response.result.message)

    def test_3b_goal_in_an_unknown_frame_is_refused_naming_it(self) -> None:
        handle = self.send(self.goal(frame="nowhere"), [])
        response = self.wait_result(handle, 60.0)
        self.assertEqual(response.status, GoalStatus.STATUS_ABORTED)
        self.assertEqual(response.result.error_code, ErrorCode.REJECTED_FRAME, response.result.message)
        self.assertIn("'nowhere'", response.result.message)

    def test_4_cancel_during_feed_retracts_out_of_the_bone(self) -> None:
        from sensor_msgs.msg import JointState

        feedback: list = []
        handle = self.send(self.goal(), feedback)
        self.wait_in_feed(handle, feedback, 0.003)
        self.assert_drive_services_refused_mid_feed(handle, feedback)
        cancel = handle.cancel_goal_async()
        self.graph.spin_until(cancel.done, 30.0, "the cancel answer")
        # A second cancel during the retract: rcl_action refuses it (the goal is already
        # CANCELING: not cancelable), task_node never sees it, and the retract goes on.
        self.graph.spin_until(
            lambda: (
                any(f.phase == "cancel_retract" for f in feedback)
                or handle.status == GoalStatus.STATUS_CANCELED
            ),
            120.0,
            "the cancel's retract",
        )
        second = handle.cancel_goal_async()
        self.graph.spin_until(second.done, 30.0, "the second cancel's answer")
        self.assertEqual(len(second.result().goals_canceling), 0)
        self.assertNotEqual(second.result().return_code, 0, "a second cancel was accepted")
        response = self.wait_result(handle, 120.0)
        self.assertEqual(response.status, GoalStatus.STATUS_CANCELED, response.result.message)
        self.assertEqual(response.result.error_code, ErrorCode.CANCELED_RETRACTED, response.result.message)
        self.assertIn("cancel_retract", {f.phase for f in feedback})
        state = self.graph.next_message(JointState, STATES)
        depth, lateral = self.tip_depth_lateral(state)
        self.assertLess(depth, 0.0, f"the tip is {depth * 1000:.3f} mm past the entry")
        self.assertLess(lateral, LATERAL_TOLERANCE)
        operating = self.latest_state()
        self.assertFalse(operating.fault, operating.fault_reason)
        self.assertFalse(operating.busy)

    def assert_drive_services_refused_mid_feed(self, handle, feedback: list) -> None:
        """Issue 33 item 2 over DDS: drive_node's own drive-level services, called mid-feed, bypass
        task_node's busy guard; disable is refused naming the goal, home refused, enable and
        acknowledge_stop change nothing; the drives stay enabled and the feed goes on deeper."""
        from quirobot.msg import DrivesState
        from std_srvs.srv import Trigger

        depth = max(f.depth for f in feedback if f.phase == "feed")
        answers = {
            service: self.graph.call(Trigger, f"/quirobot/drives/{service}", Trigger.Request())
            for service in ("disable", "home", "enable", "acknowledge_stop")
        }
        said = {service: (a.success, a.message) for service, a in answers.items()}
        self.assertFalse(answers["disable"].success, said)
        self.assertRegex(answers["disable"].message, r"disable refused: goal '\w+' is drilling", said)
        self.assertFalse(answers["home"].success, said)
        self.assertIn("home refused", answers["home"].message, said)
        # On the active drives these change nothing and say so (docs/safety.md).
        self.assertEqual(said["enable"], (True, "already enabled"))
        self.assertEqual(said["acknowledge_stop"], (True, "no stop latched"))
        drives = self.graph.next_message(DrivesState, "/quirobot/drives/state", timeout=30.0)
        self.assertTrue(drives.enabled, drives.stop_reason)
        self.assertEqual(drives.stop_reason, "")
        self.wait_in_feed(handle, feedback, depth + 0.0005)  # still feeding, 0.5 mm deeper

    def test_5_drive_fault_during_feed_aborts_and_latches_until_reset(self) -> None:
        from sensor_msgs.msg import JointState
        from std_srvs.srv import Trigger

        self.graph.call(Trigger, "/quirobot/reset_fault", Trigger.Request())  # whatever test 4 left
        feedback: list = []
        handle = self.send(self.goal(), feedback)
        self.wait_in_feed(handle, feedback, 0.002)
        answer = self.graph.call(Trigger, "/drive_node/inject_fault", Trigger.Request())
        self.assertTrue(answer.success, answer.message)
        response = self.wait_result(handle, 120.0)
        self.assertEqual(response.status, GoalStatus.STATUS_ABORTED, response.result.message)
        self.assertIn("injected", response.result.message)
        # Every drive stopped with the bit in bone (the hardware's stop of every drive): said so.
        self.assertEqual(response.result.error_code, ErrorCode.CANCELED_BIT_IN_BONE, response.result.message)
        self.assertTrue(response.result.bit_in_bone)
        # The latched state says so once the goal has ended (a state with the fault alone may come
        # first: the drives' stop is published before the executor's result).
        state = self.operating_state(lambda m: m.fault and not m.busy and m.bit_in_bone)
        self.assertIn("injected", state.fault_reason)
        merged = self.diagnostics(lambda m: "quirobot/drives/drill_feed" in m and "quirobot/task" in m)
        for name in ("quirobot/drives/drill_feed", "quirobot/drives", "quirobot/task"):
            self.assertEqual(merged[name].level, bytes([2]), f"{name}: {merged[name].message}")
            self.assertIn("injected", merged[name].message)
        end = time.monotonic() + 3.0  # it stays (republished once a second)
        self.graph.spin_until(lambda: time.monotonic() > end, 30.0, "3 s")
        self.assertTrue(self.latest_state().fault)
        refused = self.wait_result(self.send(self.goal(), []), 60.0)
        self.assertEqual(refused.status, GoalStatus.STATUS_ABORTED)
        self.assertEqual(refused.result.error_code, ErrorCode.REJECTED_NOT_READY)
        self.assertIn("in fault", refused.result.message)
        reset = self.graph.call(Trigger, "/quirobot/reset_fault", Trigger.Request())
        self.assertTrue(reset.success, reset.message)
        self.assertIn("injected", reset.message)
        state = self.next_state(lambda m: not m.fault)
        self.assertFalse(state.enabled, "reset_fault must not enable the drives by itself")
        enable = self.graph.call(Trigger, "/quirobot/enable", Trigger.Request())
        self.assertTrue(enable.success, enable.message)
        # The same stack, nothing restarted: a second goal sent as soon as enable answers drills
        # the hole within the tolerances (issue 23: enable after reset_fault). It is given in the
        # registered `patient` frame (task_node's tf2 static frame): the same world hole, checked
        # against the world's entry and axis by the test's own FK (issue 21 item 3).
        feedback: list = []
        states = self.graph.messages(JointState, STATES)
        self.assert_handle_succeeds(self.send(self.goal(frame="patient"), feedback), feedback, states)

    # --- clients that do not wait for the end ------------------------------------------------
    def wait_tip_in_bone(self, states: list, depth: float) -> None:
        """Until drive_node's joint states put the tip `depth` m past the entry, near the axis;
        fails at once if the goal ends in a fault first (/quirobot/state)."""
        start = len(self.early_states)

        def in_bone() -> bool:
            if not states:
                return False
            tip_depth, lateral = self.tip_depth_lateral(states[-1])
            return tip_depth > depth and lateral < 5e-3

        def faulted():
            return next((m for m in self.early_states[start:] if m.fault), None)

        what = f"the tip {depth * 1e3:.1f} mm in bone"
        self.graph.spin_until(lambda: in_bone() or faulted() is not None, 600.0, what)
        fault = faulted()
        self.assertIsNone(fault, f"the goal ended before the feed: {fault.fault_reason if fault else ''}")

    def assert_ends_out_of_bone(self, states: list) -> None:
        """The goal ends (not busy), the bit out of the bone, nothing latched."""
        state = self.next_state(lambda m: not m.busy, timeout=300.0)
        self.assertFalse(state.bit_in_bone)
        self.assertFalse(state.fault, state.fault_reason)
        depth, lateral = self.tip_depth_lateral(states[-1])
        self.assertLess(depth, 0.0, f"the tip is {depth * 1000:.3f} mm past the entry")

    def without_own_client(self, run):
        """run() with this test's DrillHole client destroyed (task_node counts the clients left);
        what it returns."""
        from quirobot.action import DrillHole
        from std_srvs.srv import Trigger

        self.graph.call(Trigger, "/quirobot/reset_fault", Trigger.Request())
        self.next_state(lambda m: not m.fault)  # states from before the reset are spun in first
        type(self).client.destroy()
        try:
            return run()
        finally:
            type(self).client = ActionClient(self.graph.node, DrillHole, "/quirobot/drill_hole")

    def goal_yaml(self) -> str:
        e, d = self.task.entry, self.task.direction
        return (
            f"{{entry: {{header: {{frame_id: world}}, point: {{x: {e[0]}, y: {e[1]}, z: {e[2]}}}}}, "
            f"direction: {{header: {{frame_id: world}}, vector: {{x: {d[0]}, y: {d[1]}, z: {d[2]}}}}}, "
            f"depth: {self.task.depth}, feed_rate: {self.task.feed_rate}, max_thrust: 60.0}}"
        )

    def test_6_ctrl_c_on_ros2_action_send_goal_retracts_out_of_the_bone(self) -> None:
        import signal
        import subprocess

        from sensor_msgs.msg import JointState

        states = self.graph.messages(JointState, STATES)

        def run() -> None:
            command = ["ros2", "action", "send_goal", "/quirobot/drill_hole", "quirobot/action/DrillHole"]
            process = subprocess.Popen(
                [*command, self.goal_yaml()],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
            try:
                self.wait_tip_in_bone(states, 0.002)
                process.send_signal(signal.SIGINT)
                out, _ = process.communicate(timeout=300)
            finally:
                if process.poll() is None:
                    process.kill()
                    process.communicate()
            print(f"ros2 action send_goal after SIGINT: {out.strip().splitlines()[-3:]}")
            self.assert_ends_out_of_bone(states)

        self.without_own_client(run)

    def test_7_a_client_that_quits_mid_feed_is_a_cancel(self, proc_output) -> None:
        """The console exits as an rclpy program does (its action client, node and context
        destroyed): DDS announces its endpoints gone, task_node finds no client left and retracts
        within `client_lost` (1 s of plant time), close to where it quit."""
        depth = self.quit_mid_feed(proc_output, "quit", {})
        self.assertLess(
            depth, QUIT_SEEN_BY, f"the feed went on to {depth * 1e3:.2f} mm after the client quit"
        )

    def test_7b_a_client_killed_mid_feed_is_a_cancel(self, proc_output) -> None:
        """SIGKILL: nothing is announced, DDS drops the client when its participant's lease runs out
        (Fast DDS: 20 s of wall time by default; this console sets 2 s in a Fast DDS profile, as an
        operator console should): then as a cancel."""
        profile = Path(os.environ.get("QUIROBOT_ARTIFACTS") or "/tmp") / "short_lease_fastdds.xml"
        profile.write_text(SHORT_LEASE_PROFILE)
        env = {"FASTDDS_DEFAULT_PROFILES_FILE": str(profile), "FASTRTPS_DEFAULT_PROFILES_FILE": str(profile)}
        self.quit_mid_feed(proc_output, "kill", env)

    def quit_mid_feed(self, proc_output, how: str, env: dict[str, str]) -> float:
        """A console sends the shipped goal and, with the tip 2 mm in bone, quits ("quit": SIGTERM,
        it destroys its action client, node and context) or dies ("kill": SIGKILL), never
        cancelling; task_node's "client disappeared" is awaited and the goal must end out of the
        bone. Returns the deepest tip (m past the entry, the plant's true tip) after the signal."""
        import signal
        import subprocess
        import sys

        from geometry_msgs.msg import PointStamped
        from sensor_msgs.msg import JointState

        states = self.graph.messages(JointState, STATES)
        tips = self.graph.messages(PointStamped, "/quirobot/sim/true_tip")
        script = (
            "import signal, sys, yaml, rclpy\n"
            "from rclpy.action import ActionClient\n"
            "from rclpy.signals import SignalHandlerOptions\n"
            "from quirobot.action import DrillHole\n"
            "from rosidl_runtime_py.set_message import set_message_fields\n"
            "rclpy.init(signal_handler_options=SignalHandlerOptions.NO)\n"
            "node = rclpy.create_node('quitting_console')\n"
            "class Quit(Exception): pass\n"
            "def quit(*_): raise Quit\n"
            "signal.signal(signal.SIGTERM, quit)\n"
            "client = ActionClient(node, DrillHole, '/quirobot/drill_hole')\n"
            "client.wait_for_server()\n"
            "goal = DrillHole.Goal()\n"
            "set_message_fields(goal, yaml.safe_load(sys.argv[1]))\n"
            "client.send_goal_async(goal)\n"
            "try:\n"
            "    while True:\n"
            "        rclpy.spin_once(node, timeout_sec=0.1)\n"
            "except Quit:\n"
            "    client.destroy(); node.destroy_node(); rclpy.shutdown()\n"
        )

        def disappeared() -> int:
            """task_node's "client disappeared" lines so far (proc_output keeps the whole run's)."""
            return sum(
                event.text.decode(errors="replace").count("client disappeared") for event in proc_output
            )

        before = disappeared()

        def run() -> float:
            process = subprocess.Popen(
                [sys.executable, "-c", script, self.goal_yaml()],
                start_new_session=True,
                env={**os.environ, **env},
            )
            try:
                self.wait_tip_in_bone(states, 0.002)
            finally:
                since = len(tips)
                process.send_signal(signal.SIGKILL if how == "kill" else signal.SIGTERM)
                try:
                    process.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    process.kill()
            self.graph.spin_until(lambda: disappeared() > before, 300.0, 'task_node\'s "client disappeared"')
            self.assert_ends_out_of_bone(states)
            deepest = max(
                tip_progress(
                    np.array([t.point.x, t.point.y, t.point.z]), self.task.entry, self.task.direction
                )[0]
                for t in tips[since:]
            )
            print(
                f"DrillHole: a client {how} at 2 mm: the feed reached {deepest * 1e3:.2f} mm, then retracted"
            )
            return deepest

        return self.without_own_client(run)


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    def test_exit_codes(self, proc_info, proc_output) -> None:
        assert_exit_codes(proc_info, proc_output)
