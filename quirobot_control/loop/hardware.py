"""`QuirobotHardware`: the ros2_control SystemInterface lifecycle, in Python (ROS-free).

ros2_control hardware components are C++ plugins; this class mirrors the SystemInterface
contract (on_init from the URDF's <ros2_control> block, on_configure, on_activate,
on_deactivate, on_error, read(time, period), write(time, period), exported state and command
interfaces) so that the same object runs the simulation here and, behind the topic bridge
(drive_node), the real robot. It owns one `Drive` and one `PID` per joint and the safety layer.

Interfaces per joint: states position, velocity, effort; commands position, velocity (what the
URDF declares), plus two optional feed-forward inputs not exported to ros2_control:
acceleration (m/s^2 or rad/s^2; default: the difference of successive velocity commands) and
effort (N or N*m, the model-based feed-forward, e.g. inverse dynamics along the plan). A
non-finite command or feed-forward stops every drive (an infinite effort would otherwise be
clamped to the full current).

Currents: i = PID(position, velocity) + (effort_ff, or M_eff*a_ff without it) / K_i, with
K_i = K_T * ratio * efficiency, saturated at the drive's current limit. `gravity` (a callable
q -> efforts), if given, preloads each PID's integrator with the holding current at activation
(a bumpless start: no sag while the integrator would build up); it is not evaluated per cycle
(a Python rigid-body model costs more than the 1 kHz budget), the integrator follows slow
changes of the gravity load.

Lifecycle (LIFECYCLE_TRANSITIONS, as ros2_control's hardware lifecycle allows them): configure
only from UNCONFIGURED, activate only from INACTIVE, deactivate only from ACTIVE, cleanup from
INACTIVE, error from any state; read/write only while ACTIVE. A refused request returns ERROR,
says why in `refused` and touches no drive. One way into a stop: `stop(reason)` quick-stops every
drive and latches the reason. A latched stop survives deactivate, error and configure; activation
is refused until `acknowledge_stop(note)` (logged in `events`) resets the drives' faults.

Every cycle each drive must report the state commanded (ENABLED while ACTIVE): any other state
(disabled, quick stop, fault) stops every drive naming the joint and the state. Anything raised
inside read()/write()/set_commands() (a malformed command, a bad period, a drive's exception)
stops every drive with the reason; set_command and set_commands validate alike.

Effort limits: each joint's current is bounded by min(drive current limit, URDF effort limit /
K_i), the feed-forward effort by the effort limit (a finite but absurd feed-forward cannot
command the full current).
"""

from __future__ import annotations

import enum
import math
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from quirobot_control.axes.limits import JointLimits
from quirobot_control.drives.interface import Drive, DriveState
from quirobot_control.drives.pid import PID
from quirobot_control.loop.control_config import ControlConfig
from quirobot_control.loop.event_log import EventLog
from quirobot_control.loop.safety import SafetyMonitor, SafetyStopError
from quirobot_description.parameters import FEED_JOINT, RobotParameters


class CallbackReturn(enum.Enum):
    SUCCESS = "success"
    FAILURE = "failure"
    ERROR = "error"


class ReturnType(enum.Enum):
    OK = "ok"
    ERROR = "error"


class LifecycleState(enum.Enum):
    UNCONFIGURED = "unconfigured"
    INACTIVE = "inactive"
    ACTIVE = "active"
    FINALIZED = "finalized"


#: (state, request) -> the state it leads to; a pair not listed is refused (ERROR, drives untouched).
#: "acknowledge" is `acknowledge_stop`; read and write are allowed only while ACTIVE.
LIFECYCLE_TRANSITIONS: dict[tuple[LifecycleState, str], LifecycleState] = {
    (LifecycleState.UNCONFIGURED, "configure"): LifecycleState.INACTIVE,
    (LifecycleState.INACTIVE, "activate"): LifecycleState.ACTIVE,
    (LifecycleState.ACTIVE, "deactivate"): LifecycleState.INACTIVE,
    (LifecycleState.INACTIVE, "cleanup"): LifecycleState.UNCONFIGURED,
    (LifecycleState.UNCONFIGURED, "error"): LifecycleState.UNCONFIGURED,
    (LifecycleState.INACTIVE, "error"): LifecycleState.UNCONFIGURED,
    (LifecycleState.ACTIVE, "error"): LifecycleState.UNCONFIGURED,
    (LifecycleState.UNCONFIGURED, "acknowledge"): LifecycleState.UNCONFIGURED,
    (LifecycleState.INACTIVE, "acknowledge"): LifecycleState.INACTIVE,
    (LifecycleState.ACTIVE, "read"): LifecycleState.ACTIVE,
    (LifecycleState.ACTIVE, "write"): LifecycleState.ACTIVE,
}


