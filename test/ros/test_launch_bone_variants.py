"""launch_testing: one task file, the same outcome over DDS as in `quirobot simulate` (issue 31).

For each bone variant the plant can drill (a soft layer behind the far cortex; a second cortex, the
fibula, behind a gap), `sim.launch.py plant:=ideal bone:=FILE` puts the variant's bone in
drive_node's plant and a DrillHole goal names the same file as its task. The goal and `ros2 run
quirobot quirobot simulate --task FILE --plant ideal --json` (run beside the stack) end the same
way: both complete, with the deepest true tip of the plant (/quirobot/sim/true_tip) within 10 um of
simulate's, and the feed stopped within the breakthrough limit (0.5 mm) past the far cortex. Before
the one path, the second cortex' goal drilled on 1.2 mm past the far cortex and reported success,
and the soft layer's aborted just past the near cortex (the drive side armed on the bone's last
layer).

On each launch the variants the plan refuses (a far cortex too thin to see, a near cortex too hard
for the thrust limit) are refused by the goal with simulate's reason: a refusal comes before any
motion, whatever bone the plant holds. The shipped tibia: test_launch_drill_hole.py test_0. The
same files in-process: test/control/bridge/test_one_path_same_outcome.py; the variants:
test/support/bone_variants.py.

A launch costs a goal of about 45 s of simulated time, with simulate's run (about 20 s of CPU)
beside it: about a minute each here. CI's ROS tier: `.ci/ros-tier -k bone_variants`.
"""

from __future__ import annotations

import atexit
import json
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import pytest

pytest.importorskip("launch_testing")
pytest.importorskip("rclpy")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))  # the shared variants

import launch_testing  # noqa: E402
import launch_testing.actions  # noqa: E402
import numpy as np  # noqa: E402
import rclpy  # noqa: E402
from ament_index_python.packages import get_package_share_directory  # noqa: E402
from bone_variants import EXPECTED, SAME_DEPTH, far_cortex_exit, variant_file  # noqa: E402
from exit_codes import assert_exit_codes  # noqa: E402
from launch.actions import IncludeLaunchDescription  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from rclpy.action import ActionClient  # noqa: E402
from ros_graph import GraphClient  # noqa: E402

from launch import LaunchDescription  # noqa: E402
from quirobot_control.nodes.drill_hole_goal import drill_hole_goal  # noqa: E402
from quirobot_control.planning.drill_hole import tip_progress  # noqa: E402
from quirobot_control.planning.tasks import load_task  # noqa: E402
from quirobot_control.procedures.drill_hole_executor import ErrorCode  # noqa: E402
from quirobot_description.parameters import load_parameters  # noqa: E402

#: The variants drilled, one launch each (their bone in the plant).
DRILLED = [name for name, outcome in EXPECTED.items() if outcome == "completed"]
REFUSED = [name for name, outcome in EXPECTED.items() if outcome == "refused"]
#: The variants' task files, written once for every launch of the module.
FILES = Path(tempfile.mkdtemp(prefix="quirobot-bone-variants-"))
atexit.register(shutil.rmtree, FILES, ignore_errors=True)


