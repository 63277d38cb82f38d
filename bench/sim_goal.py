"""One DrillHole goal on a running `ros2 launch quirobot sim.launch.py`: its hole, and how fast the
lock-step simulation ran it (plant time over wall time, CPU seconds per plant second per process).

    python bench/sim_goal.py [--save [FILE]]

Sends the README's goal (the shipped incision) once the action server is up, waits for the result
and prints it with the plant time (drive_node's /clock), the wall time and the CPU time that
drive_node, task_node and ros2_control_node spent per second of plant time (from /proc: Linux).
The CPU per plant second depends little on what else runs on the machine; sim/wall does. Used to
compare launch settings (controller_rate, tracking_lag): docs/drive_from_another_node.md.
"""

from __future__ import annotations

import argparse
import subprocess
import time
from pathlib import Path

from bench_results import add_save_option, saved_output

PROCESSES = ("drive_node", "task_node", "ros2_control_node")


def cpu_seconds() -> dict[str, float]:
    """{process: user + system CPU time (s)} of the stack's processes (the first of each name)."""
    clock_ticks = int(subprocess.run(["getconf", "CLK_TCK"], capture_output=True, text=True).stdout)
    found = {}
    for name in PROCESSES:
        pids = subprocess.run(["pgrep", "-f", f"/{name} "], capture_output=True, text=True).stdout.split()
        if pids:
            fields = Path(f"/proc/{pids[0]}/stat").read_text().rsplit(")", 1)[1].split()
            found[name] = (int(fields[11]) + int(fields[12])) / clock_ticks  # utime, stime
    return found


def main() -> None:
    import rclpy
    from quirobot.action import DrillHole
    from rclpy.action import ActionClient
    from rosgraph_msgs.msg import Clock

    from quirobot_control.planning.tasks import load_task

    rclpy.init()
    node = rclpy.create_node("sim_goal_bench")
    clock: list[float] = []
    node.create_subscription(Clock, "/clock", lambda m: clock.append(m.clock.sec + m.clock.nanosec * 1e-9), 1)
    client = ActionClient(node, DrillHole, "/quirobot/drill_hole")
    client.wait_for_server()
    task = load_task("incision")
    goal = DrillHole.Goal()
    goal.entry.header.frame_id = goal.direction.header.frame_id = "world"
    goal.entry.point.x, goal.entry.point.y, goal.entry.point.z = (float(v) for v in task.entry)
    direction = goal.direction.vector
    direction.x, direction.y, direction.z = (float(v) for v in task.direction)
    goal.depth, goal.feed_rate, goal.max_thrust = task.depth, task.feed_rate, 60.0
    while not clock:
        rclpy.spin_once(node, timeout_sec=0.1)
    cpu_start, wall_start, plant_start = cpu_seconds(), time.monotonic(), clock[-1]
    accepted = client.send_goal_async(goal)
    rclpy.spin_until_future_complete(node, accepted)
    done = accepted.result().get_result_async()
    rclpy.spin_until_future_complete(node, done)
    cpu_end, wall, plant = cpu_seconds(), time.monotonic() - wall_start, clock[-1] - plant_start
    result = done.result().result
    print(f"result: error_code {result.error_code}, {result.message}")
    print(f"depth {result.achieved_depth * 1e3:.4f} mm, lateral {result.max_lateral_deviation * 1e6:.2f} um")
    print(f"plant {plant:.1f} s in {wall:.1f} s of wall time: sim/wall {plant / wall:.3f}")
    for name in cpu_end:
        print(f"  {name}: {(cpu_end[name] - cpu_start.get(name, 0.0)) / plant:.3f} CPU s per plant s")
    node.destroy_node()
    rclpy.shutdown()


if __name__ == "__main__":
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    add_save_option(parser, "sim_goal.txt")
    arguments = parser.parse_args()
    with saved_output(arguments.save):
        main()