class HardwareError(ValueError):
    """Malformed hardware description or an interface that does not exist."""


@dataclass(frozen=True)
class ComponentInfo:
    name: str
    command_interfaces: tuple[str, ...]
    state_interfaces: tuple[str, ...]


@dataclass(frozen=True)
class HardwareInfo:
    """The URDF's <ros2_control> block: name, plugin, <param>s and joints."""

    name: str
    plugin: str
    parameters: dict[str, str]
    joints: tuple[ComponentInfo, ...]


def hardware_info_from_urdf(urdf: str) -> HardwareInfo:
    """Parse the first <ros2_control type="system"> of a URDF XML string."""
    try:
        root = ET.fromstring(urdf)
    except ET.ParseError as error:
        raise HardwareError(f"robot description is not valid XML: {error}") from error
    block = root.find("ros2_control")
    if block is None:
        raise HardwareError("robot description has no <ros2_control> block")
    hardware = block.find("hardware")
    plugin = hardware.findtext("plugin", "").strip() if hardware is not None else ""
    parameters = {
        p.get("name", ""): (p.text or "").strip() for p in (hardware.findall("param") if hardware else [])
    }
    joints = tuple(
        ComponentInfo(
            name=j.get("name", ""),
            command_interfaces=tuple(c.get("name", "") for c in j.findall("command_interface")),
            state_interfaces=tuple(s.get("name", "") for s in j.findall("state_interface")),
        )
        for j in block.findall("joint")
    )
    if not joints:
        raise HardwareError("the <ros2_control> block lists no joint")
    return HardwareInfo(name=block.get("name", ""), plugin=plugin, parameters=parameters, joints=joints)


@dataclass
class _Joint:
    name: str
    drive: Drive
    pid: PID
    current_gain: float  # N/A or N*m/A
    effective_inertia: float
    effort_limit: float  # N or N*m, the URDF's <limit effort>
    state: dict[str, float] = field(default_factory=lambda: {"position": 0.0, "velocity": 0.0, "effort": 0.0})
    command: dict[str, float] = field(default_factory=lambda: {"position": math.nan, "velocity": 0.0})
    acceleration: float | None = None
    effort_ff: float | None = None
    last_velocity_command: float = 0.0

    @property
    def acceleration_capability(self) -> float:
        """m/s^2 or rad/s^2: the largest force the drive may give over the effective inertia."""
        return self.pid.gains.output_limit * self.current_gain / self.effective_inertia


class CommandError(ValueError):
    """A command that is not a number, or arrays of the wrong shape."""