def start_simulate(path: Path) -> subprocess.Popen:
    """`ros2 run quirobot quirobot simulate --task FILE --plant ideal --json`, started: it runs beside
    the stack (the goal waits for its result, not the other way round)."""
    output = FILES / f"{path.stem}_simulate"
    command = ["ros2", "run", "quirobot", "quirobot", "simulate", "--task", str(path), "--plant", "ideal"]
    command += ["--json", "--no-progress", "--output", str(output)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def simulate_outcome(process: subprocess.Popen) -> tuple[str, float, str]:
    """(outcome, deepest true tip m, reason) of a `start_simulate` run: refused (its one error line,
    exit status 2, nan depth), completed (the run completed, nothing unsafe) or stopped."""
    out, err = process.communicate(timeout=900)
    prefix = "quirobot simulate: error: "
    errors = [line.removeprefix(prefix) for line in err.splitlines() if line.startswith(prefix)]
    if process.returncode == 2 and len(errors) == 1:
        return "refused", float("nan"), errors[0]
    assert out.strip(), f"quirobot simulate exited {process.returncode}: {err[-2000:]}"
    metrics = json.loads(out)["metrics"]
    outcome = "completed" if metrics["completed"] and not metrics["unsafe"] else "stopped"
    return outcome, metrics["max_depth"], metrics["stop_reason"] or ""


@pytest.mark.launch_test
@launch_testing.parametrize("variant", DRILLED)
def generate_test_description(variant):
    launch_file = f"{get_package_share_directory('quirobot')}/launch/sim.launch.py"
    path = variant_file(FILES, variant)
    return LaunchDescription(
        [
            IncludeLaunchDescription(
                PythonLaunchDescriptionSource(launch_file),
                launch_arguments={"plant": "ideal", "bone": str(path)}.items(),
            ),
            launch_testing.actions.ReadyToTest(),
        ]
    )


class TestBoneVariants(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        from quirobot.action import DrillHole

        rclpy.init()
        cls.graph = GraphClient("test_bone_variants")
        cls.client = ActionClient(cls.graph.node, DrillHole, "/quirobot/drill_hole")
        cls.parameters = load_parameters()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.client.destroy()
        cls.graph.close()
        rclpy.shutdown()

    def goal(self, path: Path):
        """A DrillHole goal for the task file at `path`: its entry, direction, depth and feed rate in
        the world frame, the robot's thrust limit, and the file as the goal's task."""
        task = load_task(str(path))
        limit = self.parameters.drilling.safety.thrust_limit
        return drill_hole_goal(task.entry, task.direction, task.depth, task.feed_rate, limit, task=str(path))

    def run_goal(self, path: Path, tips: list) -> tuple[str, float, str]:
        """(outcome, deepest true tip m past the entry, message) of a DrillHole goal for `path`:
        refused (REJECTED_LIMIT or REJECTED_INVALID, nan depth), completed (SUCCESS) or stopped."""
        self.graph.spin_until(self.client.server_is_ready, 180.0, "the /quirobot/drill_hole server")
        first = len(tips)
        future = self.client.send_goal_async(self.goal(path))
        self.graph.spin_until(future.done, 60.0, "the goal's answer")
        handle = future.result()
        if not handle.accepted:
            return "refused", float("nan"), "the action server rejected the goal"
        result_future = handle.get_result_async()
        self.graph.spin_until_simulated(result_future.done, 600.0, "DrillHole result")
        result = result_future.result().result
        if result.error_code in (ErrorCode.REJECTED_LIMIT, ErrorCode.REJECTED_INVALID):
            return "refused", float("nan"), result.message
        task = load_task(str(path))
        track = [
            tip_progress(np.array([t.point.x, t.point.y, t.point.z]), task.entry, task.direction)[0]
            for t in tips[first:]
        ]
        self.assertTrue(track, "no true tip on /quirobot/sim/true_tip during the goal")
        outcome = "completed" if result.error_code == ErrorCode.SUCCESS else "stopped"
        return outcome, max(track), result.message

    def test_0_the_plant_s_variant_ends_as_in_simulate(self, variant) -> None:
        from geometry_msgs.msg import PointStamped

        tips = self.graph.messages(PointStamped, "/quirobot/sim/true_tip")  # serialised while heard
        path = variant_file(FILES, variant)
        task = load_task(str(path))
        simulation = start_simulate(path)  # beside the stack as it starts and drills
        try:
            goal = self.run_goal(path, tips)
        except BaseException:
            simulation.kill()  # the goal failed: its reference is not waited for
            simulation.wait()
            raise
        simulated = simulate_outcome(simulation)
        print(f"bone variant {variant}: simulate {simulated}; DrillHole goal {goal}")
        self.assertEqual(simulated[0], EXPECTED[variant], simulated)
        self.assertEqual(goal[0], simulated[0], f"simulate {simulated}, goal {goal}")
        self.assertLessEqual(abs(goal[1] - simulated[1]), SAME_DEPTH, f"simulate {simulated}, goal {goal}")
        past_far_cortex = goal[1] - far_cortex_exit(task)
        self.assertLessEqual(past_far_cortex, self.parameters.drilling.safety.breakthrough_limit, goal)

    def test_1_the_variants_the_plan_refuses_are_refused_with_simulate_s_reason(self, variant) -> None:
        for name in REFUSED:
            path = variant_file(FILES, name)
            simulated = simulate_outcome(start_simulate(path))
            goal = self.run_goal(path, [])
            print(f"bone variant {name} (plant: {variant}): simulate {simulated}; DrillHole goal {goal}")
            self.assertEqual(simulated[0], "refused", simulated)
            self.assertEqual(goal[0], "refused", goal)
            self.assertIn(simulated[2], goal[2])  # the same reason


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    def test_exit_codes(self, proc_info, proc_output) -> None:
        assert_exit_codes(proc_info, proc_output)
