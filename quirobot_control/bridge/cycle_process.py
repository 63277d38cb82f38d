"""The real drives' cycle in a process of its own (issue 32 item 1), as EtherCAT masters and
ros2_canopen keep their bus loop away from the application: nothing the ROS side does (a
callback, an import, a garbage collection, the GIL held by the executor) shares an interpreter
with the bus cycle.

`start_cycle_process(spec)` starts `python -m quirobot_control.bridge.cycle_child` (a fresh
interpreter: no rclpy, no DDS threads inherited), which runs `drive_cycle.start_canopen_cycle`
(SYNC, heartbeat, setpoints and feedback on an absolute deadline schedule, SCHED_FIFO and
mlockall where granted, its report at start) and serves it over two pipes:

- parent -> child, commands (bridge.command_pipe): a pipe of their own, written by the thread
  that posts the command (drive_node's subscription callback: one non-blocking write, never a
  wait) and read by the cycle thread itself at the start of each period (latest wins, as the
  cycle's in-process mailbox): no thread between them to wake.
- parent -> child (the child's stdin): requests (enable, disable, home, acknowledge_stop, status,
  set_drilling_context, close), each answered once. The child's main thread reads them and runs
  them (`DriveCycle.exclusive` for the ones that talk to the drives) and never touches the bus
  itself.
- child -> parent (the child's stdout): the news of each period (`CycleNews`: the latest joint
  state, the bridge's new events and safety messages, the cycle's messages and the drives' state
  key), written by a reporter thread of the child that reads the cycle's immutable `latest`; the
  cycle thread itself never writes a pipe. A reader thread here keeps the news (`latest`, ...).
  The child's stderr is the parent's: its start-up and errors reach drive_node's log.

Supervision, both ways:
- the child dies (a crash, SIGKILL): its SYNCs and heartbeats stop, so every drive stops itself on
  its watchdogs (canopen.sync_loss_periods, drive.master_timeout); the reader sees the pipe close
  and `latest` carries the stop ("drive cycle process ended: exit code N"), which drive_node
  publishes as the drives' stop;
- the parent dies (drive_node crashed or was killed): the child reads the end of its stdin and
  closes the bridge (every drive stopped, the buses released), then exits.

Pickle over the pipes: the two processes are the same installation (the child is started with
this interpreter and path), never a network peer.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import itertools
import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Sequence
from multiprocessing.connection import Connection
from types import SimpleNamespace

from quirobot_control.bridge.backend import DriveStartupError
from quirobot_control.bridge.command_pipe import CommandWriter, command_pipe
from quirobot_control.bridge.cycle_exchange import CycleOutput
from quirobot_control.bridge.cycle_messages import (
    REQUESTS,
    CycleFailure,
    CycleNews,
    CycleReply,
    CycleSpec,
    CycleUp,
    DrivesStateKey,
)
from quirobot_control.bridge.drive_bridge import BridgeError, DrivesStatus
from quirobot_control.hardware.hardware_info import HardwareError
from quirobot_control.safety.stop_codes import StopCode
from quirobot_description.sourced_yaml import one_line

__all__ = ["CycleNews", "CycleProcess", "CycleSpec", "DrivesStateKey", "RemoteBridge", "start_cycle_process"]

#: SCHED_FIFO priority of drive_node's own Python threads with real drives (nodes.drive_node's
#: _start_real_cycle says why): below the child's (CycleSettings.priority 50, process_priority
#: 40), above every ordinary process.
ROS_SIDE_PRIORITY = 30
#: s the parent waits for the child's start-up (the drives enabled by SDO over the bus, the
#: imports of a fresh interpreter: seconds on a loaded machine).
START_TIMEOUT = 60.0


class CycleProcess:
    """The parent's side of the cycle process (module doc). Made by start_cycle_process."""

    def __init__(
        self,
        child: subprocess.Popen,
        up: CycleUp,
        send: Connection,
        receive: Connection,
        commands: CommandWriter,
    ) -> None:
        self.child = child
        self.report_text, self.names, self.hardware_name = up.report, up.names, up.hardware_name
        self.latest: CycleOutput | None = None
        self.messages: collections.deque[str] = collections.deque(maxlen=1000)
        self.events: list[str] = []  # every event of the bridge so far
        self.safety: collections.deque[str] = collections.deque(maxlen=1000)
        self.safety_total = 0  # safety messages received so far
        self.state: DrivesStateKey | None = None  # the drives' state
        self.status: DrivesStatus | None = None  # the bridge's latest status the child sent
        self.ended: str | None = None  # why the child ended, once it has
        self._lost: str | None = None  # the stop that its ending was (`lost`)
        self.bridge = RemoteBridge(self)
        self.problems: list[str] | None = None  # what closing the child met (stop())
        self._send, self._receive = send, receive
        self._send_lock = threading.Lock()
        self.commands = commands  # the command pipe's write end (posted, dropped)
        self._numbers = itertools.count(1)
        self._replies: dict[int, tuple[threading.Event, list]] = {}
        self._closing = False
        self._reader = threading.Thread(target=self._read, name="drive-cycle-reader", daemon=True)
        self._reader.start()

    # --- the ROS side -----------------------------------------------------------------------------
    def post_command(
        self, names: Sequence[str], position: Sequence[float], velocity: Sequence[float] = (), *, now: float
    ) -> None:
        """A JointState command received at `now` (s, time.monotonic: both processes read the same
        CLOCK_MONOTONIC) for the cycle; never blocks (latest wins; a full pipe drops it and counts
        it in commands.dropped). BridgeError for a command too large for one record."""
        try:
            self.commands.post(names, position, velocity, now)
        except ValueError as error:
            raise BridgeError(str(error)) from None

    def request(self, name: str, *args: object, timeout: float = 5.0) -> object:
        """Run the bridge's `name(*args)` in the child (module doc); its result, or its error
        raised here as its own kind where that is one of _ERRORS', else as a BridgeError; a
        TimeoutError after `timeout` s (wall clock) without an answer."""
        if name not in REQUESTS:
            raise ValueError(f"unknown drive cycle request {name!r}: one of {', '.join(REQUESTS)}")
        if self.ended is not None:
            raise BridgeError(f"the drive cycle process has ended: {self.ended}")
        number = next(self._numbers)
        done, answer = threading.Event(), []
        self._replies[number] = (done, answer)
        try:
            self._write(("request", number, name, args))
            if not done.wait(timeout):
                raise TimeoutError(f"the drive cycle process did not answer {name} within {timeout} s")
        finally:
            self._replies.pop(number, None)
        reply = answer[0]
        if reply.error is not None:
            raise _error(reply.error)
        return reply.result

    @property
    def running(self) -> bool:
        return self.ended is None and self.child.poll() is None

    @property
    def lost(self) -> str | None:
        """Why the drives stopped without a close (the child ended on its own), else None."""
        return None if self.ended is None or self._closing else self._lost

    def stop(self, timeout: float = 5.0) -> None:
        """Close the child (`close`) once; its problems in `problems`."""
        if self.problems is None:
            self.problems = self.close(timeout)

    def close(self, timeout: float = 5.0) -> list[str]:
        """Close the bridge in the child (every drive stopped, the buses released) and end it;
        the problems the close met. Kills the child if it does not end within `timeout` s."""
        problems: list[str] = []
        self._closing = True
        if self.running:
            try:
                problems = list(self.request("close", timeout=timeout))
            except (BridgeError, TimeoutError) as error:
                problems.append(f"drive cycle process: {one_line(error)}")
        with contextlib.suppress(OSError):
            self._send.close()  # the child reads the end of its input (if it still runs)
        try:
            self.child.wait(timeout)
        except subprocess.TimeoutExpired:
            self.child.kill()
            self.child.wait()
            problems.append(f"drive cycle process killed: it did not end within {timeout} s")
        self.commands.close()
        return problems

    # --- the threads --------------------------------------------------------------------------
    def _write(self, item: object) -> None:
        with self._send_lock:
            try:
                self._send.send(item)
            except (OSError, ValueError) as error:  # the child has gone (or we closed the pipe)
                raise BridgeError(f"the drive cycle process does not listen: {one_line(error)}") from None

    def _read(self) -> None:
        try:
            while True:
                item = self._receive.recv()
                if isinstance(item, CycleNews):
                    self._take(item)
                elif isinstance(item, CycleReply):
                    waiter = self._replies.get(item.number)
                    if waiter is not None:
                        waiter[1].append(item)
                        waiter[0].set()
        except (EOFError, OSError):
            pass
        code = self.child.wait()
        ended = "closed" if self._closing and code == 0 else f"exit code {code}"
        if not self._closing:  # `lost` first: whoever sees `ended` sees the stop too
            self._lost = f"drive cycle process ended: {ended}; the drives stop on their watchdogs"
        self.ended = ended
        for done, answer in list(self._replies.values()):
            answer.append(
                CycleReply(
                    0, error=CycleFailure("BridgeError", f"the drive cycle process ended ({self.ended})")
                )
            )
            done.set()
        if self._lost is not None:  # the drives stopped themselves on their watchdogs (module doc)
            reason = self._lost
            self.messages.append(reason)
            previous = self.latest
            if previous is not None:
                sample = dataclasses.replace(previous.sample, stop_reason=reason)
                self.latest = CycleOutput(previous.cycle + 1, sample)

    def _take(self, news: CycleNews) -> None:
        self.events.extend(news.events)
        self.safety.extend(news.safety)
        self.safety_total += len(news.safety)
        self.messages.extend(news.messages)
        if news.state is not None:
            self.state = news.state
        if news.status is not None:
            self.status = news.status
        if news.latest is not None:
            self.latest = news.latest


