"""How fast the simulation runs: CPU seconds per plant (simulated) second, with sim/wall beside it.

    python bench/sim_speed.py [--root TREE] [--parts] [--ros] [--save [FILE]]

One function per measured thing, each returning a `Speed`; `main` prints them all:
- `simulate`: `quirobot simulate --task incision --plant ideal --json` as a user runs it (a fresh
  process: imports, planning, the closed loop, the MCAP log and the plot); once more with no
  compiled kernel (`no_kernels`: every C extension's import refused, so every Python twin runs,
  what an install without a C compiler runs) where the tree has the compiled ones;
- `accuracy_sample`: `quirobot accuracy`'s samples in one process (the budget's setup excluded):
  the first (with the first-call costs: scipy, the xacro expansion, the first MuJoCo model) and
  the next one;
  `--repeat` runs of every row, interleaved across the trees measured (`--before` and `--root`)
  and their rows (a slow spell of the host then costs each the same), the run of least CPU printed;
- `parts` (`--parts`): where the time of the simulate run and of one accuracy sample goes: the
  closed loop's periods, the plant in them, the drives and MuJoCo's steps in that, the MCAP log,
  the plot (timers around those methods in one process);
- `ros_stack` (`--ros`, in a ROS 2 environment with the package built and sourced): one DrillHole
  goal on a `ros2 launch quirobot sim.launch.py` of its own (bench/sim_goal.py), idle and with
  two busy processes per core beside it: each process of the stack and their sum.
Each tree's packages are compiled to bytecode first (`compile_bytecode`: a user's second run).
CPU is the measured process's user + system time (os.wait4's rusage: the child alone), stable on
a shared machine; sim/wall depends on what else runs. `--root` measures another checkout (e.g.
`git archive` of an older commit, for a before/after on the same machine and load).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench_results import add_save_option, saved_output

REPO = Path(__file__).resolve().parents[1]

#: Runs in the measured process (cwd: the tree measured): `quirobot accuracy`'s samples 0 and 1,
#: each with its CPU, wall and plant time (the run's simulated time), as JSON on stdout.
_ACCURACY_SAMPLES = """
import json, time
from quirobot_control.analysis import accuracy
from quirobot_control.analysis.accuracy import budget_setup, run_indexed_sample
from quirobot_description.parameters import load_parameters

plant_times = []
if hasattr(accuracy, "run_trajectory"):  # the robot's path (issue 31), plus its hand-over period
    run = accuracy.run_trajectory

    def timed_run(trajectory, params, control, **kwargs):
        log = run(trajectory, params, control, **kwargs)
        plant_times.append(log.simulated_time + control.dt)
        return log

    accuracy.run_trajectory = timed_run
else:  # an older checkout (--root): ClosedLoopSimulation's loop
    from quirobot_control.simulation import closed_loop

    run = closed_loop.ClosedLoopSimulation.run

    def timed_run(self, *args, **kwargs):
        log = run(self, *args, **kwargs)
        plant_times.append(log.simulated_time + self.dt)
        return log

    closed_loop.ClosedLoopSimulation.run = timed_run
setup = budget_setup(load_parameters(), seed=0)
samples = []
for index in (0, 1):
    cpu, wall = time.process_time(), time.perf_counter()
    run_indexed_sample(setup, index)
    samples.append([time.process_time() - cpu, time.perf_counter() - wall, plant_times[-1]])
print(json.dumps(samples))
"""


#: Runs in the measured process (cwd: the tree measured): `quirobot simulate --task incision
#: --plant ideal` and `quirobot accuracy`'s sample 1 with timers around their parts (each a
#: perf_counter pair around a method: about 0.4 us a call, some 13 calls a control period, counted
#: in the part that encloses them); the seconds of each, as JSON on stdout.
_PARTS = """
import json, sys, tempfile, time
start = time.process_time()
import mujoco
from quirobot_cli.cli import main
from quirobot_control.analysis import accuracy
from quirobot_control.analysis.accuracy import budget_setup, run_indexed_sample
from quirobot_control.drive_simulators.drive_array import DriveArray
from quirobot_control.procedures.drill_hole_run import DrillHoleRun
from quirobot_control.reporting import plots, recording
from quirobot_control.simulation.bridge_port import BridgePort
from quirobot_control.simulation.plant import MujocoPlant
from quirobot_control.simulation.realistic_plant import RealisticPlant
from quirobot_control.simulation.simulated_backend import SimulatedBackend
from quirobot_description.parameters import load_parameters

imports = time.process_time() - start
spent = {}

def timed(owner, name, part):
    original = getattr(owner, name)

    def wrapper(*args, **kwargs):
        begin = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent[part] = spent.get(part, 0.0) + time.perf_counter() - begin

    setattr(owner, name, wrapper)

timed(DriveArray, "advance", "drives")
timed(mujoco, "mj_step", "rigid bodies")  # both plants call it through the module
for plant in (MujocoPlant, RealisticPlant):
    timed(plant, "step_period", "plant")
    timed(plant, "sense", "plant")
