"""The host's stalls, measured beside the CAN bus tests, to tell a host that stopped the drives from
a master that did.

The simulated drives stop themselves when no SYNC or heartbeat comes for their watchdog (10 ms).
On a loaded or virtual machine the host itself can stall longer than that (a CI run's bench saw a
bare SCHED_FIFO 1 ms loop wake up 27 ms late, with 610 ms of CPU stolen by the hypervisor): the
drives then stop whatever the master does. `HostStalls` runs one probe process per CPU, outside
the test's process and its GIL, each pinned to its CPU at SCHED_FIFO PROBE_PRIORITY where granted:
a bare loop on absolute 1 ms deadlines that reports every wake-up later than the threshold as it
happens. A test that finds a drive stopped for a lost master skips, naming the stall, only if a
probe saw the host stall longer than the drives' watchdog during the test (`assert_master_kept`).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time

import pytest

PROBE_PRIORITY = 60  # above the cycle (50) and the drives' threads (45), as bench/drive_loop.py
PROBE_PERIOD = 1e-3  # s

_PROBE = """
import contextlib, os, sys, time
cpu, threshold, period = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
with contextlib.suppress(OSError, AttributeError):
    os.sched_setaffinity(0, {cpu})
with contextlib.suppress(OSError, AttributeError):
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(int(sys.argv[4])))
from quirobot_control.bridge.cycle_realtime import absolute_sleeper
sleep_until = absolute_sleeper()
print("ready", flush=True)
deadline = time.monotonic() + period
while True:
    sleep_until(deadline)
    late = time.monotonic() - deadline
    if late > threshold:
        print(deadline, late, flush=True)
        deadline += (late // period) * period
    deadline += period
"""


class HostStalls:
    """Probe processes, one per CPU, and the stalls they reported: (deadline, lateness) in s of
    time.monotonic() (the same clock in every process)."""

    def __init__(self, threshold: float) -> None:
        self.stalls: list[tuple[float, float]] = []
        self._processes: list[subprocess.Popen] = []
        self._lock = threading.Lock()
        cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else [0]
        for cpu in cpus:
            process = subprocess.Popen(
                [sys.executable, "-c", _PROBE, str(cpu), repr(threshold), repr(PROBE_PERIOD)]
                + [str(PROBE_PRIORITY)],
                stdout=subprocess.PIPE,
                text=True,
            )
            self._processes.append(process)
            if process.stdout.readline().strip() != "ready":
                raise RuntimeError("host stall probe did not start")
            threading.Thread(target=self._read, args=(process,), daemon=True).start()

    def _read(self, process: subprocess.Popen) -> None:
        for line in process.stdout:
            deadline, late = (float(x) for x in line.split())
            with self._lock:
                self.stalls.append((deadline, late))

    def longest_since(self, start: float) -> float:
        """s, the longest stall any probe saw from `start` (time.monotonic()) until now; 0 if none."""
        with self._lock:
            return max((late for deadline, late in self.stalls if deadline + late >= start), default=0.0)

    def close(self) -> None:
        for process in self._processes:
            with contextlib.suppress(OSError):
                process.kill()
            process.wait()


class StallWindow:
    """One test's window on the host's stalls (from the test's start)."""

    def __init__(self, stalls: HostStalls, watchdog: float) -> None:
        self.stalls = stalls
        self.watchdog = watchdog  # s, the drives' shortest watchdog on their master
        self.start = time.monotonic()

    def stall_excusing(self, lost: dict) -> str | None:
        """Why the drives' state is the host's doing, or None: some drive stopped itself for a
        lost master (`lost`: `drives.master_lost()`) and a probe saw the host stall longer than
        the drives' watchdog during the test (the drives stop for such a stall whatever the
        master does)."""
        if not lost:
            return None
        time.sleep(0.05)  # a stall's report reaches its reader thread
        longest = self.stalls.longest_since(self.start)
        if longest <= self.watchdog:
            return None
        return (
            f"the host stalled {longest * 1e3:.1f} ms (a SCHED_FIFO probe's wake-up), longer than "
            f"the drives' {self.watchdog * 1e3:.0f} ms watchdog, during this test: the drives stopped "
            f"for the host ({lost})"
        )

    def assert_master_kept(self, drives) -> None:
        """No drive stopped itself for a lost master, unless the host stalled longer than the
        drives' watchdog during the test: then the test skips, the stall named. A test that fails
        earlier (a request refused because a drive stopped) is judged the same way by conftest's
        pytest_runtest_call."""
        lost = drives.master_lost()
        excuse = self.stall_excusing(lost)
        if excuse is not None:
            pytest.skip(excuse)
        assert lost == {}
