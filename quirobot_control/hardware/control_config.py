"""The control configuration (config/control.yaml): PID gains per joint, safety, time steps.

Every number is a {value, unit, source} leaf; `load_control_config` validates them and raises
`ControlConfigError` (a ValueError) naming the key. `design_gains` is the pole-placement formula
that produced the gains in the file (see its header).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from quirobot_control.drives.interface import DriveMode
from quirobot_control.drives.pid import PIDGains
from quirobot_description import robot_parameters
from quirobot_description.data_files import find_data_file
from quirobot_description.file_schema import CONTROL_FILE
from quirobot_description.parameters import RobotParameters, drive_axes
from quirobot_description.sourced_yaml import SourcedReader, read_yaml_mapping


class ControlConfigError(ValueError):
    """The control configuration is missing, malformed or holds an invalid value."""


#: The control configuration shipped with the package (a data file name, see data_files).
CONTROL_CONFIG_FILE = "config/control.yaml"


@dataclass(frozen=True)
class JointControl:
    name: str
    gains: PIDGains
    effective_inertia: float  # kg or kg*m^2
    following_error: float  # m or rad: the hardware stops every drive beyond it (safety.motion_monitor)
    path_tolerance: float  # m or rad: a goal's deviation from its plan that aborts it (procedures.path_check)
    #: m or rad: how far from the measured position a controller's first command may be to take
    #: over the drives (bridge.drive_bridge's start-up handshake); farther, it is a stale command
    takeover_tolerance: float


@dataclass(frozen=True)
class ControlConfig:
    rate: float  # Hz
    physics_substeps: int
    gravity_feedforward: bool
    inverse_dynamics_feedforward: bool
    bandwidth: float  # rad/s
    integral_ratio: float
    joints: tuple[JointControl, ...]  # drive_axes() order: every drive, whichever tool is mounted
    watchdog_timeout: float  # s
    watchdog_stop_timeout: float  # s
    watchdog_startup_timeout: float  # s, activation to the first command
    overspeed_ratio: float  # a measured speed above ratio * velocity limit is a fault
    drive_mode: DriveMode = DriveMode.CSP  # the drives' mode on real motors (drive_mode.real)
    simulation_drive_mode: DriveMode = DriveMode.CST  # the closed-loop simulation's (drive_mode.simulation)

    @property
    def dt(self) -> float:
        return 1.0 / self.rate

    def joint(self, name: str) -> JointControl:
        for joint in self.joints:
            if joint.name == name:
                return joint
        raise KeyError(f"no joint {name!r} in the control configuration")


def design_gains(
    effective_inertia: float,
    current_gain: float,
    bandwidth: float,
    integral_ratio: float,
) -> tuple[float, float, float]:
    """(kp, ki, kd) placing the closed-loop poles at -w, -w, -beta*w.

    Plant M_eff x'' = K_i i (effective_inertia M_eff, current_gain K_i = K_T*ratio*efficiency).
    """
    scale = effective_inertia / current_gain
    w, beta = bandwidth, integral_ratio
    return (1 + 2 * beta) * w * w * scale, beta * w**3 * scale, (2 + beta) * w * scale


def load_control_config(
    path: str | Path | None = None, *, max_currents: dict[str, float], control_rate: float | None = None
) -> ControlConfig:
    """Read config/control.yaml (or `path`); `max_currents` (A per joint) sets each PID's output limit.

    The rate is `control_rate` (Hz; default: the shipped parameter file's drive.control_rate):
    the control configuration holds none, so the rate is declared once, in the parameter file.

    Raises ControlConfigError naming the key for a bad value, DataFileNotFoundError (a
    FileNotFoundError) naming every place looked when no control.yaml is installed.
    """
    path = Path(path) if path is not None else find_data_file(CONTROL_CONFIG_FILE)
    raw = read_yaml_mapping(path, ControlConfigError, "control configuration")
    reader = SourcedReader(raw, path.name, ControlConfigError, CONTROL_FILE)
    pole = "pole_placement"
    derivative_filter = reader.number(f"{pole}.derivative_filter", positive=True)
    joints = []
    for name in drive_axes():
        key = f"joints.{name}"
        if name not in max_currents:
            raise ControlConfigError(f"no current limit given for joint {name}")
        gains = PIDGains(
            kp=reader.number(f"{key}.kp", positive=True),
            ki=reader.number(f"{key}.ki", positive=True),
            kd=reader.number(f"{key}.kd", positive=True),
            derivative_filter=derivative_filter,
            output_limit=max_currents[name],
        )
        joints.append(
            JointControl(
                name=name,
                gains=gains,
                effective_inertia=reader.number(f"{key}.effective_inertia", positive=True),
                following_error=reader.number(f"{key}.following_error", positive=True),
                path_tolerance=reader.number(f"{key}.path_tolerance", positive=True),
                takeover_tolerance=reader.number(f"{key}.takeover_tolerance", positive=True),
            )
        )
    substeps = reader.number("physics_substeps", positive=True)
    if substeps != int(substeps):
        raise ControlConfigError(f"{path.name}: physics_substeps must be a whole number, got {substeps}")
    feedforward = raw.get("feedforward", {})
    if not isinstance(feedforward, dict) or not all(isinstance(v, bool) for v in feedforward.values()):
        raise ControlConfigError(
            f"{path.name}: feedforward must map gravity/inverse_dynamics to true or false"
        )
    return ControlConfig(
        rate=robot_parameters().drive.control_rate if control_rate is None else control_rate,
        physics_substeps=int(substeps),
        gravity_feedforward=feedforward.get("gravity", True),
        inverse_dynamics_feedforward=feedforward.get("inverse_dynamics", True),
        bandwidth=reader.number(f"{pole}.bandwidth", positive=True),
        integral_ratio=reader.number(f"{pole}.integral_ratio", positive=True),
        joints=tuple(joints),
        watchdog_timeout=reader.number("safety.watchdog_timeout", positive=True),
        watchdog_stop_timeout=reader.number("safety.watchdog_stop_timeout", positive=True),
        watchdog_startup_timeout=reader.number("safety.watchdog_startup_timeout", positive=True),
        overspeed_ratio=_overspeed_ratio(reader.number("safety.overspeed_ratio", positive=True), path.name),
        drive_mode=_drive_mode(reader, "real"),
        simulation_drive_mode=_drive_mode(reader, "simulation"),
    )


#: control.yaml's drive_mode words -> the drives' modes of operation.
DRIVE_MODES = {"csp": DriveMode.CSP, "cst": DriveMode.CST}


def _drive_mode(reader: SourcedReader, use: str) -> DriveMode:
    """drive_mode.<use>.value (csp or cst), with a source."""
    key = f"drive_mode.{use}"
    source = reader.node(f"{key}.source")
    if not isinstance(source, str) or not source.strip():
        raise reader.fail(f"{key}.source", "missing: say why this mode")
    return DRIVE_MODES[reader.text(f"{key}.value", tuple(DRIVE_MODES))]


def _overspeed_ratio(value: float, file: str) -> float:
    if value < 1.0:
        raise ControlConfigError(
            f"{file}: safety.overspeed_ratio must be >= 1 (a fault below the velocity limit), got {value}"
        )
    return value


def control_configuration(params: RobotParameters) -> ControlConfig:
    """config/control.yaml with each joint's current limit from the parameter file."""
    currents = {name: params.axis(name).motor.max_current for name in drive_axes()}
    return load_control_config(max_currents=currents, control_rate=params.drive.control_rate)
