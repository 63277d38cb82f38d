"""SIGINT and SIGTERM as a request to shut down within a bound, never an exception (ROS-free).

A node that turns a signal into KeyboardInterrupt (Python's default, and drive_node before issue
32) has it raised wherever its main thread happens to be: inside a callback, inside rclpy's
executor (a lock held, a task left executing), inside a finalizer or a C++ call that swallows it
(the node runs on as if no signal came), or inside its own cleanup when a second signal follows
the first (launch escalates SIGINT to SIGTERM after 5 s; a terminal's Ctrl-C reaches a launched
node from the terminal and again from launch). drive_node was seen in CI ignoring both SIGINT and
SIGTERM at the end of a launch and being killed: a killed node never stops the drives or releases
the buses itself.

`SignalShutdown` instead:
- installs a handler for each signal that only records it, and the signal module's wakeup file
  descriptor: Python's C-level handler writes the signal's number to it at once, whatever the main
  thread is doing (a C call, a wait), and a thread of its own (`shutdown-signals`) wakes on it;
- on the first signal sets `requested` (the node's loop polls it between spins and then shuts
  down in order: the drives stopped, the buses released, the ROS entities destroyed) and arms the
  bound: faulthandler's watchdog prints every thread's Python stack and ends the process with
  status 1 if it is still alive `bound` s later (a shutdown that hangs, in the node's cleanup or in
  the interpreter's finalization: the drives' own watchdogs stop them when the process is gone);
- ignores the signals after the first (the shutdown in progress goes on; the bound holds);
- `released()`: once the node has stopped the drives and released the buses, what is left is the
  ROS teardown (rclpy's destroy_node, rclpy.shutdown), and the bound's deadline, unchanged, ends
  the process with status 0 instead of 1, the stacks still printed just before. rclpy destroys
  the rcl node with the GIL held, and rcl_node_fini has been seen blocking in the rmw past the
  bound (twice in CI, drive_node's main thread in destroy_node 4.5 s after SIGINT), where no
  Python code can run; so the status 0 comes from a C-level timer (timer_create, SIGEV_THREAD
  calling _exit): a hang there is upstream's and leaves nothing unsafe, and the stacks say where;
- `exit(status)`: once the node has released everything it owns, the process ends at once
  (os._exit, the standard streams flushed) instead of running the interpreter's finalization:
  that only tears down modules and the C++ objects behind them (the DDS participant, its threads)
  a second time, a signal there finds Python's default action back (a launch's SIGTERM killed a
  node that had shut down cleanly: status -15), and a hang there is out of Python's reach.
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import os
import signal
import sys
import threading
import time
from collections.abc import Iterable
from typing import NoReturn

#: s from the first SIGINT or SIGTERM to the end of the process at the latest: below launch's 5 s
#: before it escalates to SIGTERM (launch's sigterm_timeout), so that the node ends on its own.
SHUTDOWN_BOUND = 4.5

#: s before the deadline at which `released()` prints the stacks, so that they are out before the
#: C-level timer's _exit.
DUMP_LEAD = 0.2

__all__ = ["SHUTDOWN_BOUND", "SignalShutdown"]


class SignalShutdown:
    """The process's SIGINT and SIGTERM as a shutdown request (see the module doc)."""

    def __init__(
        self,
        bound: float = SHUTDOWN_BOUND,
        signals: Iterable[signal.Signals] = (signal.SIGINT, signal.SIGTERM),
    ) -> None:
        """`bound`: s from the first signal to the process's end at the latest (> 0)."""
        if not 0.0 < bound < float("inf"):
            raise ValueError(f"shutdown bound must be a positive number of seconds, got {bound!r}")
        self.bound = float(bound)
        self.signals = tuple(signal.Signals(s) for s in signals)
        self.requested = threading.Event()
        self.received: list[str] = []  # the signals' names, in order (the first one shuts down)
        self._lock = threading.Lock()
        self._deadline: float | None = None  # time.monotonic() s at which the bound ends the process

    def install(self) -> SignalShutdown:
        """From the main thread: the handlers, the wakeup descriptor and its thread. Installed
        explicitly, so that a SIGINT its parent ignored (a launch started from a non-interactive
        shell) is not inherited as ignored."""
        read, write = os.pipe()
        os.set_blocking(write, False)  # the C-level handler must never block
        signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        for number in self.signals:
            signal.signal(number, self._on_signal)
        threading.Thread(target=self._watch, args=(read,), name="shutdown-signals", daemon=True).start()
        return self

    def request(self, signum: int) -> None:
        """Record `signum` (its number); the first one sets `requested` and arms the bound."""
        with self._lock:
            self.received.append(signal.Signals(signum).name)
        self.arm()
        self.requested.set()

    def arm(self) -> None:
        """Arm the bound (once: later calls keep the first deadline): `bound` s from now the
        process prints every thread's stack and ends with status 1 if it is still alive. Called
        by the first signal, and by the node on its way out whatever began it (an error too)."""
        with self._lock:
            if self._deadline is not None:
                return
            self._deadline = time.monotonic() + self.bound
        faulthandler.dump_traceback_later(self.bound, exit=True)

    def released(self) -> bool:
        """The node has released everything it owns (the drives stopped, the buses closed): the
        bound (armed now if it was not) keeps its deadline but ends the process with status 0,
        every thread's stack printed DUMP_LEAD s before (module doc). False where no C-level
        timer can be made (not Linux): the bound stays as it was, status 1."""
        self.arm()
        remaining = max(self._deadline - time.monotonic(), DUMP_LEAD + 0.01)
        if not _exit_after(remaining, status=0):
            return False
        faulthandler.dump_traceback_later(remaining - DUMP_LEAD, exit=False)  # replaces the armed one
        return True

    @staticmethod
    def exit(status: int) -> NoReturn:
        """End the process now with `status`, the standard streams (Python's and the C
        library's: ROS's logging writes there) flushed, without the interpreter's finalization
        (module doc)."""
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        with contextlib.suppress(Exception):
            ctypes.CDLL(None).fflush(None)
        os._exit(status)

    def _on_signal(self, signum: int, frame: object) -> None:
        """The Python-level handler (main thread, between two bytecodes): nothing to raise; the
        wakeup descriptor's thread has the signal already."""

    def _watch(self, descriptor: int) -> None:
        """The wakeup descriptor's reader: one byte, the signal's number, per signal."""
        handled = {int(number) for number in self.signals}
        while data := os.read(descriptor, 1):
            if data[0] in handled:
                self.request(data[0])


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


