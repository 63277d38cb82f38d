"""The real drives' control cycle in its own thread, on an absolute deadline schedule.

`DriveCycle` runs `DriveBridge.step` (SYNC, heartbeat, RPDO setpoints, TPDO feedback, the
safety layer) every control period in a thread of its own, as ros2_control_node runs its update
loop and ros2_canopen its lely event loop: the ROS executor (subscriptions, services,
diagnostics, a slow callback, Python's garbage collector triggered there) never delays a SYNC.
Each drive quick-stops itself after canopen.sync_loss_periods missed SYNCs or a missed master
heartbeat (docs/canopen.md): right for a dead host, wrong for a busy one.

Schedule. The thread sleeps to absolute deadlines `start + k * period` on CLOCK_MONOTONIC
(clock_nanosleep with TIMER_ABSTIME, ros2_control_node's sleep_until): a relative sleep would add
each cycle's own duration and wake-up latency to the period and drift. A cycle that starts later
than one period after its deadline skips the missed deadlines (counted in `CycleStats.skipped`)
instead of running a burst of back-to-back cycles: the hardware's clocks are wall clocks, so a
skipped period is a late one, never a lost command.

Crossing from ROS (any other thread) to the cycle, nothing that makes the cycle wait:
- commands: `post_command(names, position, velocity, now)` into `CommandMailbox`, one slot under
  one lock held for a tuple swap (latest wins: the joint_state_topic plugin sends the whole
  command every controller cycle); the cycle takes it at the start of its period;
- the state back: `latest` is the last `CycleOutput` (an immutable snapshot, replaced by one
  reference assignment, so a reader never sees half a cycle);
- anything else that touches the drives (enable, disable, acknowledge a stop, home, the drives'
  status): `call(function, timeout)` queues `function(bridge)`; the cycle runs one such request
  after a period's step and hands the result back; the caller (the ROS side) waits, never the
  cycle. A request that talks SDO (enabling) delays the following SYNC by its own duration, as
  it did in the rclpy timer.
- messages (a refused command, an error of a request) go to `messages`, a deque the ROS side
  drains.

Garbage collection (`gc_policy`): "auto" is Python's default (a generation-0 collection every
~700 container allocations, in whichever thread allocates: sometimes this one); "freeze"
(default) moves everything allocated at start-up into the permanent generation
(gc.freeze), so a collection scans only what was made since; "manual" freezes, disables the
automatic collector and runs gc.collect(0) in the cycle thread after a cycle that left at least
`gc_slack` s to its next deadline (gc.collect(2) every `full_collection_period` s: nothing piles
up); bench/drive_loop.py measures the three.

Real time, where the OS grants it (reported at start, `RealtimeReport`, never required):
SCHED_FIFO at `priority` for the cycle thread and at `priority - 1` for the threads that receive
the TPDOs (`receive_threads`: the canopen networks' notifiers, so feedback is not starved by
busy processes), all memory locked (mlockall: no page fault on the cycle's path), and the
interpreter's GIL switch interval cut to `switch_interval` s (Python's 5 ms default would let a
busy ROS thread hold the GIL for 5 ms past the cycle's deadline).
"""

from __future__ import annotations

import collections
import ctypes
import ctypes.util
import gc
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from quirobot_control.bridge.drive_bridge import BridgeError, DriveBridge, JointStateSample

GC_POLICIES = ("auto", "freeze", "manual")
#: clock_nanosleep(2) and mlockall(2) constants (Linux).
_CLOCK_MONOTONIC = 1
_TIMER_ABSTIME = 1
_MCL_CURRENT, _MCL_FUTURE = 1, 2

__all__ = [
    "GC_POLICIES",
    "CommandMailbox",
    "CycleOutput",
    "CycleSettings",
    "CycleStats",
    "DriveCycle",
    "RealtimeReport",
]