timed(BridgePort, "_period", "periods")
timed(DrillHoleRun, "drive", "goal")
timed(accuracy, "run_trajectory", "goal")  # a sample's closed loop (imported by name there)
timed(recording, "write_mcap", "log")
timed(plots, "plot_result", "plot")
with tempfile.TemporaryDirectory() as output:
    begin = time.perf_counter()
    main(["simulate", "--task", "incision", "--plant", "ideal", "--no-progress", "--output", output])
    spent["run"] = time.perf_counter() - begin
results = {"imports": imports, "simulate": dict(spent)}
setup = budget_setup(load_parameters(), seed=0)
run_indexed_sample(setup, 0)
spent.clear()
begin = time.perf_counter()
run_indexed_sample(setup, 1)
spent["run"] = time.perf_counter() - begin
results["accuracy"] = dict(spent)
print(json.dumps(results))
"""

#: The parts, each within the one before it where indented: (label, key in _PARTS's results).
PARTS = (
    ("the goal's control periods (closed loop)", "goal"),
    ("  the drive bridge's periods", "periods"),
    ("    the plant (drives, physics, contact)", "plant"),
    ("      the six drives' steps", "drives"),
    ("      MuJoCo's rigid-body steps", "rigid bodies"),
    ("the MCAP log", "log"),
    ("the plot", "plot"),
)


def parts(root: Path = REPO) -> list[str]:
    """Where the time of `quirobot simulate --task incision --plant ideal` and of one accuracy
    sample goes: rows of seconds and the share of the run, the parts as PARTS nests them."""
    stdout, _, _ = _run(["-c", _PARTS], root)
    results = json.loads(stdout.strip().splitlines()[-1])
    rows = [f"{'where the time goes':<47} {'simulate':>17} {'accuracy sample':>17}"]
    rows.append(f"{'imports (quirobot_cli, the control stack)':<47} {results['imports']:8.2f} s {'':>17}")
    for label, key in PARTS:
        cells = []
        for run in ("simulate", "accuracy"):
            spent = results[run]
            cells.append(
                f"{spent[key]:8.2f} s {spent[key] / spent['run']:6.1%}" if key in spent else " " * 17
            )
        rows.append(f"{label:<47} {cells[0]:>17} {cells[1]:>17}")
    totals = [f"{results[run]['run']:8.2f} s {1:6.1%}" for run in ("simulate", "accuracy")]
    rows.append(f"{'the whole run (plan, loop, log, plot)':<47} {totals[0]:>17} {totals[1]:>17}")
    return rows


@dataclass(frozen=True)
class Speed:
    """One measurement: CPU s of the process, its wall time s and the plant time it simulated s."""

    what: str
    cpu: float
    wall: float
    plant: float

    @property
    def cpu_per_plant_second(self) -> float:
        return self.cpu / self.plant

    @property
    def sim_over_wall(self) -> float:
        return self.plant / self.wall

    def row(self) -> str:
        return (
            f"{self.what:<47} {self.cpu:8.2f} {self.plant:8.2f} {self.cpu_per_plant_second:8.3f} "
            f"{self.wall:8.2f} {self.sim_over_wall:8.3f}"
        )


HEADER = f"{'measured':<47} {'CPU s':>8} {'plant s':>8} {'CPU/pl.s':>8} {'wall s':>8} {'sim/wall':>8}"


def compile_bytecode(root: Path) -> None:
    """Compile the tree's Python packages to bytecode first, as a user's second run finds them
    (a process that may not write it, PYTHONDONTWRITEBYTECODE as in some sandboxes, would
    otherwise compile every module of ours at every measured start)."""
    packages = [str(path) for path in sorted(root.glob("quirobot_*")) if path.is_dir()]
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", *packages], env=environment, check=True)


def _run(arguments: list[str], root: Path) -> tuple[str, float, float]:
    """Run `python ARGUMENTS` in `root` (its code imported first); (stdout, CPU s, wall s) of it alone."""
    environment = {**os.environ, "PYTHONPATH": str(root)}
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, *arguments], cwd=root, env=environment, stdout=subprocess.PIPE, text=True
    )
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in (0, 1):  # 1: simulate's targets missed, still a measurement
        raise RuntimeError(f"{' '.join(arguments[:3])} ... failed with exit code {process.returncode}")
    return output, usage.ru_utime + usage.ru_stime, wall


#: Refuse every compiled kernel's import (quirobot_control's `_..._kernel` extensions; simulate's
#: no_kernels): each module then runs its Python twin, as where no C compiler built them.
_NO_KERNELS = """
import importlib.abc, sys
class NoKernels(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        last = name.rpartition(".")[2]
        if name.startswith("quirobot_control.") and last.startswith("_") and last.endswith("_kernel"):
            raise ImportError(f"{name}: no compiled kernels in this run")
sys.meta_path.insert(0, NoKernels())
"""


def has_compiled_kernels(root: Path) -> bool:
    """Whether the tree at `root` has compiled kernels, built (the drives' _drive_kernel; before
    it, _current_loop_kernel: the current loop alone)."""
    folder = root / "quirobot_control" / "drive_simulators"
    return any(folder.glob("_drive_kernel*")) or any(folder.glob("_current_loop_kernel*"))


def simulate(
    root: Path = REPO,
    task: str = "incision",
    plant: str = "ideal",
    keep: Path | None = None,
    no_kernels: bool = False,
) -> Speed:
    """`quirobot simulate --task TASK --plant PLANT --json` in a fresh process; `keep`: write its
    JSON there (to compare the numbers of two trees); `no_kernels`: every compiled kernel's
    Python twin instead (_NO_KERNELS)."""
    with tempfile.TemporaryDirectory() as output:
        command = "import sys; from quirobot_cli.cli import main; sys.exit(main(sys.argv[1:]))"
        if no_kernels:
            command = _NO_KERNELS + command
        arguments = [
            "simulate",
            "--task",
            task,
            "--plant",
            plant,
            "--json",
            "--no-progress",
            "--output",
            output,
        ]
        stdout, cpu, wall = _run(["-c", command, *arguments], root)
    if keep is not None:
        keep.write_text(stdout)
    plant_time = json.loads(stdout)["metrics"]["duration"]
    label = (
        "  the same, no compiled kernel" if no_kernels else f"quirobot simulate --task {task} --plant {plant}"
    )
    return Speed(label, cpu, wall, plant_time)


def tree_rows(root: Path) -> list[Callable[[], list[Speed]]]:
    """The measurements of one tree, each a call giving its rows: simulate (and, where the tree
    has the compiled kernels, simulate with their Python twins), then the accuracy samples."""
    variants = (False, True) if has_compiled_kernels(root) else (False,)
    calls = [lambda value=value: [simulate(root, no_kernels=value)] for value in variants]
    return [*calls, lambda: accuracy_sample(root)]


def fastest_rows(roots: list[Path], repeat: int) -> dict[Path, list[Speed]]:
    """Every tree's rows `repeat` times, interleaved across the trees and their measurements (a
    slow spell of the host then costs each the same), each row the run of least CPU: one run's
    CPU varies by a second on a virtual machine whose hypervisor takes CPU time."""
    calls = {root: tree_rows(root) for root in roots}
    runs: dict[Path, list[list[Speed]]] = {root: [] for root in roots}
    for _ in range(repeat):
        for root in roots:
            runs[root].append([speed for call in calls[root] for speed in call()])
    return {
        root: [min(column, key=lambda speed: speed.cpu) for column in zip(*rows, strict=True)]
        for root, rows in runs.items()
    }


def accuracy_sample(root: Path = REPO) -> list[Speed]:
    """`quirobot accuracy`'s first two samples in one process (realistic plant, seed 0)."""
    stdout, _, _ = _run(["-c", _ACCURACY_SAMPLES], root)
    first, second = json.loads(stdout.strip().splitlines()[-1])
    return [
        Speed("accuracy sample 0 (first in its process)", *first),
        Speed("accuracy sample 1", *second),
    ]


