"""SIGINT at a random moment to a task_node-shaped rclpy process, many times: how often its shutdown
crashes or hangs, with rclpy's plain order and with task_node's (nodes/rclpy_workarounds.py).

    python bench/sigint_race.py [--runs N] [--busy N] [--save [FILE]]     # needs ROS 2 sourced

The process is task_node's shape: a node on a MultiThreadedExecutor in the main thread (a 100 Hz
timer and a 500 Hz publisher) and a second node on a SingleThreadedExecutor on its own thread
(the inputs). Once "ready", it gets SIGINT after a random 0-0.9 s and shuts down:

- plain: KeyboardInterrupt or ExternalShutdownException out of spin, then executor.shutdown(),
  the nodes destroyed, rclpy shut down (what task_node did before);
- task_node: sigint_without_keyboard_interrupt() before rclpy.init, spin through
  spin_until_shutdown, join_signal_thread() before any executor is destroyed.

It prints each exit status with its count (-11: a segfault; "hang": not ended 20 s after SIGINT,
then killed) and, for a crash, the first lines of faulthandler's dump. `--busy N` runs N busy
processes beside it (the crash needs a loaded machine: rclpy's signal thread must be late).
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_results import add_save_option, saved_output

CHILD = """
import faulthandler, sys, threading
faulthandler.enable()
order = sys.argv[1]
import rclpy
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor, SingleThreadedExecutor
from std_msgs.msg import Empty
from quirobot_control.nodes import rclpy_workarounds as workarounds
if order == "task_node":
    workarounds.sigint_without_keyboard_interrupt()
rclpy.init()
node, inputs_node = rclpy.create_node("race_main"), rclpy.create_node("race_inputs")
publisher = node.create_publisher(Empty, "race_topic", 10)
node.create_timer(0.01, lambda: None)
node.create_timer(0.002, lambda: publisher.publish(Empty()))
inputs_node.create_subscription(Empty, "race_topic", lambda message: None, 10)
inputs = SingleThreadedExecutor()
inputs.add_node(inputs_node)
thread = threading.Thread(target=workarounds.spin_until_shutdown, args=(inputs, inputs_node.context))
thread.start()
executor = MultiThreadedExecutor(num_threads=4)
executor.add_node(node)
print("ready", flush=True)
try:
    if order == "task_node":
        workarounds.spin_until_shutdown(executor, node.context)
    else:
        try:
            executor.spin()
        except (KeyboardInterrupt, ExternalShutdownException):
            pass
finally:
    if order == "task_node":
        workarounds.join_signal_thread()
    executor.shutdown(timeout_sec=0.0)
    inputs.shutdown(timeout_sec=0.0)
    thread.join(5.0)
    node.destroy_node()
    inputs_node.destroy_node()
    rclpy.try_shutdown()
"""
#: s a run may take from SIGINT to its end before it counts as a hang.
HANG = 20.0


def one_run(order: str, log: Path) -> str:
    """One process with `order`, SIGINT at a random moment once ready: its exit status, or "hang"."""
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-c", CHILD, order],
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
    deadline = time.monotonic() + 60.0
    while "ready" not in log.read_text() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(random.uniform(0.0, 0.9))
    process.send_signal(signal.SIGINT)
    try:
        return str(process.wait(timeout=HANG))
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return "hang"


def main(runs: int, busy: int) -> None:
    busy_processes = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    try:
        with tempfile.TemporaryDirectory() as folder:
            for order in ("plain", "task_node"):
                counts: collections.Counter[str] = collections.Counter()
                first_crash = ""
                for k in range(runs):
                    log = Path(folder) / f"{order}.{k}.log"
                    status = one_run(order, log)
                    counts[status] += 1
                    if status not in ("0", "1") and not first_crash:
                        first_crash = "\n".join(log.read_text().splitlines()[:8])
                summary = ", ".join(f"status {status} x{count}" for status, count in sorted(counts.items()))
                print(f"{order:9s} order, {runs} SIGINTs beside {busy} busy processes: {summary}")
                if first_crash:
                    print("  the first failure's output begins:\n    " + first_crash.replace("\n", "\n    "))
    finally:
        for process in busy_processes:
            process.kill()


if __name__ == "__main__":
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--runs", type=int, default=60, help="SIGINTs per order (default 60)")
    parser.add_argument("--busy", type=int, default=os.cpu_count() or 1, help="busy processes beside it")
    add_save_option(parser, "sigint_race.txt")
    arguments = parser.parse_args()
    with saved_output(arguments.save):
        main(arguments.runs, arguments.busy)
