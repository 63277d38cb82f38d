"""The real drives' control cycle in its own thread, on an absolute deadline schedule.

`DriveCycle` runs `DriveBridge.step` (SYNC, heartbeat, RPDO setpoints, TPDO feedback, the
safety layer) every control period in a thread of its own, as ros2_control_node runs its update
loop and ros2_canopen its lely event loop: the ROS executor (subscriptions, services,
diagnostics, a slow callback, Python's garbage collector triggered there) never delays a SYNC.
Each drive quick-stops itself after canopen.sync_loss_periods missed SYNCs or a missed master
heartbeat (docs/canopen.md): right for a dead host, wrong for a busy one.

Schedule: absolute deadlines `start + k * period` on CLOCK_MONOTONIC (bridge.cycle_realtime's
`absolute_sleeper`); a cycle more than one period late skips the missed deadlines (counted in
`CycleStats.skipped`) instead of running a burst.

Crossing from ROS (any other thread) to the cycle, nothing that makes the cycle wait:
- commands: `post_command(names, position, velocity, now)` into `CommandMailbox`, one slot under
  one lock held for a tuple swap (latest wins: the joint_state_topic plugin sends the whole
  command every controller cycle); the cycle takes it at the start of its period;
- the state back: `latest` is the last `CycleOutput` (an immutable snapshot, replaced by one
  reference assignment, so a reader never sees half a cycle);
- anything else that touches the drives (enable, disable, acknowledge a stop, home, the drives'
  status, and bringing the hardware component up at start): `exclusive(function)` runs
  `function(bridge)` in the caller's thread while the cycle keeps the bus alive without stepping
  the bridge (keep-alive: SYNC and heartbeat only, `CanopenBackend.keep_alive`; the drives hold
  their last setpoints). The caller waits (at most a period) for the cycle to reach a period
  boundary and switch; the cycle never waits for the caller. Enabling the drives takes a dozen
  SDO round trips: in the rclpy timer (and in any single loop) no SYNC went out meanwhile, and
  a drive that watches SYNC loss stopped itself during its own enabling (bench/drive_loop.py
  showed it on the simulated drives in another process).
- a cheap read of the bridge (its status for /diagnostics, its new events for the log):
  `call(function)` runs `function(bridge)` in the cycle thread after a period's step and hands
  the result back (the caller waits, at most a period or two);
- messages (a refused command, an error of a request, an error in the cycle) go to `messages`,
  a deque the ROS side drains.

An error in the cycle (any exception of a period: the bridge's step, a command, the keep-alive,
a call it serves) quick-stops every drive at once, with the error as the reason
(`_stop_drives`): the hardware component's stop (every drive, latched, the reason in each sample's
`stop_reason` and in the bridge's status, which drive_node logs and publishes) when the cycle
owns the bridge; while a caller holds it (`exclusive`) or before it is open, every drive of the
backend directly, and the hardware latches the reason at the next period the cycle owns. The
cycle then goes on (SYNC, heartbeat, feedback: the drives' statuswords confirm their stop, the
joint states stay measured; a step that failed before its SYNC is replaced by a keep-alive
period); an error repeated every period is reported once (`errors` counts them). Before, the
cycle logged the error and went on with the drives enabled: the SYNCs fed their watchdogs and
nothing stopped them.

Garbage collection (`gc_policy`): "auto" is Python's default (a generation-0 collection every
~700 container allocations, in whichever thread allocates: sometimes this one); "freeze"
(default) moves everything allocated at start-up into the permanent generation
(gc.freeze), so a collection scans only what was made since; "manual" freezes, disables the
automatic collector and runs gc.collect(0) in the cycle thread after a cycle that left at least
`gc_slack` s to its next deadline (gc.collect(2) every `full_collection_period` s: nothing piles
up); bench/drive_loop.py measures the three.

Real time, where the OS grants it (SCHED_FIFO for the cycle, the TPDO receivers and the
process's other Python threads, locked memory, a short GIL switch interval; reported at start as
a `RealtimeReport`, never required): bridge.cycle_realtime says what and why. The settings and
the data crossing between the ROS side and the cycle (`CycleSettings`, `CommandMailbox`,
`CycleOutput`, `CycleStats`): bridge.cycle_exchange.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import gc
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence

from quirobot_control.bridge.backend import DriveBackend
from quirobot_control.bridge.canopen_backend import CanBusConfig, CanopenBackend
from quirobot_control.bridge.cycle_exchange import (
    CommandMailbox,
    CommandSource,
    CycleOutput,
    CycleSettings,
    CycleStats,
)
from quirobot_control.bridge.cycle_realtime import (
    RealtimeReport,
    absolute_sleeper,
    lock_memory,
    lower_process,
    raise_process,
)
from quirobot_control.bridge.drive_bridge import BridgeError, DriveBridge, JointStateSample
from quirobot_control.hardware.control_config import ControlConfig
from quirobot_control.hardware.hardware_info import hardware_info_from_urdf
from quirobot_control.safety.stop_codes import StopCode
from quirobot_description.parameters import RobotParameters
from quirobot_description.sourced_yaml import one_line

__all__ = ["DriveCycle", "start_canopen_cycle"]


class _Call:
    """A function for the cycle thread, and its result or exception (`DriveCycle.call`)."""

    __slots__ = ("done", "error", "function", "result")

    def __init__(self, function: Callable[[DriveBridge], object]) -> None:
        self.function = function
        self.done = threading.Event()
        self.result: object = None
        self.error: BaseException | None = None

    def serve(self, bridge: DriveBridge) -> None:
        try:
            self.result = self.function(bridge)
        except Exception as error:  # noqa: BLE001  (handed back to the caller)
            self.error = error
        self.done.set()


class DriveCycle:
    """A control period's thread: the keep-alive of a backend's bus, and the steps of a
    DriveBridge once one is open (see the module doc).

    `start()` starts the thread (it idles until a backend is attached; real time comes with
    `go_realtime()`, memory locking with `lock_memory()`); `open_bridge(factory)`
    runs `factory` exclusively: it opens the backend (its first SYNC), `attach`es it (from the
    next period the cycle keeps its bus alive) and builds the bridge on it (the drives enabled by
    SDO); then the cycle steps the bridge. It owns the bridge while it runs: other threads reach
    it only through `post_command`, `exclusive` and `latest`. `stop()` ends the thread; closing the
    bridge (or the backend) is the owner's, after it. The clock of the deadlines and of every
    `now` is time.monotonic (CLOCK_MONOTONIC), s.
    """

    def __init__(
        self, period: float, settings: CycleSettings | None = None, commands: CommandSource | None = None
    ) -> None:
        """`period`: the control period, s; `commands`: where the cycle takes its commands from
        (default a CommandMailbox that `post_command` fills; the cycle process's child: its
        command pipe, bridge.command_pipe.CommandReader)."""
        if not 0.0 < period < math.inf:
            raise ValueError(f"control period must be > 0 s, got {period!r}")
        self.backend: DriveBackend | None = None
        self.bridge: DriveBridge | None = None
        self.settings = settings or CycleSettings()
        self.period = float(period)
        self.clock = time.monotonic
        self.mailbox: CommandSource = CommandMailbox() if commands is None else commands
        self.stats = CycleStats(self.settings.stats_capacity)
        self.messages: collections.deque[str] = collections.deque(maxlen=1000)
        self.latest: CycleOutput | None = None
        self.errors = 0  # exceptions in the cycle (each one stopped every drive: _stop_drives)
        self.report: RealtimeReport | None = None
        self._stop = threading.Event()
        self._started = threading.Event()
        self._pause = False  # a caller wants the bridge (exclusive): keep-alive only
        self._paused = threading.Event()  # the cycle has seen _pause at a period boundary
        self._exclusive = threading.Lock()  # one exclusive caller at a time (callers only)
        self._thread = threading.Thread(target=self._run, name="drive-cycle", daemon=True)
        self._stall = 0.0  # s: a test's stall of the cycle thread (stall())
        self._sleep_until = absolute_sleeper()
        self._keep_alive: Callable[[], None] | None = None
        self._syncs: int | None = None
        self._flushes: int | None = None
        self._command_posted = math.nan  # when the command not yet transmitted was posted (s)
        # The start of the last period that ran no command (paused for an exclusive call, the
        # drives stopped or disabled): a command posted before it waited for the drives, not for
        # the cycle (CycleStats.command_to_rpdo).
        self._idle_since = -math.inf
        self._raised: list[int] = []  # threads raised to process_priority (lowered by stop())
        self._calls: collections.deque[_Call] = collections.deque()
        self._receive_threads: tuple[threading.Thread, ...] = ()
        self._switch_interval: float | None = None  # the interpreter's, restored by stop()
        self._last_error: str | None = None  # the last error's reason (reported once while repeated)
        self._unlatched: str | None = None  # a stop reason the hardware has yet to latch (_stop_drives)
        self._counted: int | None = None  # the backend's period count before this period's step

    # --- the ROS side ---------------------------------------------------------------------------
    def start(self, timeout: float = 5.0) -> RealtimeReport:
        """Start the thread (keep-alive until a bridge is attached); what the OS granted."""
        self._thread.start()
        if not self._started.wait(timeout):
            raise RuntimeError(f"the drive cycle thread did not start within {timeout} s")
        assert self.report is not None
        return self.report

    def attach(self, backend: DriveBackend, receive_threads: Iterable[threading.Thread] = ()) -> None:
        """Keep `backend`'s bus alive from the next period on (inside `exclusive`, or before any
        bridge); `receive_threads` (its TPDO receivers) go to SCHED_FIFO receive_priority with
        go_realtime()."""
        self.backend = backend
        self._syncs = getattr(backend, "syncs", None)
        self._flushes = getattr(backend, "flushes", None)
        self._keep_alive = getattr(backend, "keep_alive", None)
        self._receive_threads = tuple(receive_threads)

    def go_realtime(self) -> RealtimeReport:
        """SCHED_FIFO now (settings.priority; from any thread): the cycle thread at `priority`, the
        attached backend's TPDO receivers at `receive_priority`, every other thread of the process at
        `process_priority`; the report. Called once the bridge is up (start_canopen_cycle): with
        real-time threads in the process, the start-up's SDO round trips took up to 0.8 s on this
        loaded 2-core machine (GIL hand-offs between real-time and normal threads), without them
        under 15 ms (bench/drive_loop.py's development)."""
        settings, report = self.settings, self.report
        if not settings.priority or report is None or report.priority:
            return report
        tid = self._thread.native_id
        try:
            os.sched_setscheduler(tid, os.SCHED_FIFO, os.sched_param(settings.priority))
        except (OSError, AttributeError, TypeError) as error:
            self.report = dataclasses.replace(report, priority_error=f"SCHED_FIFO refused: {error}")
            return self.report
        raised = 0
        for thread in self._receive_threads if 0 < settings.receive_priority < settings.priority else ():
            with contextlib.suppress(OSError, TypeError):
                os.sched_setscheduler(
                    thread.native_id, os.SCHED_FIFO, os.sched_param(settings.receive_priority)
                )
                raised += 1
        if 0 < settings.process_priority < settings.priority:
            self._raised = raise_process(settings.process_priority, skip=tid)
        self.report = dataclasses.replace(
            report, priority=settings.priority, priority_error=None, receive_threads=raised
        )
        return self.report

    def receive_in_cycle(self) -> RealtimeReport:
        """From now on the cycle thread reads the attached backend's buses itself (settings
        .receive_in_cycle; the backend's `receive_in_cycle`, run exclusively so that no two
        threads read a bus at once); the report says who reads them."""
        receive = getattr(self.backend, "receive_in_cycle", None)
        if not self.settings.receive_in_cycle or self.report is None:
            return self.report
        error = "the backend has no polled reception" if receive is None else None
        if receive is not None:
            error = self.exclusive(lambda _: receive(self._thread.ident))
        if error is None:
            self._receive_threads = ()
        self.report = dataclasses.replace(self.report, receive_in_cycle=error is None, receive_error=error)
        return self.report

    def lock_memory(self) -> RealtimeReport:
        """mlockall(MCL_CURRENT) now (settings.lock_memory), from the calling thread: the syscall
        releases the GIL, so the cycle runs on while the pages are faulted in; the report."""
        if self.settings.lock_memory and self.report is not None:
            locked, error = lock_memory()
            self.report = dataclasses.replace(self.report, memory_locked=locked, memory_error=error)
        return self.report

    def open_bridge(self, factory: Callable[[], DriveBridge], timeout: float = 5.0) -> DriveBridge:
        """Build the bridge with `factory()` (in this thread, exclusively: `factory` attaches its
        backend), then step it."""

        def build(_: DriveBridge | None) -> DriveBridge:
            bridge = factory()
            if self.settings.gc_policy in ("freeze", "manual"):
                gc.freeze()  # the bridge's long-lived objects too (O(1): a list splice)
            return bridge

        bridge = self.exclusive(build, timeout)
        assert isinstance(bridge, DriveBridge)
        self.bridge = bridge
        return bridge

    def post_command(
        self, names: Sequence[str], position: Sequence[float], velocity: Sequence[float] = (), *, now: float
    ) -> None:
        """A JointState command received at `now` (s, time.monotonic): the cycle takes the latest
        at the start of its next stepping period (DriveBridge.command there)."""
        if not isinstance(self.mailbox, CommandMailbox):
            source = type(self.mailbox).__name__
            raise TypeError(f"this cycle takes its commands from its {source}, not from post_command")
        self.mailbox.post(names, position, velocity, now)

    def exclusive(self, function: Callable[[DriveBridge | None], object], timeout: float = 5.0) -> object:
        """`function(bridge)` in this thread while the cycle only keeps the bus alive; its result
        (its exception is raised here). Waits at most `timeout` s for the cycle to switch.
        """
        with self._exclusive:
            if not self.running:
                raise BridgeError("the drive cycle is not running")
            self._paused.clear()
            self._pause = True
            try:
                if not self._paused.wait(timeout):
                    raise TimeoutError(f"the drive cycle did not reach a period boundary within {timeout} s")
                return function(self.bridge)
            finally:
                self._pause = False

    def call(self, function: Callable[[DriveBridge], object], timeout: float = 1.0) -> object:
        """`function(bridge)` run by the cycle thread after its next step (keep it short: a read);
        its result, or its exception raised here. TimeoutError after `timeout` s (wall clock)."""
        if not self.running or self.bridge is None:
            raise BridgeError("the drive cycle is not stepping a bridge")
        request = _Call(function)
        self._calls.append(request)
        if not request.done.wait(timeout):
            raise TimeoutError(f"the drive cycle did not serve the call within {timeout} s")
        if request.error is not None:
            raise request.error
        return request.result

    @property
    def running(self) -> bool:
        return self._thread.is_alive() and not self._stop.is_set()

    def stop(self, timeout: float = 2.0) -> None:
        """End the thread (after its current period); the bridge stays open (close it after)."""
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)
        if self.settings.gc_policy == "manual":
            gc.enable()
        for request in list(self._calls):
            request.error = BridgeError("the drive cycle stopped before serving the call")
            request.done.set()
        self._calls.clear()
        if self._switch_interval is not None:
            sys.setswitchinterval(self._switch_interval)
            self._switch_interval = None
        if self._raised:  # the process back to normal scheduling (the thread's own ended with it)
            self._raised = []
            lower_process(self.settings.process_priority)

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
            stats.sync[k] = stats.command_to_rpdo[k] = stats.active[k] = math.nan
            try:
                if self._pause or self.bridge is None:
                    self._idle_since = begin
                    if self._pause:
                        self._paused.set()
                    if self._keep_alive is not None:
                        self._keep_alive()
                    self._record_bus(k)
                else:
                    self._counted = getattr(self.backend, "cycles", None)  # the backend's periods so far
                    self._cycle(begin, k)
            except Exception as error:  # noqa: BLE001  (any error in the cycle stops every drive)
                try:
                    self._stop_drives(error, k)
                except Exception as failure:  # noqa: BLE001  (last resort: silence, the drives' watchdogs)
                    self.messages.append(f"drive cycle ended: its stop failed: {one_line(failure)}")
                    self._stop.set()
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
        bridge, stats = self.bridge, self.stats
        if self._unlatched is not None:  # an error while the cycle did not own the bridge
            bridge.hardware.stop(self._unlatched, StopCode.CYCLE_LOST)
            self._unlatched = None
        command = self.mailbox.take()
        if command is not None:
            names, position, velocity, received = command
            try:
                bridge.command(names, position, velocity, now=received)
                # Posted while no period ran commands (an enable in progress, say): it waited for
                # the drives, which is no latency of the cycle's (CycleStats.command_to_rpdo).
                self._command_posted = received if received > self._idle_since else math.nan
            except BridgeError as error:
                self.messages.append(f"command refused: {error}")
        active = bridge.run_period(now)
        sample = bridge.sample(active)
        stats.active[k] = 1.0 if active else 0.0
        if not active:  # stopped or disabled: the command runs nowhere, its latency is no latency
            self._command_posted = math.nan
            self._idle_since = now
        self.latest = CycleOutput(stats.cycles, sample)
        self._record_bus(k)
        if self._calls:
            self._calls.popleft().serve(bridge)

    def _stop_drives(self, error: BaseException, k: int) -> None:
        """In the cycle thread, after `error` in period `k`: quick-stop every drive with the error
        as the reason, report it (once while it repeats) and publish the stopped state (see the
        module doc). Owning the bridge (not paused), through the hardware's stop; else every
        drive of the backend directly, the reason latched by the hardware at the next owned period."""
        reason = f"drive cycle error: {type(error).__name__}: {one_line(error) or 'no message'}"
        self.errors += 1
        report = reason != self._last_error  # a repeated error is reported once
        if report:
            self._last_error = reason
            self.messages.append(f"{reason}: every drive quick-stopped")
        bridge = None if self._pause else self.bridge
        if bridge is None:
            self._unlatched = self._unlatched or reason
            self._quick_stop_backend(report)
            return
        try:
            bridge.hardware.stop(reason, StopCode.CYCLE_LOST)
        except Exception as failure:  # noqa: BLE001  (the drives must stop all the same)
            if report:
                self.messages.append(f"hardware stop failed ({one_line(failure)}): drives stopped directly")
            self._quick_stop_backend(report)
        if self._keep_alive is not None and getattr(self.backend, "cycles", None) == self._counted:
            with contextlib.suppress(Exception):  # the step failed before its SYNC: this period's
                self._keep_alive()
        sample = self._stopped_sample(bridge)
        if sample is not None:
            self.latest = CycleOutput(self.stats.cycles, sample)
        with contextlib.suppress(Exception):
            self._record_bus(k)
        if self._calls:  # a status request: the stop is what it reads
            self._calls.popleft().serve(bridge)

    def _quick_stop_backend(self, report: bool) -> None:
        """Every drive of the attached backend quick-stopped (each tried whatever the others do);
        `report`: failures go to `messages`."""
        drives = getattr(self.backend, "drives", None) or {}
        for name, drive in drives.items():
            try:
                drive.quick_stop()
            except Exception as failure:  # noqa: BLE001  (every other drive must still stop)
                if report:
                    self.messages.append(f"quick stop of {name} failed: {one_line(failure)}")

    def _stopped_sample(self, bridge: DriveBridge) -> JointStateSample | None:
        """The drives' own feedback and the latched stop, or, if the drives cannot be read, the
        last sample with the stop reason."""
        try:
            return bridge.sample(active=False)
        except Exception:  # noqa: BLE001  (the last measured state, with the reason)
            previous = self.latest.sample if self.latest is not None else None
            if previous is None:
                return None
            return dataclasses.replace(previous, stop_reason=bridge.hardware.stop_reason)

    def _record_bus(self, k: int) -> None:
        backend, stats = self.backend, self.stats
        if backend is None:
            return
        if self._syncs is not None:
            syncs = backend.syncs
            if syncs != self._syncs:
                stats.sync[k] = backend.sync_time
            self._syncs = syncs
        if self._flushes is not None:
            flushes = backend.flushes
            if flushes != self._flushes:
                stats.command_to_rpdo[k] = backend.flush_time - self._command_posted
                self._command_posted = math.nan  # counted once: its first transmission
            self._flushes = flushes

    def _realtime(self) -> RealtimeReport:
        """Apply the settings the OS grants, in the cycle thread; what was granted."""
        settings = self.settings
        priority, priority_error = 0, "go_realtime() not called yet" if settings.priority else None
        memory_locked, memory_error = False, None  # lock_memory(), after the bridge is open
        if settings.switch_interval > 0.0:
            self._switch_interval = sys.getswitchinterval()
            sys.setswitchinterval(settings.switch_interval)
        if settings.gc_policy in ("freeze", "manual"):
            gc.freeze()
        if settings.gc_policy == "manual":
            gc.disable()
        return RealtimeReport(
            priority=priority,
            priority_error=priority_error,
            receive_threads=0,
            memory_locked=memory_locked,
            memory_error=memory_error,
            gc_policy=settings.gc_policy,
            switch_interval=sys.getswitchinterval(),
        )