@dataclass(frozen=True)
class CycleSettings:
    """How the cycle thread runs (see the module doc). `priority` 0: no SCHED_FIFO."""

    priority: int = 50  # SCHED_FIFO priority of the cycle thread (ros2_control_node's default 50)
    lock_memory: bool = True  # mlockall(MCL_CURRENT | MCL_FUTURE)
    gc_policy: str = "freeze"
    gc_slack: float = 0.5e-3  # s to the next deadline that a manual gen-0 collection needs
    full_collection_period: float = 10.0  # s between manual full collections
    switch_interval: float = 2e-4  # s, sys.setswitchinterval (None-like 0: leave it)
    stats_capacity: int = 1 << 20  # cycles kept in CycleStats (a ring: ~17 min at 1 kHz)

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
class RealtimeReport:
    """What the OS granted the cycle at start-up (each error None when granted)."""

    priority: int  # SCHED_FIFO priority of the cycle thread; 0: none
    priority_error: str | None
    receive_threads: int  # TPDO receive threads raised to priority - 1
    memory_locked: bool
    memory_error: str | None
    gc_policy: str
    switch_interval: float  # s, the interpreter's GIL switch interval in force

    def describe(self) -> str:
        """One line for the node's log."""
        fifo = (
            f"SCHED_FIFO {self.priority} (TPDO receivers {self.receive_threads} at {self.priority - 1})"
            if self.priority
            else f"normal scheduling ({self.priority_error or 'not asked'})"
        )
        memory = (
            "memory locked"
            if self.memory_locked
            else f"memory not locked ({self.memory_error or 'not asked'})"
        )
        return (
            f"drive cycle: {fifo}, {memory}, gc {self.gc_policy}, GIL switch interval "
            f"{self.switch_interval * 1e6:.0f} us"
        )


@dataclass(frozen=True)
class CycleOutput:
    """One period's result, replaced as a whole each period (`DriveCycle.latest`)."""

    cycle: int  # periods run since start
    sample: JointStateSample


class CommandMailbox:
    """The latest JointState command, one slot under one lock (latest wins; see the module doc)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._slot: tuple[Sequence[str], Sequence[float], Sequence[float], float] | None = None
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

    def take(self) -> tuple[Sequence[str], Sequence[float], Sequence[float], float] | None:
        """The command posted since the last take, or None."""
        with self._lock:
            item, self._slot = self._slot, None
        return item


class CycleStats:
    """Per-cycle measurements in preallocated rings (no allocation in the cycle), all in s.

    lateness[k]: start of cycle k minus its deadline; cpu[k]: the cycle thread's CPU time for
    cycle k (step, command, request, collection); sync[k]: the monotonic time of the SYNC sent
    in cycle k (NaN: none); command_to_rpdo[k]: for a cycle that put setpoints on the bus, the
    time from posting the command in force to that transmission (NaN: none).
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = int(capacity)
        self.lateness = np.full(self.capacity, np.nan)
        self.cpu = np.full(self.capacity, np.nan)
        self.sync = np.full(self.capacity, np.nan)
        self.command_to_rpdo = np.full(self.capacity, np.nan)
        self.cycles = 0
        self.skipped = 0  # deadlines skipped after a cycle more than one period late
        self.collections = 0  # manual gc.collect calls in the cycle

    def window(self, values: np.ndarray) -> np.ndarray:
        """The recorded part of a ring, oldest first."""
        n = min(self.cycles, self.capacity)
        if self.cycles <= self.capacity:
            return values[:n].copy()
        start = self.cycles % self.capacity
        return np.concatenate((values[start:], values[:start]))

    def reset(self) -> None:
        """Forget what was recorded (e.g. the start-up cycles before a measurement)."""
        for values in (self.lateness, self.cpu, self.sync, self.command_to_rpdo):
            values.fill(np.nan)
        self.cycles = self.skipped = self.collections = 0


class _Request:
    __slots__ = ("done", "error", "function", "result")

    def __init__(self, function: Callable[[DriveBridge], object]) -> None:
        self.function = function
        self.done = threading.Event()
        self.result: object = None
        self.error: BaseException | None = None


