"""The load of the ROS tier's load test (issue 17 item 4), and where its numbers go.

`busy_processes(count)`: `count` processes spinning a CPU core each (`python3 -c "while True:
pass"`, niced 0 like the stack), killed on the way out; the test starts BUSY_PER_CORE per core.
`write_sim_load(holes, busy)`: sim/wall and the hole of each run (the plant's true tip, the
result, the test's FK of the joint states), one line a run, to
$QUIROBOT_ARTIFACTS/sim_load.txt (bench/results/sim_load.txt is a copy of a run;
scripts/docs_sim_load.py writes docs/drive_from_another_node.md's table from it).
"""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

#: busy processes per CPU core (issue 17 item 4: at least two)
BUSY_PER_CORE = 2


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


def write_sim_load(holes: list[dict], busy: int) -> None:
    """One line a run: its label, sim/wall, simulated and wall s, the true tip's depth (mm) and
    lateral deviation (um), the same in the result and from the test's FK of the joint states."""
    directory = Path(os.environ.get("QUIROBOT_ARTIFACTS", "ci-artifacts"))
    directory.mkdir(parents=True, exist_ok=True)
    lines = [
        f"# test/ros/test_launch_drill_hole.py test_8: the shipped incision over ROS (sim.launch.py), idle "
        f"and with {busy} busy processes on {os.cpu_count()} cores",
        "# run, sim/wall, simulated s, wall s, true-tip depth mm, true-tip lateral um, result depth mm, "
        "result lateral um, FK depth mm, FK lateral um",
    ]
    for h in holes:
        lines.append(
            f"{h['label']}, {h['ratio']:.3f}, {h['sim']:.1f}, {h['wall']:.1f}, {h['true_depth'] * 1e3:.6f}, "
            f"{h['true_lateral'] * 1e6:.3f}, {h['depth'] * 1e3:.6f}, {h['lateral'] * 1e6:.3f}, "
            f"{h['fk_depth'] * 1e3:.6f}, {h['fk_lateral'] * 1e6:.3f}"
        )
    (directory / "sim_load.txt").write_text("\n".join(lines) + "\n")