def start_canopen_cycle(
    params: RobotParameters,
    control: ControlConfig,
    robot_description: str,
    *,
    can: CanBusConfig | None = None,
    settings: CycleSettings | None = None,
    commands: CommandSource | None = None,
) -> DriveCycle:
    """drive_node's real-drive path: the CANopen backend for the <ros2_control> block of
    `robot_description` (URDF XML), its cycle thread started at once (keep-alive), then the
    bridge brought up (drives enabled by SDO) while the bus stays alive, then stepped.

    The cycle thread runs before the bus is opened and the heap is collected before (tens of ms
    on a loaded machine, which after the backend's first SYNC would be a SYNC loss at the
    drives); memory is locked once the bridge is up, the cycle running. Raises
    DriveStartupError, HardwareError, ValueError; on failure nothing stays open."""
    settings = settings or CycleSettings()
    gc.collect()
    info = hardware_info_from_urdf(robot_description)
    joints = [joint.name for joint in info.joints]
    cycle = DriveCycle(control.dt, settings, commands)

    def bring_up() -> DriveBridge:
        # In the hardware's mode from the start: its SYNC rate (CSP: canopen.sync_period) at once.
        backend = CanopenBackend(params, control, can, joints=joints, mode=control.drive_mode)
        cycle.attach(backend, backend.receive_threads())  # its bus kept alive from the next period
        return DriveBridge(params, control, backend, info, now=time.monotonic())  # closes it on failure

    try:
        cycle.start()
        cycle.open_bridge(bring_up)
        cycle.receive_in_cycle()
        cycle.go_realtime()
        cycle.lock_memory()
    except BaseException:
        cycle.stop()
        if cycle.backend is not None:
            cycle.backend.close()
        raise
    return cycle