class DriveCycle:
    """`bridge` stepped every control period in its own thread (see the module doc).

    The cycle owns the bridge while it runs: other threads reach it only through
    `post_command`, `call` and `latest`. `stop()` ends the thread; the bridge's close() is the
    owner's, after it.
    """

    def __init__(
        self,
        bridge: DriveBridge,
        settings: CycleSettings | None = None,
        *,
        receive_threads: Iterable[threading.Thread] = (),
    ) -> None:
        """`receive_threads`: threads to raise to priority - 1 (the TPDO receivers). The clock of
        the deadlines and of `now` everywhere is time.monotonic (CLOCK_MONOTONIC), s."""
        self.bridge = bridge
        self.settings = settings or CycleSettings()
        self.period = bridge.dt
        self.clock = time.monotonic
        self.mailbox = CommandMailbox()
        self.stats = CycleStats(self.settings.stats_capacity)
        self.messages: collections.deque[str] = collections.deque(maxlen=1000)
        self.latest: CycleOutput | None = None
        self.report: RealtimeReport | None = None
        self._receive_threads = tuple(receive_threads)
        self._requests: collections.deque[_Request] = collections.deque()
        self._stop = threading.Event()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, name="drive-cycle", daemon=True)
        self._stall = 0.0  # s: a test's stall of the cycle thread (stall())
        self._sleep_until = _absolute_sleeper()
        backend = bridge.backend
        self._syncs = getattr(backend, "syncs", None)
        self._flushes = getattr(backend, "flushes", None)
        self._command_posted = math.nan  # when the command in force was posted (s)

    # --- the ROS side ---------------------------------------------------------------------------
    def start(self, timeout: float = 5.0) -> RealtimeReport:
        """Start the thread; what the OS granted (also in `report`)."""
        self._thread.start()
        if not self._started.wait(timeout):
            raise RuntimeError(f"the drive cycle thread did not start within {timeout} s")
        assert self.report is not None
        return self.report

    def post_command(
        self, names: Sequence[str], position: Sequence[float], velocity: Sequence[float] = (), *, now: float
    ) -> None:
        """A JointState command received at `now` (s, the cycle's clock): the cycle takes the
        latest at the start of its next period (DriveBridge.command there)."""
        self.mailbox.post(names, position, velocity, now)

    def call(self, function: Callable[[DriveBridge], object], timeout: float = 5.0) -> object:
        """Run `function(bridge)` in the cycle thread between two periods and return its result
        (its exception is raised here). TimeoutError if the cycle did not run it within `timeout` s
        (wall clock; it may still run later)."""
        if not self.running:
            raise BridgeError("the drive cycle is not running")
        request = _Request(function)
        self._requests.append(request)
        if not request.done.wait(timeout):
            raise TimeoutError(f"the drive cycle did not serve the request within {timeout} s")
        if request.error is not None:
            raise request.error
        return request.result

    @property
    def running(self) -> bool:
        return self._thread.is_alive() and not self._stop.is_set()

    def stop(self, timeout: float = 2.0) -> None:
        """End the thread (after its current period); the bridge stays open (close it after)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        for request in list(self._requests):
            request.error = BridgeError("the drive cycle stopped before serving the request")
            request.done.set()
        self._requests.clear()
        if self.settings.gc_policy == "manual":
            gc.enable()

    def stall(self, seconds: float) -> None:
        """Test hook: the cycle thread sleeps `seconds` before its next period (a stalled loop,
        not a busy ROS side): the drives' SYNC-loss and heartbeat watchdogs must catch it."""
        self._stall = float(seconds)

    # --- the cycle thread ---------------------------------------------------------------------
    def _run(self) -> None:
        self.report = self._realtime()
        self._started.set()
        period, stats, capacity = self.period, self.stats, self.stats.capacity
        manual_gc = self.settings.gc_policy == "manual"
        full_every = max(1, round(self.settings.full_collection_period / period))
        deadline = self.clock() + period
        while not self._stop.is_set():
            self._sleep_until(deadline)
            if self._stall:
                stall, self._stall = self._stall, 0.0
                time.sleep(stall)
            begin = self.clock()
            cpu = time.thread_time()
            k = stats.cycles % capacity
            stats.lateness[k] = begin - deadline
            try:
                self._cycle(begin, k)
            except Exception as error:  # noqa: BLE001  (the cycle must survive anything a request does)
                self.messages.append(f"drive cycle error: {type(error).__name__}: {error}")
            if self._requests:
                self._serve(self._requests.popleft())
            if manual_gc and deadline + period - self.clock() > self.settings.gc_slack:
                gc.collect(2 if stats.cycles % full_every == 0 else 0)
                stats.collections += 1
            stats.cpu[k] = time.thread_time() - cpu
            stats.cycles += 1
            deadline += period
            behind = self.clock() - deadline
            if behind > period:  # skip the missed deadlines (module doc), keep the phase
                missed = math.floor(behind / period)
                stats.skipped += missed
                deadline += missed * period

    def _cycle(self, now: float, k: int) -> None:
        command = self.mailbox.take()
        if command is not None:
            names, position, velocity, received = command
            try:
                self.bridge.command(names, position, velocity, now=received)
                self._command_posted = received
            except BridgeError as error:
                self.messages.append(f"command refused: {error}")
        backend = self.bridge.backend
        sample = self.bridge.step(now)
        self.latest = CycleOutput(self.stats.cycles, sample)
        stats = self.stats
        if self._syncs is not None:
            syncs = backend.syncs
            stats.sync[k] = backend.sync_time if syncs != self._syncs else math.nan
            self._syncs = syncs
        if self._flushes is not None:
            flushes = backend.flushes
            flushed = flushes != self._flushes
            stats.command_to_rpdo[k] = backend.flush_time - self._command_posted if flushed else math.nan
            self._flushes = flushes

    def _serve(self, request: _Request) -> None:
        try:
            request.result = request.function(self.bridge)
        except BaseException as error:  # noqa: BLE001  (handed back to the caller)
            request.error = error
        request.done.set()

    def _realtime(self) -> RealtimeReport:
        """Apply the settings the OS grants, in the cycle thread; what was granted."""
        settings = self.settings
        priority, priority_error, raised = 0, None, 0
        if settings.priority:
            try:
                os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(settings.priority))
                priority = settings.priority
            except (OSError, AttributeError) as error:
                priority_error = f"SCHED_FIFO refused: {error}"
            if priority:
                for thread in self._receive_threads:
                    try:
                        os.sched_setscheduler(thread.native_id, os.SCHED_FIFO, os.sched_param(priority - 1))
                        raised += 1
                    except (OSError, TypeError):
                        pass
        memory_locked, memory_error = False, None
        if settings.lock_memory:
            memory_locked, memory_error = _lock_memory()
        if settings.switch_interval > 0.0:
            sys.setswitchinterval(settings.switch_interval)
        if settings.gc_policy in ("freeze", "manual"):
            gc.collect()
            gc.freeze()
        if settings.gc_policy == "manual":
            gc.disable()
        return RealtimeReport(
            priority=priority,
            priority_error=priority_error,
            receive_threads=raised,
            memory_locked=memory_locked,
            memory_error=memory_error,
            gc_policy=settings.gc_policy,
            switch_interval=sys.getswitchinterval(),
        )