def ros_stack(busy: int = 0) -> list[Speed]:
    """One DrillHole goal (the shipped incision) on the simulated ROS stack, launched for it, with
    `busy` spinning processes beside it: a Speed per process (CPU from /proc) and the stack's."""
    from sim_goal import launched_stack, measure_goal

    with launched_stack() as stack:
        run = measure_goal(busy, stack.pid)
    if run["error_code"] != 0:
        raise RuntimeError(f"the DrillHole goal failed: {run['message']}")
    label = f"ROS stack, {busy} busy processes" if busy else "ROS stack, idle"
    plant, wall = run["plant"], run["wall"]
    speeds = [Speed(f"{label}: {name}", cpu * plant, wall, plant) for name, cpu in run["cpu"].items()]
    return [*speeds, Speed(f"{label}: the stack", run["total"] * plant, wall, plant)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=REPO, help="the checkout to measure (default this one)")
    parser.add_argument(
        "--before", type=Path, help="also measure this checkout first (e.g. an older commit's git archive)"
    )
    parser.add_argument(
        "--ros", action="store_true", help="also the simulated ROS stack's processes (a ROS 2 environment)"
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="runs of every row, interleaved across the trees, the least CPU printed (default 3)",
    )
    parser.add_argument(
        "--parts", action="store_true", help="also where simulate's and an accuracy sample's time goes"
    )
    add_save_option(parser, "sim_speed.txt")
    args = parser.parse_args()
    with saved_output(args.save):
        trees = [(label, root) for label, root in (("before", args.before), ("now", args.root)) if root]
        for _, root in trees:
            compile_bytecode(root)
        loads = os.getloadavg()[0]
        fastest = fastest_rows([root for _, root in trees], args.repeat)
        for label, root in trees:
            print(f"{label}: {root}; load average {loads:.2f} on {os.cpu_count()} cores at the start")
            print(HEADER)
            for speed in fastest[root]:
                print(speed.row())
        if args.parts:
            print("now: where the time goes, in-process wall seconds (one run; --root's tree)")
            for row in parts(args.root):
                print(row)
        if args.ros:  # the sourced workspace's build, not --root's
            for busy in (0, 2 * (os.cpu_count() or 1)):
                for speed in ros_stack(busy):
                    print(speed.row())


if __name__ == "__main__":
    main()
