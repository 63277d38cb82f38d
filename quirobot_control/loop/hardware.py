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
"""

from __future__ import annotations

import enum
import math
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from quirobot_control.axes.limits import JointLimits
from quirobot_control.drives.interface import Drive, DriveError, DriveState
from quirobot_control.loop.control_config import ControlConfig
from quirobot_control.loop.pid import PID
from quirobot_control.loop.safety import SafetyMonitor, SafetyStopError, finite_or_nan
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
    state: dict[str, float] = field(default_factory=lambda: {"position": 0.0, "velocity": 0.0, "effort": 0.0})
    command: dict[str, float] = field(default_factory=lambda: {"position": math.nan, "velocity": 0.0})
    acceleration: float | None = None
    effort_ff: float | None = None
    last_velocity_command: float = 0.0


class QuirobotHardware:
    """See the module docstring. Build, then on_init(info) -> on_configure -> on_activate -> read/write."""

    STATE_INTERFACES = ("position", "velocity", "effort")
    COMMAND_INTERFACES = ("position", "velocity")

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
        self.stop_reason: str | None = None
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
        """Create one drive (its faults reset) and one PID per joint, and the safety layer."""
        if self.info is None:
            return self._fail("on_configure before on_init")
        dt = self.control.dt
        self.joints = []
        for name in self._names:
            settings = self.control.joint(name)
            drive = self.drive_factory(name)
            drive.reset_fault()
            gain = _current_gain(self.params, name)
            self.joints.append(_Joint(name, drive, PID(settings.gains, dt), gain, settings.effective_inertia))
        self.safety = self._safety_monitor()
        self.stop_reason = None
        self.lifecycle = LifecycleState.INACTIVE
        return CallbackReturn.SUCCESS

    def on_activate(self, previous_state: LifecycleState | None = None) -> CallbackReturn:
        """Enable the drives; commands start at the measured positions (no jump)."""
        if self.lifecycle is not LifecycleState.INACTIVE:
            return self._fail(f"on_activate in state {self.lifecycle.value}")
        try:
            for joint in self.joints:
                joint.drive.enable()
        except DriveError as error:
            self._stop_all(f"activation failed: {error}")
            return CallbackReturn.ERROR
        self._read_drives()
        measured = [j.state["position"] for j in self.joints]
        holding = self.gravity(np.array(measured)) if self.gravity is not None else np.zeros(len(measured))
        for joint, position, effort in zip(self.joints, measured, holding, strict=True):
            joint.command = {"position": position, "velocity": 0.0}
            joint.pid.reset(position, integral=float(effort) / joint.current_gain)
            joint.last_velocity_command = 0.0
        self.safety = self._safety_monitor()
        self.safety.start([j.state["position"] for j in self.joints])
        self.lifecycle = LifecycleState.ACTIVE
        return CallbackReturn.SUCCESS

    def on_deactivate(self, previous_state: LifecycleState | None = None) -> CallbackReturn:
        """Disable the drives (inverters off). A drive that fails to disable does not keep the
        others enabled: every drive is tried, then all are quick-stopped and ERROR names it."""
        failures = []
        for joint in self.joints:
            try:
                joint.drive.disable()
            except Exception as error:  # noqa: BLE001 - every other drive must still be disabled
                failures.append(f"disabling {joint.name} failed: {error}")
        if failures:
            self._stop_all("; ".join(failures))
        self.lifecycle = LifecycleState.INACTIVE
        return CallbackReturn.ERROR if failures else CallbackReturn.SUCCESS

    def on_error(self, previous_state: LifecycleState | None = None) -> CallbackReturn:
        """Quick-stop every drive; back to UNCONFIGURED (a reconfigure resets the faults)."""
        self._stop_all(self.stop_reason or "on_error")
        self.lifecycle = LifecycleState.UNCONFIGURED
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
        """Set one command interface (position, velocity) or feed-forward (acceleration, effort)."""
        target = self._joint(joint)
        if interface in ("position", "velocity"):
            target.command[interface] = finite_or_nan(value)
        elif interface == "acceleration":
            target.acceleration = finite_or_nan(value)
        elif interface == "effort":
            target.effort_ff = finite_or_nan(value)
        else:
            raise HardwareError(f"joint {joint}: no command interface {interface!r}")

    def set_commands(
        self,
        time: float,
        position: np.ndarray,
        velocity: np.ndarray,
        acceleration: np.ndarray | None = None,
        effort: np.ndarray | None = None,
    ) -> None:
        """All joints at once (arrays (n,) in joint_names order), stamped fresh at `time` s."""
        position = position.tolist() if isinstance(position, np.ndarray) else position
        velocity = velocity.tolist() if isinstance(velocity, np.ndarray) else velocity
        acceleration = acceleration.tolist() if isinstance(acceleration, np.ndarray) else acceleration
        effort = effort.tolist() if isinstance(effort, np.ndarray) else effort
        for k, joint in enumerate(self.joints):
            joint.command["position"] = position[k]
            joint.command["velocity"] = velocity[k]
            joint.acceleration = None if acceleration is None else acceleration[k]
            joint.effort_ff = None if effort is None else effort[k]
        self.command_received(time)

    def command_received(self, time: float) -> None:
        """Tell the watchdog a fresh command arrived at `time` (s, the clock given to write())."""
        if self.safety is not None:
            self.safety.note_command(time)

    # --- control cycle ------------------------------------------------------------------------
    def read(self, time: float, period: float) -> ReturnType:
        """Drive feedback -> state interfaces; a drive fault stops every drive."""
        if self.lifecycle is not LifecycleState.ACTIVE:
            return ReturnType.ERROR if self.stop_reason else ReturnType.OK
        faults = self._read_drives()
        if faults:
            self._stop_all("; ".join(faults))
            return ReturnType.ERROR
        return ReturnType.OK

    def write(self, time: float, period: float) -> ReturnType:
        """Safety filter and check, then PID + feed-forward -> current command of every drive.

        `time` (s) is the command watchdog's clock (see loop.safety.SafetyMonitor: the larger of its
        age and the `period`s counted decides); `period` (s) the control period.
        """
        if self.lifecycle is not LifecycleState.ACTIVE:
            return ReturnType.ERROR if self.stop_reason else ReturnType.OK
        joints = self.joints
        for joint in joints:
            for label, value in (("acceleration", joint.acceleration), ("effort", joint.effort_ff)):
                if value is not None and not math.isfinite(value):
                    self._stop_all(f"non-finite {label} feed-forward {value} for joint {joint.name}")
                    return ReturnType.ERROR
        measured = [j.state["position"] for j in joints]
        try:
            position, velocity = self.safety.filter(
                time,
                period,
                [j.command["position"] for j in joints],
                [j.command["velocity"] for j in joints],
                measured,
            )
            self.safety.check(position, measured)
        except SafetyStopError as stop:
            self._stop_all(stop.reason)
            return ReturnType.ERROR
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
            current = joint.pid.update(position[k], measured[k], velocity[k], effort / joint.current_gain)
            try:
                joint.drive.command_current(current)
            except DriveError as error:
                self._stop_all(str(error))
                return ReturnType.ERROR
        return ReturnType.OK

    @property
    def events(self) -> list[str]:
        return self.safety.events if self.safety else []

    @property
    def currents(self) -> np.ndarray:
        """(n,) last PID outputs, A."""
        return np.array([j.pid.output for j in self.joints])

    # --- internals ----------------------------------------------------------------------------
    def _joint(self, name: str) -> _Joint:
        for joint in self.joints:
            if joint.name == name:
                return joint
        raise HardwareError(f"no joint {name!r}; joints are {', '.join(self._names)}")

    def _read_drives(self) -> list[str]:
        faults = []
        for joint in self.joints:
            feedback = joint.drive.feedback()
            joint.state["position"] = feedback.position
            joint.state["velocity"] = feedback.velocity
            joint.state["effort"] = feedback.effort
            if feedback.state is DriveState.FAULT:
                faults.append(f"drive fault on {joint.name}: {feedback.fault}")
        return faults

    def _stop_all(self, reason: str) -> None:
        """Quick-stop every drive and record why (the first reason is kept).

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

    def _fail(self, reason: str) -> CallbackReturn:
        self.stop_reason = reason
        return CallbackReturn.ERROR

    def _safety_monitor(self) -> SafetyMonitor:
        """The safety layer on the URDF's <limit> and <safety_controller> of each joint (the
        planner's JointLimits, from the same parameters) and the control configuration's
        following-error limits and watchdog timeouts."""
        return SafetyMonitor(
            JointLimits.from_parameters(self.params).select(self._names),
            following_error=[self.control.joint(name).following_error for name in self._names],
            watchdog_timeout=self.control.watchdog_timeout,
            stop_timeout=self.control.watchdog_stop_timeout,
        )


def _current_gain(params: RobotParameters, name: str) -> float:
    """K_T * ratio * efficiency (N/A or N*m/A) of a joint or of the drill feed."""
    source = params.drill if name == FEED_JOINT else params.joint(name)
    return source.motor.torque_constant * source.transmission.ratio * source.transmission.efficiency
