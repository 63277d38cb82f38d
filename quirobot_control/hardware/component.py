"""`QuirobotHardware`: the ros2_control SystemInterface lifecycle, in Python (ROS-free).

ros2_control hardware components are C++ plugins; this class mirrors the SystemInterface
contract (on_init from the URDF's <ros2_control> block, on_configure, on_activate,
on_deactivate, on_error, read(time, period), write(time, period), exported state and command
interfaces) so that the same object runs the simulation here and, behind the topic bridge
(drive_node), the real robot. It owns one `Drive` and one `PID` per joint and the safety layer.

Drive mode (`drive_mode`, default control.yaml drive_mode.real; the closed-loop simulation passes
drive_mode.simulation): CSP, the drive closes the loops with the joint's PID (written with
configure_position_loop at configure and activate) and write() sends the safe position, its
velocity (0x60B1) and the current feed-forward (0x60B2) with drive.command_position; CST, the PID
runs here and write() sends a current. The PID goes to the drive in CST too: its quick stop and
halt ramp with it.

Homing (API for the drive node; hardware.homing): after on_configure, while INACTIVE, call
`home(time)` once per control period (time in s, the same clock as write; step the drives/plant
between calls as for read/write) until the returned `HomingProgress.done`; `progress.axis` is the
axis homing now, `.homed` / `.remaining` the others, `hardware.homing` the last progress. Axes
whose drive already reports homed (absolute encoders, the simulated default) are skipped, so on
such drives the first call returns done. `unhomed` names the joints not homed. Until every
drive reports homed, on_activate returns ERROR (`refused` names the joints; the drives stay
disabled and braked) and set_command(s) of a position or velocity raise NotHomedError naming
them; a drive that reports homed = False while ACTIVE (reference lost) stops every drive. A
failed homing stops every drive and raises HomingError naming the axis.

Stops (IEC 60204-1): `stop(reason)`, category 1, is broadcast to every drive (quick_stop(): each
ramps at its quick-stop deceleration and brakes at standstill by itself) and then confirmed from
their feedback (`unconfirmed_stops()`); a drive power fault is that drive's category 0 (the drive
switches off itself, FAULT); `hold(reason)` / `resume(note)`, category 2, a pause under power. No
automatic fault reset: only acknowledge_stop(note), logged.

Virtual fixtures (`fixtures=` or `set_fixtures`, a task's no-go zones and tip-speed limit near
the entry, planning.tasks.task_fixtures): every cycle the commanded and the measured tool are
checked (axes.fixture_monitor.FixtureMonitor), and where each would come to rest if
quick-stopped now (braking ahead of the zones); a zone entered or about to be, or the tip too fast
near the entry, stops every drive naming the zone or the limit.

Interfaces per joint (hardware.command_interfaces): states position, velocity, effort; commands
position, velocity, and the feed-forward inputs acceleration and effort. A non-finite command or
feed-forward stops every drive.

Currents (hardware.joint_control, the per-joint law): i = PID + feed-forward / K_i, within the
drive's current limit and the URDF's effort limit. `gravity` (a callable
q -> efforts), if given, preloads each PID's integrator with the holding current at activation
(a bumpless start: no sag while the integrator would build up); it is not evaluated per cycle
(a Python rigid-body model costs more than the 1 kHz budget), the integrator follows slow
changes of the gravity load.

Lifecycle (LIFECYCLE_TRANSITIONS, as ros2_control's hardware lifecycle allows them, applied from
the table: a request runs only for a listed (state, request) and its SUCCESS lands in the listed
state): configure only from UNCONFIGURED, activate only from INACTIVE, deactivate only from ACTIVE,
cleanup from INACTIVE, error from any state; read/write only while ACTIVE. A refused request returns ERROR,
says why in `refused` and touches no drive. One way into a stop: `stop(reason)` quick-stops every
drive and latches the reason. A latched stop survives deactivate, error and configure; activation
is refused until `acknowledge_stop(note)` (logged in `events`) resets the drives' faults, which it
does only once every drive's stop is complete (`stops_in_progress()`; else "stop still in progress").

Every cycle each drive must report the state commanded (ENABLED while ACTIVE): any other state
(disabled, quick stop, fault) stops every drive naming the joint and the state. Anything raised
inside read()/write()/set_commands() (a malformed command, a bad period, a drive's exception)
stops every drive with the reason; set_command and set_commands validate alike.

Parts: hardware.lifecycle (the states and the transition table), hardware.hardware_info (the
URDF's <ros2_control> block), hardware.joint_control (one joint, its control law, and the loops
over every drive).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from quirobot_control.axes.fixture_monitor import FixtureMonitor
from quirobot_control.axes.limits import JointLimits
from quirobot_control.axes.virtual_fixtures import VirtualFixtures
from quirobot_control.drives.interface import Drive, DriveMode, DriveState
from quirobot_control.hardware.command_interfaces import CommandInterfaces
from quirobot_control.hardware.control_config import ControlConfig
from quirobot_control.hardware.hardware_info import HardwareError, HardwareInfo
from quirobot_control.hardware.homing import HomingError, HomingProgress, HomingSequence, homing_sequence
from quirobot_control.hardware.joint_control import (
    JointControl,
    check_period,
    drive_faults,
    on_every_drive,
    stops_in_progress,
    unconfirmed_stops,
)
from quirobot_control.hardware.lifecycle import (
    LIFECYCLE_TRANSITIONS,
    CallbackReturn,
    LifecycleState,
    LifecycleTable,
    ReturnType,
)
from quirobot_control.safety.event_log import EventLog
from quirobot_control.safety.motion_monitor import SafetyMonitor, SafetyStopError
from quirobot_control.safety.stop_codes import StopCode
from quirobot_description.parameters import RobotParameters


class QuirobotHardware(CommandInterfaces, LifecycleTable):
    """See the module docstring. Build, then on_init(info) -> on_configure -> on_activate -> read/write."""

    def __init__(
        self,
        params: RobotParameters,
        control: ControlConfig,
        drive_factory: Callable[[str], Drive],
        *,
        gravity: Callable[[np.ndarray], np.ndarray] | None = None,
        drive_mode: DriveMode | None = None,
        fixtures: VirtualFixtures | None = None,
    ) -> None:
        """drive_factory(joint_name) -> Drive; gravity(q (n,)) -> efforts (n,) (optional feed-forward);
        drive_mode: CSP or CST (None: control.drive_mode, the real motors'); fixtures: the task's
        virtual fixtures enforced every cycle (see set_fixtures)."""
        mode = control.drive_mode if drive_mode is None else drive_mode
        if mode not in (DriveMode.CSP, DriveMode.CST):
            raise HardwareError(f"drive mode must be CSP or CST, got {mode!r}")
        self.params = params
        self.control = control
        self.drive_factory = drive_factory
        self.gravity = gravity
        self.drive_mode = mode
        self.held: str | None = None  # why the robot is held (category 2), None when not
        self._homing: HomingSequence | None = None
        self._configured: set[str] = set()  # joints whose drive got the PID and mode since configure
        self._names: tuple[str, ...] = ()
        self._axes_index: list[int | None] = []  # each fixture-tool axis's index in _names (or None)
        self._fixtures: FixtureMonitor | None = None
        self.set_fixtures(fixtures)
        self.lifecycle = LifecycleState.UNCONFIGURED
        self.info: HardwareInfo | None = None
        self.joints: list[JointControl] = []
        self._by_name: dict[str, JointControl] = {}  # name -> joint of self.joints (_joint)
        self.safety: SafetyMonitor | None = None
        self.stop_reason: str | None = None  # the latched stop (cleared only by acknowledge_stop)
        self.stop_code = StopCode.NONE  # its kind (safety.stop_codes), set with it
        self.refused: str | None = None  # the last request refused by the lifecycle, and why
        self.log = EventLog()

    # --- lifecycle ----------------------------------------------------------------------------
    def on_init(self, info: HardwareInfo) -> CallbackReturn:
        """Check the URDF's joints and interfaces against what this component provides."""
        known = {j.name for j in self.control.joints}
        for joint in info.joints:
            if joint.name not in known:
                return self._fail(f"joint {joint.name} has no controller in the control configuration")
            missing = [c for c in joint.command_interfaces if c not in self.COMMAND_INTERFACES]
            if missing:
                return self._fail(
                    f"joint {joint.name}: unsupported command interface(s) {', '.join(missing)}"
                )
            missing = [s for s in joint.state_interfaces if s not in self.STATE_INTERFACES]
            if missing:
                return self._fail(f"joint {joint.name}: unsupported state interface(s) {', '.join(missing)}")
        self.info = info
        self._names = tuple(j.name for j in info.joints)
        self._index_fixture_axes()
        return CallbackReturn.SUCCESS

    def on_configure(self, previous_state: LifecycleState | None = None) -> CallbackReturn:
        """Create one drive and one PID per joint, and the safety layer. A latched stop stays
        latched and the drives' faults are not reset (see acknowledge_stop)."""
        if self.info is None:
            return self._fail("on_configure before on_init")
        return self._transition("configure", self._configure)

    def _configure(self) -> CallbackReturn:
        self.joints = [
            JointControl.for_axis(name, self.drive_factory(name), self.params, self.control)
            for name in self._names
        ]
        self._by_name = {joint.name: joint for joint in self.joints}
        try:
            self._configured = set()
            self._configure_drives(skip_stopped=True)
            self._read_homed()
        except Exception as error:  # noqa: BLE001 - a drive that cannot be configured stops all
            self.stop(f"configure failed: {error}")
            return CallbackReturn.ERROR
        self._homing = None
        self.safety = self._safety_monitor()
        return CallbackReturn.SUCCESS

    def on_activate(self, previous_state: LifecycleState | None = None) -> CallbackReturn:
        """Enable the drives and check that each is; commands start at the measured positions
        (no jump); the command watchdog is armed."""
        return self._transition("activate", self._activate)

    def _activate(self) -> CallbackReturn:
        if self.stop_reason is not None:
            self.refused = (
                f"activate refused: a stop is latched ({self.stop_reason}); acknowledge_stop() first"
            )
            return CallbackReturn.ERROR
        try:
            unhomed = self._read_homed()
        except SafetyStopError as error:
            self.stop(f"activation failed: {error.reason}")
            return CallbackReturn.ERROR
        if unhomed:
            # Motion before homing: the drives stay disabled and braked.
            self.refused = f"activate refused: {', '.join(unhomed)} not homed; home() first (while inactive)"
            self.log.record(("not homed",), self.refused)
            return CallbackReturn.ERROR
        try:
            self._configure_drives(skip_stopped=False)
            for joint in self.joints:
                joint.drive.enable()
            faults = drive_faults(self.joints)
        except Exception as error:  # noqa: BLE001 - any failure leaves every drive stopped
            self.stop(f"activation failed: {error}")
            return CallbackReturn.ERROR
        if faults:
            self.stop("activation failed: " + "; ".join(faults))
            return CallbackReturn.ERROR
        measured = [j.state["position"] for j in self.joints]
        holding = self.gravity(np.array(measured)) if self.gravity is not None else np.zeros(len(measured))
        currents = [float(effort) / j.current_gain for j, effort in zip(self.joints, holding, strict=True)]
        self._hold_here(measured, currents)
        self.held = None
        return CallbackReturn.SUCCESS

    def _configure_drives(self, *, skip_stopped: bool) -> None:
        """The per-joint PID and the operating mode to every drive not configured since on_configure
        (while not enabled): CSP runs the PID, and in either mode the drive's quick stop
        (category 1) and halt (category 2) ramp with it. `skip_stopped`: leave a drive still in
        QUICK_STOP or FAULT as it is (configured before its stop; it may still be ramping under
        power); on_activate configures those (on a bus each write is an SDO: once per drive)."""
        for joint in self.joints:
            if joint.name in self._configured:
                if joint.drive.feedback().mode is not self.drive_mode:  # e.g. left in HOMING
                    joint.drive.set_mode(self.drive_mode)
                continue
            if skip_stopped and joint.drive.feedback().state in (DriveState.QUICK_STOP, DriveState.FAULT):
                continue
            joint.drive.configure_position_loop(joint.pid.gains, self.control.dt)
            joint.drive.set_mode(self.drive_mode)
            self._configured.add(joint.name)

    def _hold_here(self, measured: list[float], holding_currents: list[float]) -> None:
        """Commands at the measured positions (no jump), the PIDs (CST) or the current
        feed-forward (CSP) preloaded with `holding_currents` (A), the safety layer restarted."""
        cst = self.drive_mode is DriveMode.CST
        for joint, position, current in zip(self.joints, measured, holding_currents, strict=True):
            joint.command = {"position": position, "velocity": 0.0}
            joint.acceleration = joint.effort_ff = None
            joint.load_ff = 0.0
            joint.pid.reset(position, integral=current if cst else 0.0)
            joint.holding_current = 0.0 if cst else current
            joint.current_command = current
            joint.last_velocity_command = 0.0
        self.safety = self._safety_monitor()
        self.safety.start(measured)
        if self._fixtures is not None:
            self._fixtures.reset()

    def on_deactivate(self, previous_state: LifecycleState | None = None) -> CallbackReturn:
        """Disable the drives (each brakes under power, then its inverter goes off: disable operation,
        0x605C = 1). A drive that fails to disable does not keep the others enabled: every drive is
        tried, then all are quick-stopped (INACTIVE by the stop) and ERROR names it."""
        return self._transition("deactivate", self._deactivate)

    def _deactivate(self) -> CallbackReturn:
        failures = on_every_drive(self.joints, lambda drive: drive.disable(), "disabling {joint}")
        if failures:
            self.stop("; ".join(failures))
        return CallbackReturn.ERROR if failures else CallbackReturn.SUCCESS

    def on_cleanup(self, previous_state: LifecycleState | None = None) -> CallbackReturn:
        """INACTIVE -> UNCONFIGURED (the drives stay as they are)."""
        return self._transition("cleanup", lambda: CallbackReturn.SUCCESS)

    def on_error(self, previous_state: LifecycleState | None = None) -> CallbackReturn:
        """Quick-stop every drive; back to UNCONFIGURED, the stop latched."""
        return self._transition("error", self._error)

    def _error(self) -> CallbackReturn:
        self.stop(self.stop_reason or "on_error")
        return CallbackReturn.SUCCESS

    def acknowledge_stop(self, note: str) -> CallbackReturn:
        """Clear a latched stop (not while ACTIVE): reset every drive's fault and log who and why
        (`note`, e.g. "operator: bit replaced"). on_activate is needed to drive again.

        Refused (ERROR, `refused` says "stop still in progress" naming the drives; no drive is
        touched) until every stopped drive reports its stop complete (standstill, brake holding,
        inverter off: DriveFeedback.stopping False) and confirmed by the drive itself: a fault
        reset during a category 1 ramp would switch the inverter off and let the axis coast onto
        its brake. Ask again once they have stopped."""
        if not self._allowed("acknowledge"):
            return CallbackReturn.ERROR
        pending = self.stops_in_progress()
        if pending:
            self.refused = f"acknowledge refused: stop still in progress on {'; '.join(pending)}; try again"
            return CallbackReturn.ERROR
        failures = on_every_drive(self.joints, lambda drive: drive.reset_fault(), "reset of {joint}")
        if failures:
            self.refused = "acknowledge refused: " + "; ".join(failures)
            return CallbackReturn.ERROR
        if self.stop_reason is not None:
            self.log.append(f"stop acknowledged ({note}): {self.stop_reason}")
        self.stop_reason, self.stop_code = None, StopCode.NONE
        self._homing = None
        try:
            unhomed = self._read_homed()
        except SafetyStopError:
            unhomed = []
        if unhomed:
            self.log.append(f"after the stop {', '.join(unhomed)} must home again (home()) before any motion")
        if self.safety is not None:
            self.safety = self._safety_monitor()
        return CallbackReturn.SUCCESS

    # --- control cycle ------------------------------------------------------------------------
    def read(self, time: float, period: float) -> ReturnType:
        """Drive feedback -> state interfaces; a drive not in the commanded state stops every drive."""
        if not self._allowed("read"):
            return ReturnType.ERROR
        try:
            if type(period) is not float or not 0.0 < period < math.inf:  # (a float: checked here)
                check_period(period)
            faults = drive_faults(self.joints)
        except Exception as error:  # noqa: BLE001 - whatever it is, every drive stops
            self.stop(f"read failed: {error}")
            return ReturnType.ERROR
        if faults:
            self.stop("; ".join(faults))
            return ReturnType.ERROR
        return ReturnType.OK

    def write(self, time: float, period: float) -> ReturnType:
        """Safety filter and check, then PID + feed-forward -> current command of every drive.

        `time` (s) is the command watchdog's clock (see safety.motion_monitor.SafetyMonitor: the larger of its
        age and the `period`s counted decides); `period` (s) the control period.
        """
        if not self._allowed("write"):
            return ReturnType.ERROR
        try:
            self._write(time, period)
        except SafetyStopError as stop:
            self.stop(stop.reason, stop.code)
            return ReturnType.ERROR
        except Exception as error:  # noqa: BLE001 - whatever it is, every drive stops
            self.stop(f"write failed: {error}")
            return ReturnType.ERROR
        return ReturnType.OK

    def _write(self, time: float, period: float) -> None:
        if type(period) is not float or not 0.0 < period < math.inf:  # (a float: checked here)
            check_period(period)
        joints = self.joints
        for joint in joints:
            acceleration, effort = joint.acceleration, joint.effort_ff
            if acceleration is not None and not math.isfinite(acceleration):
                raise SafetyStopError(
                    f"non-finite acceleration feed-forward {acceleration} for joint {joint.name}"
                )
            if effort is not None and not math.isfinite(effort):
                raise SafetyStopError(f"non-finite effort feed-forward {effort} for joint {joint.name}")
        measured = [j.state["position"] for j in joints]
        if self.held is not None:
            # Held (category 2): the drives hold by themselves and the commands are ignored; the
            # measured state is still checked (soft limits, overspeed, fixtures).
            self.safety.check(measured, measured, [j.state["velocity"] for j in joints])
            if self._fixtures is not None:
                at = self._axes_vector(measured)
                speed = self._axes_vector([j.state["velocity"] for j in joints])
                reason = self._fixtures.check(at, at, period, speed)
                if reason is not None:
                    raise SafetyStopError(reason)
            self._feed_drive_watchdogs(measured)
            return
        position, velocity = self.safety.filter(
            time,
            period,
            [j.command["position"] for j in joints],
            [j.command["velocity"] for j in joints],
            measured,
        )
        self.safety.check(position, measured, [j.state["velocity"] for j in joints])
        if self._fixtures is not None:
            reason = self._fixtures.check(
                self._axes_vector(position), self._axes_vector(measured), period, self._axes_vector(velocity)
            )
            if reason is not None:
                raise SafetyStopError(reason)
        cst = self.drive_mode is DriveMode.CST
        for joint, q, v, q_measured in zip(joints, position, velocity, measured, strict=True):
            joint.command_drive(q, v, q_measured, period, cst)

    def _feed_drive_watchdogs(self, measured: list[float]) -> None:
        """While held (category 2) the drives hold by themselves and ignore the commands, but
        their master watchdog wants one every cycle: the held pose (CSP) or no current (CST)."""
        cst = self.drive_mode is DriveMode.CST
        for joint, position in zip(self.joints, measured, strict=True):
            joint.feed_watchdog(position, cst)

    def _axes_vector(self, values: list[float]) -> list[float]:
        """values in joint_names order -> the values of the fixtures' tool axes (ToolGeometry.axes;
        an axis not driven here: 0)."""
        if self._axes_in_order:  # the tool's axes are the joints, in order: a copy
            return list(values)
        return [values[k] if k is not None else 0.0 for k in self._axes_index]

    def _index_fixture_axes(self) -> None:
        """Where each axis of the fixtures' tool (ToolGeometry.axes) is among the joints driven here."""
        axes = self._fixtures.fixtures.tool.axes if self._fixtures is not None else ()
        self._axes_index = [self._names.index(a) if a in self._names else None for a in axes]
        self._axes_in_order = self._axes_index == list(range(len(self._names)))

    @property
    def events(self) -> list[str]:
        """The safety event log (bounded; repeats counted in `log.counts`), oldest first."""
        return list(self.log.messages)

    @property
    def currents(self) -> np.ndarray:
        """(n,) the last current commands, A: the PID's outputs (CST) or the current feed-forward
        sent with the position (CSP; the drive adds its own PID's output)."""
        return np.array([j.current_command for j in self.joints])

    # --- virtual fixtures -----------------------------------------------------------------------
    def set_fixtures(self, fixtures: VirtualFixtures | None) -> None:
        """Enforce `fixtures` (a task's no-go zones and tip-speed limit near the entry,
        planning.tasks.task_fixtures) from the next cycle on; None: none. Every cycle the commanded
        and the measured tool are checked: a zone entered, or the commanded tip faster than the
        limit near the entry, stops every drive (category 1) naming the zone or the limit."""
        self._fixtures = (
            FixtureMonitor(fixtures)
            if fixtures is not None and (fixtures.zones or fixtures.speed_limit is not None)
            else None
        )
        self._index_fixture_axes()

    # --- homing ---------------------------------------------------------------------------------
    @property
    def unhomed(self) -> tuple[str, ...]:
        """The joints whose drive did not report homed at its last feedback."""
        return tuple(j.name for j in self.joints if not j.homed)

    @property
    def homing(self) -> HomingProgress | None:
        """The homing sequence's progress (None: home() not called since configure or a stop)."""
        return self._homing.progress if self._homing is not None else None

    def home(self, time: float, rehome: tuple[str, ...] = ()) -> HomingProgress:
        """Run the homing sequence (hardware.homing) one control period at `time` (s): call once per
        period, while INACTIVE (after on_configure, before on_activate), until `.done`.

        Axes in the parameter file's homing.order, one at a time, the others held in CSP by the
        sequence's commands (so a host that stops calling leaves them stopped by their watchdog);
        an axis whose drive reports homed (absolute encoder) is skipped unless named in `rehome`
        (given at the first call). Joint states are updated from the drives' feedback. A refused
        request (not INACTIVE, a stop latched) raises HardwareError; a failure (a drive fault, a
        switch not found in time) stops every drive and raises HomingError naming the axis."""
        if not self._allowed("home"):
            raise HardwareError(f"home() refused: {self.refused} (home while inactive, after configure)")
        if self.stop_reason is not None:
            raise HardwareError(
                f"home() refused: a stop is latched ({self.stop_reason}); acknowledge_stop() first"
            )
        try:
            if self._homing is None:
                drives = {j.name: j.drive for j in self.joints}
                self._homing = homing_sequence(self.params, drives, self.drive_mode, rehome=frozenset(rehome))
                self.log.append(
                    f"homing started: {', '.join(self._homing.progress.remaining) or 'nothing to home'}"
                )
            progress = self._homing.step(time)
            self._read_homed()
        except Exception as error:  # noqa: BLE001 - a failed homing stops every drive
            self.stop(f"homing failed: {error}")
            if isinstance(error, HomingError):
                raise
            raise HomingError(f"homing failed: {error}") from error
        if progress.done and self.unhomed:
            self.stop(f"homing failed: {', '.join(self.unhomed)} not homed after the sequence")
            raise HomingError(self.stop_reason)
        return progress

    def _read_homed(self) -> list[str]:
        """Feedback -> state interfaces and each joint's homed flag (any lifecycle state); the
        joints not homed."""
        for joint in self.joints:
            joint.sample()
        return list(self.unhomed)

    # --- hold (category 2) ----------------------------------------------------------------------
    def hold(self, reason: str) -> ReturnType:
        """A pause (stop category 2): every drive ramps down at its quick-stop deceleration and
        holds under power (drive.halt()); commands are ignored until resume(). Not latched."""
        if not self._allowed("hold"):
            return ReturnType.ERROR
        failures = on_every_drive(self.joints, lambda drive: drive.halt(), "halt of {joint}")
        if failures:
            self.stop("; ".join([f"hold ({reason}) failed", *failures]))
            return ReturnType.ERROR
        self.held = reason
        self.log.append(f"hold: {reason}")
        return ReturnType.OK

    def resume(self, note: str) -> ReturnType:
        """Leave a hold: the drives follow commands again, starting at the positions they hold
        (commands, PIDs and the safety layer restart there, as at activation)."""
        if self.held is None or not self._allowed("hold"):
            return ReturnType.ERROR
        try:
            for joint in self.joints:
                joint.drive.resume()
            faults = drive_faults(self.joints)
        except Exception as error:  # noqa: BLE001 - whatever it is, every drive stops
            self.stop(f"resume failed: {error}")
            return ReturnType.ERROR
        if faults:
            self.stop("resume failed: " + "; ".join(faults))
            return ReturnType.ERROR
        currents = [j.drive.feedback().current for j in self.joints]
        self._hold_here([j.state["position"] for j in self.joints], currents)
        self.log.append(f"resumed ({note}) after hold: {self.held}")
        self.held = None
        return ReturnType.OK

    # --- the one way to stop ------------------------------------------------------------------
    def stop(self, reason: str, code: StopCode = StopCode.DRIVE_FAULT) -> None:
        """Quick-stop every drive and latch why: `reason` in words, `code` its kind
        (safety.stop_codes; the first stop's are kept until acknowledge_stop).

        Broadcast, then confirm: quick_stop() goes to every drive first (stop category 1: each
        drive ramps at its own quick-stop deceleration and brakes at standstill, no host needed;
        a drive in FAULT is already off, category 0), then each drive's feedback is read and a
        drive not reporting QUICK_STOP or FAULT is named in `events` (on a bus the state comes
        with the next SYNC: `unconfirmed_stops()` asks again). A drive whose quick stop raises
        (e.g. a bus error) does not keep the others running: every drive is tried, and the
        failures are added to the reason. Nothing resets by itself: acknowledge_stop(note).
        """
        failures = on_every_drive(self.joints, lambda drive: drive.quick_stop(), "quick stop of {joint}")
        if failures:
            reason = "; ".join([reason, *failures])
        unconfirmed = self.unconfirmed_stops()
        if unconfirmed:
            self.log.record(("stop unconfirmed",), f"stop not yet confirmed by {', '.join(unconfirmed)}")
        if self.stop_reason is None:
            self.stop_reason, self.stop_code = reason, code
        if self.safety is not None and self.safety.stop_reason is None:
            self.safety.stop_reason = reason
        # Never refused (every state lists "stop"): out of ACTIVE, nothing else changes.
        self.lifecycle = LIFECYCLE_TRANSITIONS.get((self.lifecycle, "stop"), self.lifecycle)

    def unconfirmed_stops(self) -> list[str]:
        """The joints whose drive does not (yet) report QUICK_STOP or FAULT itself (or cannot
        say): a state only the host holds (DriveFeedback.confirmed False, e.g. a quick stop sent to
        a drive that still reports Operation enabled) is not a confirmed stop."""
        return unconfirmed_stops(self.joints)

    def stops_in_progress(self) -> list[str]:
        """The drives whose stop is not complete, each with why: still ramping or braking under
        power (DriveFeedback.stopping), or stopped only in the host's view (not confirmed by the
        drive: e.g. a quick stop sent that the drive has not reported), or that cannot answer."""
        return stops_in_progress(self.joints)

    # --- internals ----------------------------------------------------------------------------
    def _fail(self, reason: str) -> CallbackReturn:
        self.stop_reason, self.stop_code = reason, StopCode.DRIVE_FAULT
        return CallbackReturn.ERROR

    def _safety_monitor(self) -> SafetyMonitor:
        """The safety layer on the URDF's <limit> and <safety_controller> of each joint (the
        planner's JointLimits, from the same parameters: its acceleration limits are what a command
        may ask and what the limiter brakes at) and the control configuration's following-error
        limits, watchdog timeouts and overspeed ratio."""
        return SafetyMonitor(
            JointLimits.from_parameters(self.params, self._names),
            following_error=[self.control.joint(name).following_error for name in self._names],
            watchdog_timeout=self.control.watchdog_timeout,
            stop_timeout=self.control.watchdog_stop_timeout,
            startup_timeout=self.control.watchdog_startup_timeout,
            overspeed_ratio=self.control.overspeed_ratio,
            log=self.log,
        )