class QuirobotHardware:
    """See the module docstring. Build, then on_init(info) -> on_configure -> on_activate -> read/write."""

    STATE_INTERFACES = ("position", "velocity", "effort")
    COMMAND_INTERFACES = ("position", "velocity")
    FEED_FORWARD_INTERFACES = ("acceleration", "effort")

    def __init__(
        self,
        params: RobotParameters,
        control: ControlConfig,
        drive_factory: Callable[[str], Drive],
        *,
        gravity: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> None:
        """drive_factory(joint_name) -> Drive; gravity(q (n,)) -> efforts (n,) (optional feed-forward)."""
        self.params = params
        self.control = control
        self.drive_factory = drive_factory
        self.gravity = gravity
        self.lifecycle = LifecycleState.UNCONFIGURED
        self.info: HardwareInfo | None = None
        self.joints: list[_Joint] = []
        self.safety: SafetyMonitor | None = None
        self.stop_reason: str | None = None  # the latched stop (cleared only by acknowledge_stop)
        self.refused: str | None = None  # the last request refused by the lifecycle, and why
        self.log = EventLog()
        self._names: tuple[str, ...] = ()

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
        return CallbackReturn.SUCCESS

    def on_configure(self, previous_state: LifecycleState | None = None) -> CallbackReturn:
        """Create one drive and one PID per joint, and the safety layer. A latched stop stays
        latched and the drives' faults are not reset (see acknowledge_stop)."""
        if self.info is None:
            return self._fail("on_configure before on_init")
        if not self._allowed("configure"):
            return CallbackReturn.ERROR
        dt = self.control.dt
        self.joints = []
        for name in self._names:
            settings = self.control.joint(name)
            drive = self.drive_factory(name)
            gain = _current_gain(self.params, name)
            effort_limit = _effort_limit(self.params, name)
            gains = replace(
                settings.gains, output_limit=min(settings.gains.output_limit, effort_limit / gain)
            )
            self.joints.append(
                _Joint(name, drive, PID(gains, dt), gain, settings.effective_inertia, effort_limit)
            )
        self.safety = self._safety_monitor()
        self.lifecycle = LifecycleState.INACTIVE
        return CallbackReturn.SUCCESS

    def on_activate(self, previous_state: LifecycleState | None = None) -> CallbackReturn:
        """Enable the drives and check that each is; commands start at the measured positions
        (no jump); the command watchdog is armed."""
        if not self._allowed("activate"):
            return CallbackReturn.ERROR
        if self.stop_reason is not None:
            self.refused = (
                f"activate refused: a stop is latched ({self.stop_reason}); acknowledge_stop() first"
            )
            return CallbackReturn.ERROR
        try:
            for joint in self.joints:
                joint.drive.enable()
            faults = self._read_drives()
        except Exception as error:  # noqa: BLE001 - any failure leaves every drive stopped
            self.stop(f"activation failed: {error}")
            return CallbackReturn.ERROR
        if faults:
            self.stop("activation failed: " + "; ".join(faults))
            return CallbackReturn.ERROR
        measured = [j.state["position"] for j in self.joints]
        holding = self.gravity(np.array(measured)) if self.gravity is not None else np.zeros(len(measured))
        for joint, position, effort in zip(self.joints, measured, holding, strict=True):
            joint.command = {"position": position, "velocity": 0.0}
            joint.acceleration = joint.effort_ff = None
            joint.pid.reset(position, integral=float(effort) / joint.current_gain)
            joint.last_velocity_command = 0.0
        self.safety = self._safety_monitor()
        self.safety.start(measured)
        self.lifecycle = LifecycleState.ACTIVE
        return CallbackReturn.SUCCESS

    def on_deactivate(self, previous_state: LifecycleState | None = None) -> CallbackReturn:
        """Disable the drives (inverters off). A drive that fails to disable does not keep the
        others enabled: every drive is tried, then all are quick-stopped and ERROR names it."""
        if not self._allowed("deactivate"):
            return CallbackReturn.ERROR
        failures = []
        for joint in self.joints:
            try:
                joint.drive.disable()
            except Exception as error:  # noqa: BLE001 - every other drive must still be disabled
                failures.append(f"disabling {joint.name} failed: {error}")
        if failures:
            self.stop("; ".join(failures))
        self.lifecycle = LifecycleState.INACTIVE
        return CallbackReturn.ERROR if failures else CallbackReturn.SUCCESS

    def on_cleanup(self, previous_state: LifecycleState | None = None) -> CallbackReturn:
        """INACTIVE -> UNCONFIGURED (the drives stay as they are)."""
        if not self._allowed("cleanup"):
            return CallbackReturn.ERROR
        self.lifecycle = LifecycleState.UNCONFIGURED
        return CallbackReturn.SUCCESS

    def on_error(self, previous_state: LifecycleState | None = None) -> CallbackReturn:
        """Quick-stop every drive; back to UNCONFIGURED, the stop latched."""
        self._allowed("error")
        self.stop(self.stop_reason or "on_error")
        self.lifecycle = LifecycleState.UNCONFIGURED
        return CallbackReturn.SUCCESS

    def acknowledge_stop(self, note: str) -> CallbackReturn:
        """Clear a latched stop (not while ACTIVE): reset every drive's fault and log who and why
        (`note`, e.g. "operator: bit replaced"). on_activate is needed to drive again."""
        if not self._allowed("acknowledge"):
            return CallbackReturn.ERROR
        failures = []
        for joint in self.joints:
            try:
                joint.drive.reset_fault()
            except Exception as error:  # noqa: BLE001 - report every drive that could not reset
                failures.append(f"reset of {joint.name} failed: {error}")
        if failures:
            self.refused = "acknowledge refused: " + "; ".join(failures)
            return CallbackReturn.ERROR
        if self.stop_reason is not None:
            self.log.append(f"stop acknowledged ({note}): {self.stop_reason}")
        self.stop_reason = None
        if self.safety is not None:
            self.safety = self._safety_monitor()
        return CallbackReturn.SUCCESS

    # --- interfaces ---------------------------------------------------------------------------
    def export_state_interfaces(self) -> list[tuple[str, str]]:
        return [(j.name, s) for j in (self.info.joints if self.info else ()) for s in j.state_interfaces]

    def export_command_interfaces(self) -> list[tuple[str, str]]:
        return [(j.name, c) for j in (self.info.joints if self.info else ()) for c in j.command_interfaces]

    @property
    def joint_names(self) -> tuple[str, ...]:
        return self._names

    def state(self, joint: str, interface: str) -> float:
        return self._joint(joint).state[interface]

    def set_command(self, joint: str, interface: str, value: float) -> None:
        """Set one command interface (position, velocity) or feed-forward (acceleration, effort).

        A value that is not a number stops every drive (while ACTIVE) naming the joint, the
        interface and the value; an unknown joint or interface also raises HardwareError."""
        try:
            target = self._joint(joint)
            if interface not in self.COMMAND_INTERFACES + self.FEED_FORWARD_INTERFACES:
                raise HardwareError(f"joint {joint}: no command interface {interface!r}")
        except HardwareError as error:
            self._refuse_command(str(error))
            raise
        try:
            self._store(target, interface, _number(value, interface, joint))
        except CommandError as error:
            self._refuse_command(str(error))

    def set_commands(
        self,
        time: float,
        position: np.ndarray,
        velocity: np.ndarray,
        acceleration: np.ndarray | None = None,
        effort: np.ndarray | None = None,
    ) -> None:
        """All joints at once (arrays (n,) in joint_names order), stamped fresh at `time` s.

        Malformed input (a value that is not a number, an array of the wrong shape, a time that is
        not a finite number) stops every drive with the reason (while ACTIVE; nothing is raised)."""
        try:
            stamp = _number(time, "time", "all")
            if not math.isfinite(stamp):
                raise CommandError(f"command time {time!r} is not a finite number")
            columns = {
                label: self._column(values, label)
                for label, values in (
                    ("position", position),
                    ("velocity", velocity),
                    ("acceleration", acceleration),
                    ("effort", effort),
                )
                if values is not None or label in ("position", "velocity")
            }
        except CommandError as error:
            self._refuse_command(str(error))
            return
        for k, joint in enumerate(self.joints):
            joint.acceleration = joint.effort_ff = None
            for label, values in columns.items():
                self._store(joint, label, values[k])
        self.command_received(stamp)

    def command_received(self, time: float) -> None:
        """Tell the watchdog a fresh command arrived at `time` (s, the clock given to write())."""
        if self.safety is not None:
            self.safety.note_command(time)

    # --- control cycle ------------------------------------------------------------------------
    def read(self, time: float, period: float) -> ReturnType:
        """Drive feedback -> state interfaces; a drive not in the commanded state stops every drive."""
        if not self._allowed("read"):
            return ReturnType.ERROR
        try:
            _check_period(period)
            faults = self._read_drives()
        except Exception as error:  # noqa: BLE001 - whatever it is, every drive stops
            self.stop(f"read failed: {error}")
            return ReturnType.ERROR
        if faults:
            self.stop("; ".join(faults))
            return ReturnType.ERROR
        return ReturnType.OK

    def write(self, time: float, period: float) -> ReturnType:
        """Safety filter and check, then PID + feed-forward -> current command of every drive.

        `time` (s) is the command watchdog's clock (see loop.safety.SafetyMonitor: the larger of its
        age and the `period`s counted decides); `period` (s) the control period.
        """
        if not self._allowed("write"):
            return ReturnType.ERROR
        try:
            self._write(time, period)
        except SafetyStopError as stop:
            self.stop(stop.reason)
            return ReturnType.ERROR
        except Exception as error:  # noqa: BLE001 - whatever it is, every drive stops
            self.stop(f"write failed: {error}")
            return ReturnType.ERROR
        return ReturnType.OK

    def _write(self, time: float, period: float) -> None:
        _check_period(period)
        joints = self.joints
        for joint in joints:
            for label, value in (("acceleration", joint.acceleration), ("effort", joint.effort_ff)):
                if value is not None and not math.isfinite(value):
                    raise SafetyStopError(f"non-finite {label} feed-forward {value} for joint {joint.name}")
        measured = [j.state["position"] for j in joints]
        position, velocity = self.safety.filter(
            time,
            period,
            [j.command["position"] for j in joints],
            [j.command["velocity"] for j in joints],
            measured,
        )
        self.safety.check(position, measured, [j.state["velocity"] for j in joints])
        for k, joint in enumerate(joints):
            if joint.acceleration is not None:
                acceleration = joint.acceleration
            else:
                acceleration = (velocity[k] - joint.last_velocity_command) / period
            joint.last_velocity_command = velocity[k]
            if joint.effort_ff is not None:
                effort = joint.effort_ff
            else:
                effort = joint.effective_inertia * acceleration
            effort = min(max(effort, -joint.effort_limit), joint.effort_limit)
            current = joint.pid.update(position[k], measured[k], velocity[k], effort / joint.current_gain)
            try:
                joint.drive.command_current(current)
            except Exception as error:  # noqa: BLE001 - named, then every drive stops
                raise SafetyStopError(f"current command to {joint.name} failed: {error}") from error

    @property
    def events(self) -> list[str]:
        """The safety event log (bounded; repeats counted in `log.counts`), oldest first."""
        return list(self.log.messages)

    @property
    def currents(self) -> np.ndarray:
        """(n,) last PID outputs, A."""
        return np.array([j.pid.output for j in self.joints])

    # --- the one way to stop ------------------------------------------------------------------
    def stop(self, reason: str) -> None:
        """Quick-stop every drive and latch why (the first reason is kept until acknowledge_stop).

        A drive whose quick stop raises (e.g. a bus error) does not keep the others running: every
        drive is tried, and the failures are added to the reason.
        """
        failures = []
        for joint in self.joints:
            try:
                joint.drive.quick_stop()
            except Exception as error:  # noqa: BLE001 - every other drive must still be stopped
                failures.append(f"quick stop of {joint.name} failed: {error}")
        if failures:
            reason = "; ".join([reason, *failures])
        if self.stop_reason is None:
            self.stop_reason = reason
        if self.safety is not None and self.safety.stop_reason is None:
            self.safety.stop_reason = reason
        if self.lifecycle is LifecycleState.ACTIVE:
            self.lifecycle = LifecycleState.INACTIVE

    # --- internals ----------------------------------------------------------------------------
    def _allowed(self, request: str) -> bool:
        """The lifecycle table: may `request` run now? If not, say why in `refused`."""
        if (self.lifecycle, request) in LIFECYCLE_TRANSITIONS:
            return True
        self.refused = f"{request} refused in state {self.lifecycle.value}"
        return False

    def _refuse_command(self, reason: str) -> None:
        if self.lifecycle is LifecycleState.ACTIVE:
            self.stop(reason)
        else:
            self.refused = f"command refused: {reason}"

    def _column(self, values: object, label: str) -> list[float]:
        """values (n,) -> n floats (NaN kept for the safety layer to name); CommandError if the
        shape is not (n,) or an entry is not a number."""
        n = len(self.joints)
        if isinstance(values, np.ndarray) and values.dtype.kind in "fiu" and values.shape == (n,):
            return values.tolist()  # the usual case, cheaply (NaN kept)
        array = np.asarray(values, dtype=object)
        if array.shape != (n,):
            joints = ", ".join(self._names)
            raise CommandError(
                f"{label} command of shape {array.shape}: expected {n} {label} values ({joints})"
                if array.ndim != 1
                else f"{len(array)} {label} values for {n} joints ({joints})"
            )
        return [_number(v, label, name) for v, name in zip(array, self._names, strict=True)]

    @staticmethod
    def _store(joint: _Joint, interface: str, value: float) -> None:
        if interface in ("position", "velocity"):
            joint.command[interface] = value
        elif interface == "acceleration":
            joint.acceleration = value
        else:
            joint.effort_ff = value

    def _joint(self, name: str) -> _Joint:
        for joint in self.joints:
            if joint.name == name:
                return joint
        raise HardwareError(f"no joint {name!r}; joints are {', '.join(self._names)}")

    def _read_drives(self) -> list[str]:
        """Feedback -> state interfaces; the faults: every drive not ENABLED (the state commanded
        while active), by name and state."""
        faults = []
        for joint in self.joints:
            try:
                feedback = joint.drive.feedback()
            except Exception as error:  # noqa: BLE001 - named, then every drive stops
                raise SafetyStopError(f"feedback of {joint.name} failed: {error}") from error
            joint.state["position"] = feedback.position
            joint.state["velocity"] = feedback.velocity
            joint.state["effort"] = feedback.effort
            if feedback.state is DriveState.FAULT:
                faults.append(f"drive fault on {joint.name}: {feedback.fault}")
            elif feedback.state is not DriveState.ENABLED:
                faults.append(f"drive {joint.name} left Operation enabled: it is {feedback.state.value}")
        return faults

    def _fail(self, reason: str) -> CallbackReturn:
        self.stop_reason = reason
        return CallbackReturn.ERROR

    def _safety_monitor(self) -> SafetyMonitor:
        """The safety layer on the URDF's <limit> and <safety_controller> of each joint (the
        planner's JointLimits, from the same parameters: its acceleration limits are what a command
        may ask and what the limiter brakes at) and the control configuration's following-error
        limits, watchdog timeouts and overspeed ratio."""
        return SafetyMonitor(
            JointLimits.from_parameters(self.params).select(self._names),
            following_error=[self.control.joint(name).following_error for name in self._names],
            watchdog_timeout=self.control.watchdog_timeout,
            stop_timeout=self.control.watchdog_stop_timeout,
            startup_timeout=self.control.watchdog_startup_timeout,
            overspeed_ratio=self.control.overspeed_ratio,
            log=self.log,
        )


def _number(value: object, interface: str, joint: str) -> float:
    """float(value) (NaN and inf kept: the safety layer names them), else CommandError."""
    if isinstance(value, str | bytes) or value is None:
        raise CommandError(f"{interface} command {value!r} for joint {joint} is not a number")
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError) as error:
        raise CommandError(f"{interface} command {value!r} for joint {joint} is not a number") from error


def _check_period(period: object) -> None:
    try:
        value = math.nan if isinstance(period, str | bytes) else float(period)
    except (TypeError, ValueError):
        value = math.nan
    if not 0.0 < value < math.inf:
        raise SafetyStopError(f"control period {period!r} is not a positive finite number of seconds")


def _current_gain(params: RobotParameters, name: str) -> float:
    """K_T * ratio * efficiency (N/A or N*m/A) of a joint or of the drill feed."""
    source = params.drill if name == FEED_JOINT else params.joint(name)
    return source.motor.torque_constant * source.transmission.ratio * source.transmission.efficiency


def _effort_limit(params: RobotParameters, name: str) -> float:
    """The URDF's <limit effort> (N or N*m) of a joint or of the drill feed."""
    return params.drill.feed_effort if name == FEED_JOINT else params.joint(name).effort_limit
