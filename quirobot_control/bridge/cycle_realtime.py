"""The drive cycle's real time, where the OS grants it, and its absolute-deadline sleep.

Schedule. The thread sleeps to absolute deadlines `start + k * period` on CLOCK_MONOTONIC
(clock_nanosleep with TIMER_ABSTIME, ros2_control_node's sleep_until): a relative sleep would add
each cycle's own duration and wake-up latency to the period and drift. A cycle that starts later
than one period after its deadline skips the missed deadlines (counted in `CycleStats.skipped`)
instead of running a burst of back-to-back cycles: the hardware's clocks are wall clocks, so a
skipped period is a late one, never a lost command.

Real time, where the OS grants it (reported at start, `RealtimeReport`, never required):
SCHED_FIFO at `priority` for the cycle thread, at `receive_priority` for the threads that receive
the TPDOs (`receive_threads`: the canopen networks' notifiers, so feedback is not starved by
busy processes) and at `process_priority` for every other Python thread of the process (those
that can hold the GIL: the rclpy executor's, not DDS's own), the memory
mapped once the bridge is up locked (mlockall MCL_CURRENT: no page fault on the cycle's path
for what exists then; see lock_memory for why not MCL_FUTURE), and the interpreter's GIL switch interval
cut to `switch_interval` s (Python's 5 ms default would let a busy ROS thread hold the GIL for
5 ms past the cycle's deadline). Why every thread: the cycle needs the GIL, and a thread that
holds it while the scheduler has preempted it (a normal-priority ROS thread under busy
processes) holds the cycle for its whole wait, tens of ms on this 2-core machine under load
(bench/drive_loop.py); on SCHED_FIFO only a higher real-time thread can preempt it, and the
cycle's drop request makes it release the GIL within the switch interval. A thread created
later inherits its creator's policy. This is the cost of a thread in Python; a separate process
(shared-memory mailbox) would remove the GIL from the cycle's path.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

#: clock_nanosleep(2) and mlockall(2) constants (Linux).
_CLOCK_MONOTONIC = 1
_TIMER_ABSTIME = 1
_MCL_CURRENT = 1


@dataclass(frozen=True)
class RealtimeReport:
    """What the OS granted the cycle at start-up (each error None when granted)."""

    priority: int  # SCHED_FIFO priority of the cycle thread; 0: none
    priority_error: str | None
    receive_threads: int  # TPDO receive threads raised to settings.receive_priority
    memory_locked: bool
    memory_error: str | None
    gc_policy: str
    switch_interval: float  # s, the interpreter's GIL switch interval in force
    receive_in_cycle: bool = False  # the cycle thread reads the buses (no receive threads)
    receive_error: str | None = None  # why not, when asked

    def describe(self) -> str:
        """One line for the node's log."""
        raised = f" ({self.receive_threads} TPDO receivers raised)" if self.receive_threads else ""
        fifo = (
            f"SCHED_FIFO {self.priority}{raised}"
            if self.priority
            else f"normal scheduling ({self.priority_error or 'not asked'})"
        )
        reception = (
            "buses read by the cycle thread"
            if self.receive_in_cycle
            else f"buses read by receive threads ({self.receive_error or 'not asked'})"
        )
        memory = (
            "memory locked"
            if self.memory_locked
            else f"memory not locked ({self.memory_error or 'not asked'})"
        )
        return (
            f"drive cycle: {fifo}, {reception}, {memory}, gc {self.gc_policy}, GIL switch interval "
            f"{self.switch_interval * 1e6:.0f} us"
        )


def raise_process(priority: int, *, skip: int) -> list[int]:
    """Every Python thread of this process (those that can hold the GIL; not, e.g., DDS's own C++
    threads) but `skip` (a native thread id) that is not on SCHED_FIFO yet to SCHED_FIFO
    `priority` (threads created later inherit their creator's); the ids of those raised."""
    raised = []
    for thread in threading.enumerate():
        tid = thread.native_id
        if tid is None or tid == skip:
            continue
        with contextlib.suppress(OSError):
            if os.sched_getscheduler(tid) != os.SCHED_FIFO:
                os.sched_setscheduler(tid, os.SCHED_FIFO, os.sched_param(priority))
                raised.append(tid)
    return raised


def lower_process(priority: int) -> None:
    """Python threads of this process on SCHED_FIFO `priority` back to normal scheduling."""
    for thread in threading.enumerate():
        with contextlib.suppress(OSError, TypeError):
            tid = thread.native_id
            if (
                os.sched_getscheduler(tid) == os.SCHED_FIFO
                and os.sched_getparam(tid).sched_priority == priority
            ):
                os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))


def lock_memory() -> tuple[bool, str | None]:
    """mlockall(MCL_CURRENT): (locked, why not). Not MCL_FUTURE: every later allocation would be
    faulted in and locked at once by the thread that makes it, holding the GIL (numpy allocates
    while holding it): the bench measured the cycle's first SYNCs after the bus opened 16-24 ms
    late with it, under 1 ms without."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False, "no C library"
    libc = ctypes.CDLL(name, use_errno=True)
    if libc.mlockall(_MCL_CURRENT) != 0:
        return False, f"mlockall refused: {os.strerror(ctypes.get_errno())}"
    return True, None


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def absolute_sleeper() -> Callable[[float], None]:
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
