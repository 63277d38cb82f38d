"""What crosses between the ROS side and the drive cycle (bridge.drive_cycle): the cycle's
settings, the command mailbox (one slot, latest wins, never blocks the cycle), each period's
immutable output, and the per-cycle measurements in preallocated rings.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from quirobot_control.bridge.drive_bridge import JointStateSample

GC_POLICIES = ("auto", "freeze", "manual")


@dataclass(frozen=True)
class CycleSettings:
    """How the cycle thread runs (see the module doc). `priority` 0: no SCHED_FIFO."""

    priority: int = 50  # SCHED_FIFO priority of the cycle thread (ros2_control_node's default 50)
    #: SCHED_FIFO priority of the TPDO receive threads (`attach`); 0: normal scheduling
    receive_priority: int = 49
    #: SCHED_FIFO priority of every other Python thread of the process (the GIL, module doc); 0: none.
    #: Measured on this loaded machine (8 s runs): with the cycle alone on SCHED_FIFO, lateness
    #: p99.9 39 ms, max 430 ms; with receivers and process too, p99.9 5.8 ms, max 11 ms.
    process_priority: int = 40
    lock_memory: bool = True  # mlockall(MCL_CURRENT) once the bridge is up (lock_memory())
    #: The cycle thread reads the buses itself once the bridge is up (`receive_in_cycle`): no
    #: receive thread to hand the GIL to at every frame; False: canopen's receive threads.
    receive_in_cycle: bool = True
    gc_policy: str = "freeze"
    gc_slack: float = 0.5e-3  # s to the next deadline that a manual gen-0 collection needs
    full_collection_period: float = 10.0  # s between manual full collections
    switch_interval: float = 2e-4  # s, sys.setswitchinterval while the cycle runs (0: leave it)
    stats_capacity: int = 1 << 17  # cycles kept in CycleStats (a ring: 131 s at 1 kHz, 4 MB)

    def __post_init__(self) -> None:
        if self.gc_policy not in GC_POLICIES:
            raise ValueError(f"gc policy must be one of {', '.join(GC_POLICIES)}, got {self.gc_policy!r}")
        if not 0 <= int(self.priority) <= 99:
            raise ValueError(f"SCHED_FIFO priority must be 0..99 (0: none), got {self.priority!r}")
        if not self.switch_interval >= 0.0 or not math.isfinite(self.switch_interval):
            raise ValueError(f"switch interval must be >= 0 s, got {self.switch_interval!r}")
        if int(self.stats_capacity) < 1:
            raise ValueError(f"stats capacity must be >= 1 cycle, got {self.stats_capacity!r}")


@dataclass(frozen=True)
class CycleOutput:
    """One period's result, replaced as a whole each period (`DriveCycle.latest`)."""

    cycle: int  # periods run since start
    sample: JointStateSample


#: A command as the cycle takes it: (names, position, velocity, received at: s, time.monotonic).
Command = tuple[Sequence[str], Sequence[float], Sequence[float], float]


class CommandSource(Protocol):
    """Where the cycle takes its commands: CommandMailbox, or the cycle process's command pipe
    (bridge.command_pipe.CommandReader). `take` never blocks."""

    posted: int  # commands that reached the source
    overwritten: int  # of them, the ones a newer one replaced before a take

    def take(self) -> Command | None: ...


class CommandMailbox:
    """The latest JointState command, one slot under one lock (latest wins; see the module doc)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._slot: Command | None = None
        self.posted = 0  # commands posted
        self.overwritten = 0  # posted ones replaced before the cycle took them

    def post(
        self, names: Sequence[str], position: Sequence[float], velocity: Sequence[float], now: float
    ) -> None:
        """Leave a command received at `now` (s, time.monotonic) for the cycle; never blocks on it."""
        item = (names, position, velocity, now)
        with self._lock:
            if self._slot is not None:
                self.overwritten += 1
            self._slot = item
            self.posted += 1

    def take(self) -> Command | None:
        """The command posted since the last take, or None."""
        with self._lock:
            item, self._slot = self._slot, None
        return item


class CycleStats:
    """Per-cycle measurements in preallocated rings (no allocation in the cycle), all in s.

    lateness[k]: start of cycle k minus its deadline; cpu[k]: the cycle thread's CPU time for
    cycle k (step, command, request, collection); sync[k]: the monotonic time of the SYNC sent
    in cycle k (NaN: none); command_to_rpdo[k]: for a cycle that put on the bus the setpoints of a
    command taken since the last such transmission, the time from posting that command to the
    transmission (NaN: none; a setpoint sent again while no new command came is no command's
    latency: how often commands come is the ROS side's, measured there; nor is a command taken
    while the drives were stopped, or posted before a period that ran no command (stopped,
    disabled, the cycle paused for an enable), which reaches the bus only once they are enabled:
    the bench saw 45-65 ms samples of commands posted during an enable); active[k]: 1 if the
    hardware was active in cycle k (the drives run commands), 0 if not (stopped, disabled), NaN
    if no bridge was stepped.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = int(capacity)
        self.lateness = np.full(self.capacity, np.nan)
        self.cpu = np.full(self.capacity, np.nan)
        self.sync = np.full(self.capacity, np.nan)
        self.command_to_rpdo = np.full(self.capacity, np.nan)
        self.active = np.full(self.capacity, np.nan)
        self.cycles = 0
        self.skipped = 0  # deadlines skipped after a cycle more than one period late
        self.collections = 0  # manual gc.collect calls in the cycle

    def window(self, values: np.ndarray, start: int = 0, end: int | None = None) -> np.ndarray:
        """`values` (one of the rings) of cycles start..end-1 (end: the cycles run), oldest first;
        cycles no longer in the ring are left out."""
        end = self.cycles if end is None else min(end, self.cycles)
        start = max(start, end - self.capacity, 0)
        index = np.arange(start, end) % self.capacity
        return values[index]
