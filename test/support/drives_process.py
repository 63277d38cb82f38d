"""Six simulated CiA 402 drives on python-can's udp_multicast in a process of their own, as real
drives stand apart from the host: test_polled_reception.py's rig (make_udp_drives: the shipped
parameters relaxed, each drive at START, their watchdogs on the master live once `live()`),
served over a line protocol on the child's stdin and stdout.

A test process that runs the master (or drive_node's ROS side) beside the drives shares one GIL
with six Python drive models stepping every SYNC: the drives then stall with the host, and judge
it by their own stalls (test_drive_cycle_rclpy.py measured 5-20 ms SYNC gaps that way).

    drives = DrivesProcess.start()      # pytest.skip where udp_multicast cannot open
    drives.config, drives.params        # the CanBusConfig and parameters the master uses
    drives.live(); drives.master_lost(); drives.states(); drives.close()
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

#: SCHED_FIFO priority of the drives' process (_serve says why).
PRIORITY = 35
HERE = Path(__file__).resolve().parent
BRIDGE_TESTS = HERE.parent / "control" / "bridge"


class DrivesProcess:
    """The parent's handle on the drives' process (module doc)."""

    def __init__(self, child: subprocess.Popen, config, params) -> None:
        self.child, self.config, self.params = child, config, params

    @classmethod
    def start(cls) -> DrivesProcess:
        import pytest

        from quirobot_control.bridge.canopen_backend import CanBusConfig

        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(HERE), str(BRIDGE_TESTS), env.get("PYTHONPATH", "")])
        child = subprocess.Popen(
            [sys.executable, str(Path(__file__))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        answer = json.loads(child.stdout.readline() or '{"skip": "the drives process ended at start"}')
        if "skip" in answer:
            child.wait()
            pytest.skip(answer["skip"])
        from virtual_can import relaxed_parameters

        from quirobot_description.parameters import load_parameters

        config = CanBusConfig(answer["interface"], answer["channels"], answer["options"])
        return cls(child, config, relaxed_parameters(load_parameters()))

    def _ask(self, line: str):
        self.child.stdin.write(line + "\n")
        self.child.stdin.flush()
        return json.loads(self.child.stdout.readline())

    def live(self) -> None:
        """The drives on their own clocks from now on: their watchdogs on the master live."""
        self._ask("live")

    def states(self) -> dict[str, str]:
        """Each drive's CiA 402 state name."""
        return {axis: state for axis, (state, _) in self._ask("status").items()}

    def master_lost(self) -> dict[str, str]:
        """The drives that lost their master, and how."""
        return {axis: lost for axis, (_, lost) in self._ask("status").items() if lost}

    def enabled(self) -> bool:
        return all(state == "OPERATION_ENABLED" for state in self.states().values())

    def close(self) -> None:
        if self.child.poll() is None:
            self.child.stdin.close()
            try:
                self.child.wait(10.0)
            except subprocess.TimeoutExpired:
                self.child.kill()
                self.child.wait()


def _serve() -> int:
    import pytest
    from test_polled_reception import close_udp_drives, make_udp_drives

    from quirobot_description.parameters import load_parameters

    # The drives stand for hardware, which answers in time and takes no CPU from the host: the
    # whole process (its threads inherit it) on SCHED_FIFO PRIORITY where granted, under every
    # thread of the cycle process (50, 40: nothing there is preempted holding its GIL) and over
    # drive_node's ROS side (30). On normal scheduling four busy processes starved them, and at 20
    # drive_node's side did (its 1 kHz joint states): an SDO answer came too late ("No SDO response
    # received"); at 45 (test_polled_reception.py's DRIVES_PRIORITY, under an in-process cycle's 50
    # only) they preempted the cycle process's threads at 40 holding its GIL.
    with contextlib.suppress(OSError, AttributeError):
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(PRIORITY))
    try:
        drives = make_udp_drives(load_parameters())
    except pytest.skip.Exception as skipped:
        print(json.dumps({"skip": str(skipped)}), flush=True)
        return 0
    config = drives.config
    print(
        json.dumps(
            {"interface": config.interface, "channels": dict(config.channels), "options": config.options}
        ),
        flush=True,
    )
    try:
        for line in sys.stdin:
            command = line.strip()
            if command == "live":  # Drives.live without raising its threads (_serve says why)
                drives.threads[0].start()
                print("{}", flush=True)
            elif command == "status":
                status = {axis: [sim.state.name, sim.master_lost] for axis, sim in drives.simulators.items()}
                print(json.dumps(status), flush=True)
    finally:
        close_udp_drives(drives)
    return 0


if __name__ == "__main__":
    sys.exit(_serve())
