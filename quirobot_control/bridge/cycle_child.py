"""The drive cycle process itself (bridge.cycle_process's module doc): `python -m
quirobot_control.bridge.cycle_child`, started by `start_cycle_process`, reads its CycleSpec on
stdin, runs `drive_cycle.start_canopen_cycle`, then serves drive_node over its stdin and stdout
until drive_node closes it or goes.
"""

from __future__ import annotations

import math
import os
import pickle
import signal
import sys
import threading
from multiprocessing.connection import Connection

import numpy as np

from quirobot_control.bridge.command_pipe import CommandReader
from quirobot_control.bridge.cycle_messages import (
    EXCLUSIVE_REQUESTS,
    CycleFailure,
    CycleNews,
    CycleReply,
    CycleSpec,
    CycleUp,
    DrivesStateKey,
)
from quirobot_control.bridge.drive_bridge import BridgeError, DrivesStatus
from quirobot_description.sourced_yaml import one_line

__all__ = ["cycle_timing", "main"]


class _Reporter:
    """The child's news (CycleNews) each period, from a thread of its own (module doc)."""

    def __init__(self, cycle, send: Connection, lock: threading.Lock) -> None:
        self.cycle, self.send, self.lock = cycle, send, lock
        self.events = self.safety = 0
        self.published = -1
        self.state: tuple | None = None
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(self.cycle.period):
            news = self.news()
            if news is not None:
                try:
                    with self.lock:
                        self.send.send(news)
                except OSError:  # the parent has gone: the main thread stops the drives
                    return

    def news(self) -> CycleNews | None:
        cycle, bridge = self.cycle, self.cycle.bridge
        latest = cycle.latest
        if latest is not None and latest.cycle == self.published:
            latest = None
        elif latest is not None:
            self.published = latest.cycle
        events = tuple(bridge.events[self.events :])
        self.events += len(events)
        log = bridge.hardware.log
        total = len(log.messages) + log.dropped
        new = min(total - self.safety, len(log.messages))
        safety = tuple(list(log.messages)[len(log.messages) - new :]) if new > 0 else ()
        self.safety = total
        messages = []
        while cycle.messages:
            messages.append(cycle.messages.popleft())
        hole = bridge.hole.context
        state = DrivesStateKey(
            bridge.hardware.lifecycle.value,
            bridge.hardware.stop_reason,
            bridge.breakthrough,
            bridge.started,
            hole and hole.goal_id,
            bridge.hole_refused,
        )
        changed, status = (state, self.read_status()) if state != self.state else (None, None)
        self.state = state
        if latest is None and not events and not safety and not messages and changed is None:
            return None
        return CycleNews(latest, events, safety, tuple(messages), changed, status)

    def read_status(self) -> DrivesStatus | None:
        """The bridge's status, read by the cycle thread after a step (None: it did not answer)."""
        try:
            return self.cycle.call(lambda bridge: bridge.status())
        except (BridgeError, TimeoutError):
            return None


def _serve(receive: Connection, send: Connection) -> int:
    """The child's main thread: start the cycle, then serve the parent until it closes or goes."""
    from quirobot_control.bridge.drive_cycle import start_canopen_cycle

    spec: CycleSpec = pickle.loads(receive.recv_bytes())
    from canopen.sdo.client import SdoClient

    if spec.sdo_response_timeout is not None:
        SdoClient.RESPONSE_TIMEOUT = spec.sdo_response_timeout
    if spec.sdo_attempts is not None:
        SdoClient.MAX_RETRIES = spec.sdo_attempts
    try:
        commands = None if spec.command_fd is None else CommandReader(spec.command_fd)
        cycle = start_canopen_cycle(
            spec.params,
            spec.control,
            spec.robot_description,
            can=spec.can,
            settings=spec.settings,
            commands=commands,
        )
    except Exception as error:  # noqa: BLE001  (the parent raises it, in its words)
        send.send(CycleFailure(type(error).__name__, one_line(error)))
        return 1
    bridge = cycle.bridge
    lock = threading.Lock()
    send.send(CycleUp(cycle.report.describe(), tuple(bridge.names), bridge.info.name))
    reporter = _Reporter(cycle, send, lock)
    thread = threading.Thread(target=reporter.run, name="drive-cycle-reporter", daemon=True)
    thread.start()
    try:
        while True:
            try:
                item = receive.recv()
            except (EOFError, OSError):  # the parent has gone: stop the drives (module doc)
                print("drive cycle process: drive_node has gone; stopping every drive", file=sys.stderr)
                break
            _, number, name, args = item
            reply = _answer(cycle, number, name, args)
            with lock:
                send.send(reply)
            if name == "close":
                return 0
    finally:
        reporter.stop.set()
        thread.join(1.0)
        if cycle.running:
            cycle.stop()
            for problem in bridge.close():
                print(f"drive cycle process: shutdown: {problem}", file=sys.stderr)
    return 0


def cycle_timing(stats, since: int = 0) -> dict[str, float]:
    """The cycle's timing from its cycle `since` on (CycleStats): cycles run, deadlines skipped, the
    worst lateness and the widest gap between SYNCs (s)."""
    lateness = stats.window(stats.lateness, since)
    syncs = stats.window(stats.sync, since)
    syncs = syncs[np.isfinite(syncs)]
    return {
        "cycles": float(stats.cycles),
        "skipped": float(stats.skipped),
        "lateness_max": float(np.nanmax(lateness)) if len(lateness) else math.nan,
        "sync_gap_max": float(np.max(np.diff(syncs))) if len(syncs) > 1 else math.nan,
    }


def _answer(cycle, number: int, name: str, args: tuple) -> CycleReply:
    """Request `number`, `name(*args)`, run against the cycle's bridge (module doc): its reply."""
    try:
        if name in EXCLUSIVE_REQUESTS:
            result = cycle.exclusive(lambda bridge: getattr(bridge, name)(*args))
        elif name == "status":
            result = cycle.call(lambda bridge: bridge.status())
        elif name == "set_drilling_context":
            result = cycle.bridge.set_drilling_context(*args)
        elif name == "timing":
            result = cycle_timing(cycle.stats, *args)
        elif name == "stats":  # every ring (a bench's, once: CycleSettings.stats_capacity cycles)
            result = cycle.stats
        elif name == "close":
            cycle.stop()
            result = cycle.bridge.close()
        else:
            raise ValueError(f"unknown request {name!r}")
        return CycleReply(number, result)
    except Exception as error:  # noqa: BLE001  (the parent raises it)
        return CycleReply(number, error=CycleFailure(type(error).__name__, one_line(error)))


def main() -> int:
    # The pipes are the process's stdin and stdout; from here on, whatever anything prints (Python
    # or a C library, on file descriptor 1) goes to stderr, never into the pipe.
    receive, send = Connection(os.dup(0)), Connection(os.dup(1))
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    # Ctrl-C in a terminal reaches the whole process group: the parent ends the child (close), or
    # its going does (the end of stdin). SIGTERM ends it as that does: the drives stopped first.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        return _serve(receive, send)
    except BrokenPipeError:  # the parent went while the child wrote to it
        return 0


if __name__ == "__main__":
    sys.exit(main())
