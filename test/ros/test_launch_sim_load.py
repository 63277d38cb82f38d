"""launch_testing: load does not change the simulation (sim.launch.py, lock-step on the sim clock).

drive_node steps the simulated plant one period per controller-manager cycle on the clock it
publishes (bridge.lockstep), so a busy machine slows the simulation and never changes its result.
The test drills the shipped incision (config/tasks/incision.yaml) over ROS (DrillHole action,
task_node -> trajectory controllers -> drive_node) from the park pose (where every goal ends: a
first goal takes it there) once idle, then three times in a row with busy
processes beside the stack: two per CPU core (`python3 -c "while True: pass"`, started and killed
by the test, niced 0 like the stack). Each loaded hole must match the idle one within 1 um in depth
and in lateral deviation, in the result and in the test's own FK of drive_node's joint states.

sim/wall of each run (plant time over wall time, from the joint states' stamps) and the holes are
written to $QUIROBOT_ARTIFACTS/sim_load.txt (bench/results/sim_load.txt is a copy of a run, quoted
by docs/drive_from_another_node.md). Slow: four goals, the loaded ones at a fraction of real time
(13.5 min in all on a quiet 2-core machine at sim.launch.py's 250 Hz, over 30 min while other work
loads it): not run by default for its length. Run it with `QUIROBOT_SIM_LOAD=1 .ci/ros-tier -k sim_load`
(test/ros/conftest.py leaves it out otherwise). It used to fail on the trajectory controllers'
path tolerances, checked against joint states the controller manager took some ms late under
load; the path is now checked on time-aligned samples (docs/drive_from_another_node.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import unittest
from contextlib import contextmanager
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
from bringup_real import CONTROLLERS, STATES  # noqa: E402
from launch.actions import IncludeLaunchDescription  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from rclpy.action import ActionClient  # noqa: E402
from ros_graph import LATCHED, GraphClient  # noqa: E402

from launch import LaunchDescription  # noqa: E402
from quirobot_control.planning.drill_hole import tip_progress  # noqa: E402
from quirobot_control.planning.tasks import Kinematics, load_task  # noqa: E402
from quirobot_description.parameters import AXES, load_parameters  # noqa: E402
from quirobot_kinematics import KinematicModel  # noqa: E402

#: m: a loaded hole against the idle one (issue 17 item 4)
SAME_HOLE = 1e-6
LOADED_RUNS = 3
#: busy processes per CPU core (issue 17 item 4: at least two)
BUSY_PER_CORE = 2


@pytest.mark.launch_test
def generate_test_description():
    launch_file = f"{get_package_share_directory('quirobot')}/launch/sim.launch.py"
    return LaunchDescription(
        [
            IncludeLaunchDescription(PythonLaunchDescriptionSource(launch_file)),
            launch_testing.actions.ReadyToTest(),
        ]
    )


@contextmanager
def busy_processes(count: int):
    """`count` processes spinning a CPU core each, killed on the way out."""
    processes = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield processes
    finally:
        for process in processes:
            process.kill()
        for process in processes:
            process.wait(timeout=30)


class TestLoadDoesNotChangeTheHole(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        rclpy.init()
        cls.graph = GraphClient("test_sim_load")
        cls.task = load_task("incision")
        cls.kinematics = Kinematics(KinematicModel.from_parameters(load_parameters()))

    @classmethod
    def tearDownClass(cls) -> None:
        cls.graph.close()
        rclpy.shutdown()

    def goal(self):
        from quirobot.action import DrillHole

        goal = DrillHole.Goal()
        goal.entry.header.frame_id = goal.direction.header.frame_id = "world"
        goal.entry.point.x, goal.entry.point.y, goal.entry.point.z = (float(v) for v in self.task.entry)
        d = self.task.direction
        goal.direction.vector.x, goal.direction.vector.y, goal.direction.vector.z = (float(v) for v in d)
        goal.depth = self.task.depth
        goal.feed_rate = self.task.feed_rate
        goal.max_thrust = 60.0
        return goal

    def drill(self, client, label: str) -> dict:
        """Drill the incision; the hole (result and FK of the states) and sim/wall of the goal."""
        from quirobot.msg import OperatingState
        from sensor_msgs.msg import JointState

        states = self.graph.messages(JointState, STATES)
        operating = self.graph.messages(OperatingState, "/quirobot/state", LATCHED)
        ready = lambda: bool(operating) and operating[-1].enabled and not operating[-1].busy  # noqa: E731
        self.graph.spin_until(ready, 600.0, f"{label}: the robot ready")
        first, wall_start = len(states), time.monotonic()
        future = client.send_goal_async(self.goal())
        self.graph.spin_until(future.done, 300.0, f"{label}: the goal's acceptance")
        handle = future.result()
        self.assertTrue(handle.accepted, f"{label}: the goal was not accepted")
        result_future = handle.get_result_async()
        self.graph.spin_until(result_future.done, 1800.0, f"{label}: the DrillHole result")
        wall = time.monotonic() - wall_start
        response = result_future.result()
        result = response.result
        self.assertEqual(response.status, GoalStatus.STATUS_SUCCEEDED, f"{label}: {result.message}")
        during = states[first:]
        self.assertGreater(len(during), 2, f"{label}: no joint states during the goal")
        stamps = [s.header.stamp.sec + s.header.stamp.nanosec * 1e-9 for s in (during[0], during[-1])]
        measured = [self.tip_depth_lateral(s) for s in during]
        in_bone = [(d, lat) for d, lat in measured if d >= 0.0 and lat < 5e-3]
        self.assertTrue(in_bone, f"{label}: no joint state with the tip in bone")
        hole = {
            "label": label,
            "depth": result.achieved_depth,
            "lateral": result.max_lateral_deviation,
            "fk_depth": max(d for d, _ in in_bone),
            "fk_lateral": max(lat for _, lat in in_bone),
            "sim": stamps[1] - stamps[0],
            "wall": wall,
        }
        hole["ratio"] = hole["sim"] / wall
        print(
            f"{label}: depth {hole['depth'] * 1e3:.6f} mm, lateral {hole['lateral'] * 1e6:.3f} um (FK "
            f"{hole['fk_depth'] * 1e3:.6f} mm, {hole['fk_lateral'] * 1e6:.3f} um); {hole['sim']:.1f} s "
            f"simulated in {wall:.1f} s of wall time: sim/wall {hole['ratio']:.3f} ({result.message})",
            flush=True,
        )
        return hole

    def tip_depth_lateral(self, state) -> tuple[float, float]:
        q = np.array([dict(zip(state.name, state.position, strict=True))[n] for n in AXES])
        return tip_progress(self.kinematics.tip(q), self.task.entry, self.task.direction)

    def test_loaded_holes_match_the_idle_hole(self) -> None:
        from quirobot.action import DrillHole

        self.graph.wait_for_active_controllers(CONTROLLERS, timeout=300.0)
        client = ActionClient(self.graph.node, DrillHole, "/quirobot/drill_hole")
        try:
            self.graph.spin_until(client.server_is_ready, 300.0, "the /quirobot/drill_hole server")
            # The idle reference starts where the loaded runs start: parked after a first goal.
            self.drill(client, "warm-up (idle, from the power-up pose)")
            idle = self.drill(client, "idle")
            busy = BUSY_PER_CORE * (os.cpu_count() or 1)
            loaded: list[dict] = []
            write_artifact([idle], busy)
            with busy_processes(busy):
                for k in range(LOADED_RUNS):
                    loaded.append(self.drill(client, f"loaded {k + 1} ({busy} busy processes)"))
                    write_artifact([idle, *loaded], busy)  # each run as it ends
        finally:
            client.destroy()
        for hole in loaded:
            for key in ("depth", "lateral", "fk_depth", "fk_lateral"):
                difference = abs(hole[key] - idle[key])
                self.assertLessEqual(
                    difference,
                    SAME_HOLE,
                    f"{hole['label']}: {key} {difference * 1e6:.3f} um from the idle hole's",
                )


def write_artifact(holes: list[dict], busy: int) -> None:
    """sim/wall and the holes, one line a run, to $QUIROBOT_ARTIFACTS/sim_load.txt."""
    directory = Path(os.environ.get("QUIROBOT_ARTIFACTS", "ci-artifacts"))
    directory.mkdir(parents=True, exist_ok=True)
    lines = [
        f"# test/ros/test_launch_sim_load.py: the shipped incision over ROS (sim.launch.py), idle and with "
        f"{busy} busy processes on {os.cpu_count()} cores",
        "# run, sim/wall, simulated s, wall s, depth mm, lateral um, FK depth mm, FK lateral um",
    ]
    for h in holes:
        lines.append(
            f"{h['label']}, {h['ratio']:.3f}, {h['sim']:.1f}, {h['wall']:.1f}, {h['depth'] * 1e3:.6f}, "
            f"{h['lateral'] * 1e6:.3f}, {h['fk_depth'] * 1e3:.6f}, {h['fk_lateral'] * 1e6:.3f}"
        )
    (directory / "sim_load.txt").write_text("\n".join(lines) + "\n")
