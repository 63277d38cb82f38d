"""SIGINT and SIGTERM as a bounded shutdown request (bridge.signal_shutdown), in processes of their own.

Each child installs SignalShutdown as drive_node does, prints "ready", then behaves as the case
says; the test sends real signals and times the child's end (the bounds are the behaviour itself:
a generous margin on a loaded machine, never a speed). ROS-free.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

#: s: the children's shutdown bound (SignalShutdown(bound=...)); the wait allows a loaded machine.
BOUND = 1.0
MARGIN = 10.0

PRELUDE = f"""
import sys, time
from quirobot_control.bridge.signal_shutdown import SignalShutdown
shutdown = SignalShutdown(bound={BOUND}).install()
print("ready", flush=True)
"""

#: The node's loop: spin until asked, then a cleanup of 0.5 s that a second signal must not cut.
ORDERLY = """
while not shutdown.requested.is_set():
    time.sleep(0.01)
print("cleanup", flush=True)
time.sleep(0.5)
print("cleaned up after", " ".join(shutdown.received))  # not flushed: exit() flushes
shutdown.exit(0)
"""

#: A main thread that never looks at the request and swallows every exception (a KeyboardInterrupt
#: lost in a finalizer or a C++ call, a hung cleanup): only the bound ends it.
DEAF = """
while True:
    try:
        time.sleep(0.05)
    except BaseException:
        pass
"""

#: A main thread blocked in one long C call (a join, a wait in DDS): signals cannot run Python
#: code in it; the wakeup descriptor's thread still sees them.
BLOCKED = """
import threading
threading.Event().wait(60.0)
print("never", flush=True)
"""


def child(body: str) -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, "-c", PRELUDE + body], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout.readline().strip() == "ready", process.stderr.read()
    return process


def end_of(process: subprocess.Popen, sent: float) -> tuple[float, str, str]:
    out, err = process.communicate(timeout=BOUND + MARGIN)
    return time.monotonic() - sent, out, err


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_is_a_request_and_a_second_one_does_not_cut_the_cleanup(signum):
    """The loop sees the request and cleans up; SIGTERM 0.1 s later (launch's escalation, or a
    terminal's Ctrl-C and launch's) changes nothing: status 0, what was printed flushed. With
    KeyboardInterrupt the second signal raised inside the cleanup."""
    process = child(ORDERLY)
    sent = time.monotonic()
    process.send_signal(signum)
    time.sleep(0.1)
    process.send_signal(signal.SIGTERM)
    took, out, err = end_of(process, sent)
    assert process.returncode == 0, err
    assert out.split("\n")[1] == f"cleaned up after {signum.name} SIGTERM", out
    assert took < BOUND + MARGIN


@pytest.mark.parametrize("body", [DEAF, BLOCKED], ids=["exceptions swallowed", "blocked in C"])
def test_a_main_thread_that_never_shuts_down_ends_at_the_bound_with_every_stack(body):
    """The process ends at the bound (status 1) with every thread's stack printed, however its
    main thread ignores the request; never before the bound."""
    process = child(body)
    sent = time.monotonic()
    process.send_signal(signal.SIGINT)
    took, out, err = end_of(process, sent)
    assert process.returncode == 1, (process.returncode, err)
    assert BOUND <= took < BOUND + MARGIN, took
    assert "Timeout (0:00:01)!" in err and "most recent call first" in err, err
    assert "never" not in out


#: The node after `released()` (drives stopped, buses closed), in a teardown that blocks in C with
#: the GIL held, as rcl_node_fini inside rclpy's destroy_node did in CI: no Python code runs.
RELEASED_THEN_HELD = """
import ctypes
while not shutdown.requested.is_set():
    time.sleep(0.01)
print("released", shutdown.released(), flush=True)
ctypes.PyDLL(None).sleep(60)  # PyDLL: the GIL stays held for the whole call
print("never", flush=True)
"""


def test_after_released_the_bound_ends_a_teardown_that_holds_the_gil_with_status_0():
    """The deadline is the signal's bound, unchanged; the status is 0 (what the node owned is
    released); every stack is printed before, and shows where the teardown waits."""
    process = child(RELEASED_THEN_HELD)
    sent = time.monotonic()
    process.send_signal(signal.SIGINT)
    took, out, err = end_of(process, sent)
    assert out.split("\n")[0] == "released True", (out, err)
    assert process.returncode == 0, (process.returncode, err)
    assert BOUND - 0.05 <= took < BOUND + MARGIN, took
    assert "Timeout (0:00:00." in err and "most recent call first" in err, err
    assert "never" not in out


def test_the_bound_must_be_positive():
    from quirobot_control.bridge.signal_shutdown import SignalShutdown

    for bound in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="shutdown bound must be a positive number of seconds"):
            SignalShutdown(bound=bound)