class _SigevThread(ctypes.Structure):
    _fields_ = [("function", ctypes.c_void_p), ("attribute", ctypes.c_void_p)]


class _SigevUnion(ctypes.Union):
    _fields_ = [("pad", ctypes.c_int * 12), ("tid", ctypes.c_int), ("thread", _SigevThread)]


class _Sigevent(ctypes.Structure):
    """Linux's struct sigevent: sigev_value (union sigval, passed to the function), sigev_signo,
    sigev_notify, then the union holding SIGEV_THREAD's function and attributes."""

    _fields_ = [
        ("value", ctypes.c_void_p),
        ("signo", ctypes.c_int),
        ("notify", ctypes.c_int),
        ("un", _SigevUnion),
    ]


_SIGEV_THREAD = 2  # Linux's <signal.h>


def _exit_after(seconds: float, status: int) -> bool:
    """A one-shot POSIX timer that calls the C library's _exit(status) `seconds` from now on a
    thread of the C library's own: no Python code, no GIL (module doc). False if the timer cannot
    be made here."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        create, settime, exit_function = libc.timer_create, libc.timer_settime, libc._exit
    except (OSError, AttributeError):
        return False
    event = _Sigevent(value=status, notify=_SIGEV_THREAD)
    event.un.thread.function = ctypes.cast(exit_function, ctypes.c_void_p)  # void _exit(int status)
    timer = ctypes.c_void_p()
    if create(time.CLOCK_MONOTONIC, ctypes.byref(event), ctypes.byref(timer)) != 0:
        return False
    whole = int(seconds)
    when = _Itimerspec(it_value=_Timespec(whole, int((seconds - whole) * 1e9)))
    return settime(timer, 0, ctypes.byref(when), None) == 0