def _lock_memory() -> tuple[bool, str | None]:
    """mlockall(MCL_CURRENT | MCL_FUTURE): (locked, why not)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False, "no C library"
    libc = ctypes.CDLL(name, use_errno=True)
    if libc.mlockall(_MCL_CURRENT | _MCL_FUTURE) != 0:
        return False, f"mlockall refused: {os.strerror(ctypes.get_errno())}"
    return True, None


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def _absolute_sleeper() -> Callable[[float], None]:
    """sleep_until(deadline): clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) where the C library
    has it (ctypes releases the GIL while it sleeps); else time.sleep of what remains."""
    name = ctypes.util.find_library("c")
    function = getattr(ctypes.CDLL(name, use_errno=True), "clock_nanosleep", None) if name else None
    if function is None:

        def sleep_until(deadline: float) -> None:
            while (remaining := deadline - time.monotonic()) > 0.0:
                time.sleep(remaining)

        return sleep_until
    function.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(_Timespec), ctypes.c_void_p]
    request = _Timespec()
    pointer = ctypes.byref(request)

    def sleep_until(deadline: float) -> None:
        seconds = math.floor(deadline)
        request.tv_sec = seconds
        request.tv_nsec = min(int((deadline - seconds) * 1e9), 999_999_999)
        while function(_CLOCK_MONOTONIC, _TIMER_ABSTIME, pointer, None) == 4:  # EINTR: again
            pass

    return sleep_until
