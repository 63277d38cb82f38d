"""One DrillHole goal on the simulated ROS stack: its hole, and how fast the lock-step simulation
ran it (plant time over wall time, CPU seconds per plant second per process).

    python bench/sim_goal.py [--launch] [--busy N] [--save [FILE]]

Sends the README's goal (the shipped incision) once the action server is up, waits for the result
and prints it with the plant time (drive_node's /clock), the wall time and the CPU time that
drive_node, task_node and ros2_control_node spent per second of plant time (from /proc: Linux).
The CPU per plant second depends little on what else runs on the machine; sim/wall does.

Without `--launch` it uses a running `ros2 launch quirobot sim.launch.py` (to compare launch
settings: controller_rate, tracking_lag; docs/drive_from_another_node.md); with it, it launches
one itself (and stops it with SIGINT after the goal). `--busy N` runs the goal with N processes
spinning a core each beside the stack. bench/sim_speed.py calls `measure_goal` idle and loaded.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from bench_results import add_save_option, saved_output

PROCESSES = ("drive_node", "task_node", "ros2_control_node")


def cpu_seconds(group: int | None = None) -> dict[str, float]:
    """{process: user + system CPU time (s)} of the stack's processes (the first of each name; in
    process group `group` only, when given: a launch of its own beside another stack)."""
    clock_ticks = os.sysconf("SC_CLK_TCK")
    found = {}
    within = ["-g", str(group)] if group is not None else []
    for name in PROCESSES:
        pids = subprocess.run(
            ["pgrep", *within, "-f", f"/{name} "], capture_output=True, text=True
        ).stdout.split()
        if pids:
            fields = Path(f"/proc/{pids[0]}/stat").read_text().rsplit(")", 1)[1].split()
            found[name] = (int(fields[11]) + int(fields[12])) / clock_ticks  # utime, stime
    return found


@contextlib.contextmanager
def launched_stack(timeout: float = 30.0) -> Iterator[subprocess.Popen]:
    """`ros2 launch quirobot sim.launch.py` in its own process group, SIGINT on the way out (the
    launch passes it on to every node), SIGKILL to the group after `timeout` s. It stays in this
    session: with the kernel's autogroup scheduling a session shares the CPU as one, and the busy
    processes must compete with the stack's processes, not with the stack as a whole (as in the
    ROS tier's load test)."""

    def own_group() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # a shell's `&` ignores it, and the nodes inherit that
        os.setpgrp()

    process = subprocess.Popen(
        ["ros2", "launch", "quirobot", "sim.launch.py"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=own_group,
    )
    try:
        yield process
    finally:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@contextlib.contextmanager
def busy_processes(count: int) -> Iterator[None]:
    """`count` processes spinning a core each (as the ROS tier's load test), killed on the way out."""
    processes = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for process in processes:
            process.kill()
            process.wait()


def measure_goal(busy: int = 0, group: int | None = None) -> dict:
    """One DrillHole goal (the shipped incision, max_thrust 60 N) on the running stack, with `busy`
    spinning processes beside it: {error_code, message, depth (m), lateral (m), plant (s), wall (s),
    sim_wall, cpu: {process: CPU s per plant s}, total (CPU s per plant s)}; the processes of
    process group `group` (launched_stack's pid) if given."""
    import rclpy
    from quirobot.action import DrillHole
    from rclpy.action import ActionClient
    from rosgraph_msgs.msg import Clock

    from quirobot_control.nodes.drill_hole_goal import drill_hole_goal
    from quirobot_control.planning.tasks import load_task

    rclpy.init()
    node = rclpy.create_node("sim_goal_bench")
    try:
        clock: list[float] = []
        node.create_subscription(
            Clock, "/clock", lambda m: clock.append(m.clock.sec + m.clock.nanosec * 1e-9), 1
        )
        client = ActionClient(node, DrillHole, "/quirobot/drill_hole")
        client.wait_for_server()
        task = load_task("incision")
        goal = drill_hole_goal(task.entry, task.direction, task.depth, task.feed_rate, 60.0)
        while not clock:
            rclpy.spin_once(node, timeout_sec=0.1)
        with busy_processes(busy):
            cpu_start, wall_start, plant_start = cpu_seconds(group), time.monotonic(), clock[-1]
            accepted = client.send_goal_async(goal)
            rclpy.spin_until_future_complete(node, accepted)
            done = accepted.result().get_result_async()
            rclpy.spin_until_future_complete(node, done)
            cpu_end, wall, plant = (
                cpu_seconds(group),
                time.monotonic() - wall_start,
                clock[-1] - plant_start,
            )
        result = done.result().result
        cpu = {name: (cpu_end[name] - cpu_start.get(name, 0.0)) / plant for name in cpu_end}
        return {
            "error_code": result.error_code,
            "message": result.message,
            "depth": result.achieved_depth,
            "lateral": result.max_lateral_deviation,
            "plant": plant,
            "wall": wall,
            "sim_wall": plant / wall,
            "cpu": cpu,
            "total": sum(cpu.values()),
        }
    finally:
        node.destroy_node()
        rclpy.shutdown()


def report(run: dict, label: str = "") -> None:
    """Print one measured goal."""
    print(f"{label}result: error_code {run['error_code']}, {run['message']}")
    print(f"depth {run['depth'] * 1e3:.4f} mm, lateral {run['lateral'] * 1e6:.2f} um")
    print(f"plant {run['plant']:.1f} s in {run['wall']:.1f} s of wall time: sim/wall {run['sim_wall']:.3f}")
    for name, value in run["cpu"].items():
        print(f"  {name}: {value:.3f} CPU s per plant s")
    print(f"  the stack: {run['total']:.3f} CPU s per plant s")


def main(launch: bool, busy: int) -> None:
    with launched_stack() if launch else contextlib.nullcontext() as stack:
        group = stack.pid if stack is not None else None
        report(measure_goal(busy, group), f"{busy} busy processes: " if busy else "")


if __name__ == "__main__":
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--launch", action="store_true", help="launch sim.launch.py for the goal")
    parser.add_argument("--busy", type=int, default=0, metavar="N", help="N busy processes beside the stack")
    add_save_option(parser, "sim_goal.txt")
    arguments = parser.parse_args()
    with saved_output(arguments.save):
        main(arguments.launch, arguments.busy)