class RemoteBridge:
    """The drive bridge in the child as drive_node reads and drives it from here: its reads are the
    child's latest news (events, safety messages, the drives' state), its lifecycle, status and
    drilling-context calls are requests the child runs (module doc)."""

    def __init__(self, process: CycleProcess) -> None:
        self._process = process
        self.names = process.names
        self.info = SimpleNamespace(name=process.hardware_name)
        self.hardware = _RemoteHardware(process)
        self.hole = _RemoteHole(process)

    @property
    def events(self) -> list[str]:
        return self._process.events

    @property
    def breakthrough(self) -> str | None:
        state = self._process.state
        return state.breakthrough if state is not None else None

    @property
    def started(self) -> bool:
        state = self._process.state
        return bool(state is not None and state.started)

    @property
    def hole_refused(self) -> tuple[str, str] | None:
        state = self._process.state
        return state.hole_refused if state is not None else None

    def enable(self, now: float) -> str:
        return self._process.request("enable", now)

    def disable(self) -> str:
        return self._process.request("disable")

    def home(self) -> str:
        return self._process.request("home")

    def acknowledge_stop(self, note: str) -> str:
        return self._process.request("acknowledge_stop", note)

    def set_drilling_context(self, goal_id: str, context: object) -> str:
        return self._process.request("set_drilling_context", goal_id, context)

    def status(self) -> DrivesStatus:
        """The child's status now; once it has ended on its own, its last status with the drives
        inactive and the stop (they stopped on their watchdogs)."""
        process = self._process
        lost = process.lost
        if lost is None:
            return process.request("status")
        if process.status is None:
            raise BridgeError(lost)
        return dataclasses.replace(
            process.status,
            lifecycle="inactive",
            stop_reason=lost,
            stop_code=StopCode.CYCLE_LOST,
            commanded=False,
        )

    def close(self) -> list[str]:
        self._process.stop()
        return list(self._process.problems or [])


class _RemoteHardware:
    """The hardware component's lifecycle, latched stop and safety log, from the child's news."""

    def __init__(self, process: CycleProcess) -> None:
        self._process = process
        self.log = _RemoteLog(process)

    @property
    def lifecycle(self) -> str:
        state = self._process.state
        return "inactive" if self._process.lost or state is None else state.lifecycle

    @property
    def stop_reason(self) -> str | None:
        lost, state = self._process.lost, self._process.state
        return lost or (state.stop_reason if state is not None else None)


class _RemoteLog:
    """The safety layer's bounded log as received (`messages`), and how many fell out of it."""

    def __init__(self, process: CycleProcess) -> None:
        self._process = process

    @property
    def messages(self) -> collections.deque[str]:
        return self._process.safety

    @property
    def dropped(self) -> int:
        return self._process.safety_total - len(self._process.safety)


class _RemoteHole:
    """The hole in force, as far as drive_node reads it: its goal."""

    def __init__(self, process: CycleProcess) -> None:
        self._process = process

    @property
    def context(self) -> SimpleNamespace | None:
        state = self._process.state
        goal = state.hole_goal_id if state is not None else None
        return SimpleNamespace(goal_id=goal) if goal is not None else None


#: The errors the child's are raised as here, in their own words; another kind is a BridgeError.
_ERRORS = {
    kind.__name__: kind
    for kind in (BridgeError, DriveStartupError, HardwareError, OSError, TimeoutError, ValueError)
}


def _error(failed: CycleFailure) -> Exception:
    kind = _ERRORS.get(failed.kind)
    return kind(failed.text) if kind is not None else BridgeError(f"{failed.kind}: {failed.text}")


def start_cycle_process(spec: CycleSpec, timeout: float = START_TIMEOUT) -> CycleProcess:
    """Start the child (module doc) and wait for its drives; raises BridgeError with the child's
    own error (a bus that does not open, a drive that does not enable) if it cannot start."""
    command_read, command_write = command_pipe()
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", "quirobot_control.bridge.cycle_child"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
            pass_fds=(command_read,),
        )
    except BaseException:
        os.close(command_write)
        raise
    finally:
        os.close(command_read)  # the child's now
    commands = CommandWriter(command_write)
    spec = dataclasses.replace(spec, command_fd=command_read)
    send, receive = Connection(os.dup(child.stdin.fileno())), Connection(os.dup(child.stdout.fileno()))
    child.stdin.close()
    child.stdout.close()
    try:
        send.send_bytes(pickle.dumps(spec))
        if not receive.poll(timeout):
            raise BridgeError(f"the drive cycle process did not start within {timeout} s")
        answer = receive.recv()
    except (EOFError, OSError) as error:
        code = child.wait()
        commands.close()
        raise BridgeError(f"the drive cycle process ended at start-up (exit code {code}): {error}") from None
    except BaseException:
        child.kill()
        child.wait()
        commands.close()
        raise
    if isinstance(answer, CycleFailure):
        child.wait()
        commands.close()
        raise _error(answer)
    return CycleProcess(child, answer, send, receive, commands)
