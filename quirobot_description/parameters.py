"""The robot's parameter file, read into typed, validated dataclasses.

The YAML (config/quirobot.yaml, see data_files.py) is the single source of truth for every
physical number; every numeric leaf is {value, unit, source}. `load_parameters` rejects a
malformed file with a `ParameterError` naming the offending key, so a bad file never yields a
half-built model. Values are SI: m, rad, kg, kg*m^2, N, N*m, V, A, ohm, H.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from quirobot_description.data_files import find_data_file
from quirobot_description.drilling_parameters import DrillingParameters, read_drilling
from quirobot_description.file_schema import PARAMETER_FILE
from quirobot_description.geometric_errors import (
    CalibrationParameters,
    GeometricTolerances,
    RegistrationParameters,
    read_calibration_parameters,
    read_geometric_tolerances,
    read_registration_parameters,
)
from quirobot_description.inertia import box_inertia, cylinder_inertia, cylinder_mass
from quirobot_description.mesh_parameters import MeshParameters, read_meshes
from quirobot_description.plant_parameters import PlantParameters, read_plant
from quirobot_description.sourced_yaml import Quantity, SourcedReader, read_yaml_mapping

__all__ = ["ParameterError", "Quantity", "RobotParameters", "axes_for", "drive_axes", "load_parameters"]

#: Shipped with the package (package data and share/quirobot/config).
DEFAULT_PARAMETER_FILE = find_data_file("config/quirobot.yaml")

#: Joint names in the report's order: d1, d2, d3, theta4, theta5.
JOINT_NAMES = ("gantry_x", "gantry_y", "gantry_z", "wrist_yaw", "wrist_pitch")
#: Moving links, each the child of the joint at the same index of JOINT_NAMES.
LINK_NAMES = ("x_carriage", "y_carriage", "z_ram", "wrist_yaw_link", "wrist_pitch_link")


class ParameterError(ValueError):
    """The parameter file is missing, malformed, or holds an invalid value (named in the message)."""


@dataclass(frozen=True)
class MotorParameters:
    """Brushless DC motor, equivalent DC (q-axis) model. SI units."""

    name: str
    resistance: float  # ohm
    inductance: float  # H
    torque_constant: float  # N*m/A
    back_emf_constant: float  # V*s/rad
    max_current: float  # A
    continuous_current: float  # A
    rotor_inertia: float  # kg*m^2
    max_speed: float  # rad/s

    @property
    def peak_torque(self) -> float:
        """K_T * I_max, N*m at the motor shaft."""
        return self.torque_constant * self.max_current

    @property
    def continuous_torque(self) -> float:
        """K_T * I_continuous, N*m at the motor shaft."""
        return self.torque_constant * self.continuous_current

    @property
    def electrical_time_constant(self) -> float:
        """L / R in s."""
        return self.inductance / self.resistance


@dataclass(frozen=True)
class TransmissionParameters:
    """Motor-to-joint transmission: motor angle = ratio * joint coordinate.

    `ratio` is rad/m for a ball screw (prismatic joint) and dimensionless for a gearbox.
    """

    name: str
    type: str  # "ball_screw" or "gearbox"
    ratio: float
    efficiency: float

    @property
    def lead(self) -> float:
        """Joint travel per motor revolution (m/rev for a screw, rad/rev for a gearbox)."""
        return 2.0 * math.pi / self.ratio


@dataclass(frozen=True)
class JointParameters:
    """One actuated joint: limits, friction, safety-controller gains, drive train."""

    name: str
    type: str  # "prismatic" or "revolute"
    report_symbol: str
    lower: float
    upper: float
    velocity: float
    acceleration: float
    jerk: float
    damping: float
    friction: float
    soft_margin: float
    k_position: float
    k_velocity: float
    motor: MotorParameters
    transmission: TransmissionParameters

    @property
    def effort_limit(self) -> float:
        """Peak joint force (N) or torque (N*m): K_T * I_max * ratio (report ch.6, before efficiency)."""
        return self.motor.peak_torque * self.transmission.ratio

    @property
    def soft_lower(self) -> float:
        return self.lower + self.soft_margin

    @property
    def soft_upper(self) -> float:
        return self.upper - self.soft_margin


@dataclass(frozen=True)
class LinkParameters:
    """A moving link modelled as one homogeneous solid (box or cylinder)."""

    name: str
    description: str
    shape: str  # "box" or "cylinder"
    origin: np.ndarray  # (3,) shape centre = centre of mass in the link frame, m
    mass: float  # kg
    colour: tuple[float, float, float, float]
    size: np.ndarray | None = None  # (3,) box edges, m
    radius: float | None = None  # cylinder, m
    length: float | None = None  # cylinder, m
    axis: str = "z"  # cylinder axis in the link frame

    @property
    def inertia(self) -> np.ndarray:
        """(3, 3) inertia about the centre of mass, in link-frame axes, kg*m^2."""
        if self.shape == "box":
            return box_inertia(self.mass, self.size)
        return cylinder_inertia(self.mass, self.radius, self.length, self.axis)


@dataclass(frozen=True)
class StructureParameters:
    """Fixed gantry frame: drawing, collision, and the mass simulators need (never moves)."""

    guide_section: float
    guide_margin: float
    ceiling_height: float
    mount_height: float  # m, guide plane (report frame 0') above the floor, for simulation worlds
    density: float  # kg/m^3, material of the profiles
    section_fill: float  # solid fraction of a profile's square section, in (0, 1]


@dataclass(frozen=True)
class DriveParameters:
    """Servo-drive electronics shared by every axis (design assumptions, see the YAML)."""

    bus_voltage: float  # V
    voltage_headroom: float  # maximum duty cycle, 0..1
    current_loop_bandwidth: float  # rad/s
    current_loop_rate: float  # Hz
    encoder_counts_per_rev: int
    control_rate: float  # Hz
    brake_engage_time: float  # s from the drive ceasing to drive to the holding brake holding
    brake_holding_ratio: float  # holding-brake torque / motor peak torque K_T*I_max
    #: axis (drive_axes()) -> the drive's quick-stop ramp (CiA 402 0x6085), m/s^2 or rad/s^2
    quick_stop_deceleration: dict[str, float] = field(default_factory=dict)
    #: s without a command from the master before an enabled drive stops itself (0x1016)
    master_timeout: float = math.inf


#: CiA 402 homing methods (0x6098) the drives run: limit switch without index pulse, and the
#: direction each searches in (17: negative limit switch, 18: positive limit switch).
HOMING_METHOD_DIRECTIONS = {17: -1, 18: 1}


@dataclass(frozen=True)
class HomingParameters:
    """One axis's CiA 402 homing: m, m/s, m/s^2 (prismatic, the feed) or rad, rad/s, rad/s^2."""

    method: int  # 0x6098, a key of HOMING_METHOD_DIRECTIONS
    switch_position: float  # where the limit switch becomes active (joint coordinate)
    switch_speed: float  # 0x6099:1, speed of the search for the switch, > 0
    zero_speed: float  # 0x6099:2, speed off the switch to its falling edge, > 0
    acceleration: float  # 0x609A, > 0
    home_offset: float  # 0x607C, the position the drive assigns to the switch's falling edge

    @property
    def direction(self) -> int:
        """-1 or +1: the sign of the search motion (towards the switch)."""
        return HOMING_METHOD_DIRECTIONS[self.method]


@dataclass(frozen=True)
class DrillParameters:
    """Drill tool: a feed axis along tool z carrying spindle, chuck and bit."""

    #: The drill's own axis: the feed, a prismatic joint along tool z, servo-driven like the joints.
    feed_joint: ClassVar[str] = "drill_feed"
    #: The tool's own commanded axes, after the arm's joints in `axes_for("drill")`.
    axes: ClassVar[tuple[str, ...]] = (feed_joint,)
    #: Where the feed is in `axes_for("drill")` (and in every (6,) or (N, 6) drill axis vector).
    feed_index: ClassVar[int] = len(JOINT_NAMES) + axes.index(feed_joint)

    feed_lower: float  # m
    feed_upper: float  # m
    feed_velocity: float  # m/s
    feed_acceleration: float  # m/s^2
    feed_jerk: float  # m/s^3
    feed_effort: float  # N
    feed_damping: float  # N*s/m
    bit_radius: float  # m
    bit_length: float  # m
    density: float  # kg/m^3
    motor: MotorParameters
    transmission: TransmissionParameters
    feed_friction: float  # N, Coulomb friction of the feed axis
    feed_soft_margin: float  # m, safety_controller soft stop inside each end of the stroke
    feed_k_position: float  # 1/s, safety_controller gain
    feed_k_velocity: float  # N*s/m, safety_controller effort gain

    # The feed axis under JointParameters' names, so that `RobotParameters.axis(name)` reads the
    # same for every driven axis (limits, drives, the hardware component: no branch on the tool).
    @property
    def name(self) -> str:
        return self.feed_joint

    @property
    def lower(self) -> float:
        return self.feed_lower

    @property
    def upper(self) -> float:
        return self.feed_upper

    @property
    def soft_lower(self) -> float:
        return self.feed_lower + self.feed_soft_margin

    @property
    def soft_upper(self) -> float:
        return self.feed_upper - self.feed_soft_margin

    @property
    def velocity(self) -> float:
        return self.feed_velocity

    @property
    def acceleration(self) -> float:
        return self.feed_acceleration

    @property
    def jerk(self) -> float:
        return self.feed_jerk

    @property
    def damping(self) -> float:
        return self.feed_damping

    @property
    def k_position(self) -> float:
        return self.feed_k_position

    @property
    def effort_limit(self) -> float:
        """The feed's force limit, N (feed_effort: the URDF's <limit effort>)."""
        return self.feed_effort

    @property
    def bit_mass(self) -> float:
        """Mass in kg of the moving spindle-chuck-bit cylinder, from geometry and density."""
        return cylinder_mass(self.density, self.bit_radius, self.bit_length)

    @property
    def bit_inertia(self) -> np.ndarray:
        """(3, 3) inertia about its centre, axis along tool z, kg*m^2."""
        return cylinder_inertia(self.bit_mass, self.bit_radius, self.bit_length, "z")


@dataclass(frozen=True)
class ArthroscopeParameters:
    """Arthroscope tool: a rigid scope on tool0, no axis of its own."""

    #: The tool's own commanded axes: none (the arm's five joints are all `axes_for("arthroscope")`).
    axes: ClassVar[tuple[str, ...]] = ()

    scope_radius: float  # m
    scope_length: float  # m
    density: float  # kg/m^3
    field_of_view: float  # rad

    @property
    def scope_mass(self) -> float:
        return cylinder_mass(self.density, self.scope_radius, self.scope_length)

    @property
    def scope_inertia(self) -> np.ndarray:
        return cylinder_inertia(self.scope_mass, self.scope_radius, self.scope_length, "z")


#: The tools (urdf.TOOLS but "none") by name: each one's parameters class says its own `axes`.
TOOL_PARAMETERS: dict[str, type[DrillParameters] | type[ArthroscopeParameters]] = {
    "drill": DrillParameters,
    "arthroscope": ArthroscopeParameters,
}


def axes_for(tool: str) -> tuple[str, ...]:
    """The commanded axes with `tool` mounted ("drill", "arthroscope" or "none"): the arm's joints
    (JOINT_NAMES, report order), then the tool's own axes. One order for the planner, the hardware
    component, the drives and the CAN buses: the order of every axis vector, shape (n,) or (N, n)."""
    if tool == "none":
        return JOINT_NAMES
    if tool not in TOOL_PARAMETERS:
        raise KeyError(f"no tool named {tool!r}; tools are {', '.join(TOOL_PARAMETERS)} or none")
    return (*JOINT_NAMES, *TOOL_PARAMETERS[tool].axes)


def drive_axes() -> tuple[str, ...]:
    """Every axis with a servo drive, whichever tool is mounted: the joints, then each tool's own
    axes (TOOL_PARAMETERS order). The parameter file configures each one's drive (CAN node id and
    bus, homing, quick stop), so that a tool change needs no other file."""
    return tuple(dict.fromkeys(axis for tool in TOOL_PARAMETERS for axis in axes_for(tool)))


@dataclass(frozen=True)
class ReportModelParameters:
    """The report's own dynamic model (lumped link 5, its inertia formula, g = 9.8)."""

    gravity: float
    carriage_mass: float
    link4_mass: float
    link5_mass: float
    link4_radius: float
    link5_radius: float
    prismatic_damping: float
    revolute_damping: float
    transmission_efficiency: float


@dataclass(frozen=True)
class SizingParameters:
    """The servo-sizing study (report ch.6 method): trapezoid timing, safety factor, duty cycle."""

    acceleration_time: float  # s
    cruise_time: float  # s
    deceleration_time: float  # s
    safety_factor: float  # >= 1
    dwell_time: float  # s, hold between moves in the duty cycle
    search_poses: int  # poses sampled in the worst-pose search


@dataclass(frozen=True)
class CanopenParameters:
    """The CANopen bus of the servo drives (CiA 301 / CiA 402), see quirobot_control.drives.canopen_master."""

    node_ids: dict[str, int]  # axis name (drive_axes()) -> node id, 1..127, all different
    bitrate: int  # bit/s
    sync_period: float  # s, one SYNC (and one PDO exchange) per period
    feedback_timeout_periods: int  # SYNC periods without a TPDO before a "feedback timeout" fault
    transition_timeout: float  # s, allowed for a CiA 402 state change (enable, fault reset)
    channels: dict[str, str]  # axis name -> CAN bus (SocketCAN interface name) it is on
    master_node_id: int = 127  # the master's node id: its heartbeat is 0x700 + id (CiA 301)
    heartbeat_period: float = 0.004  # s, the master's producer heartbeat (its loop sends it)
    sync_loss_periods: int = 5  # SYNC periods without a SYNC after which a drive stops itself

    @property
    def feedback_timeout(self) -> float:
        """Time without feedback (s) that faults a drive: feedback_timeout_periods * sync_period."""
        return self.feedback_timeout_periods * self.sync_period

    @property
    def channel_names(self) -> tuple[str, ...]:
        """The CAN buses, in the order of their first axis."""
        return tuple(dict.fromkeys(self.channels[axis] for axis in drive_axes()))

    def axes_on(self, channel: str) -> tuple[str, ...]:
        """The axes on one CAN bus, in drive_axes() order."""
        return tuple(axis for axis in drive_axes() if self.channels[axis] == channel)


@dataclass(frozen=True)
class RobotParameters:
    """Everything the parameter file says, validated. Build with `load_parameters`."""

    path: Path
    gravity: float  # m/s^2
    l4: float  # m
    l5: float  # m
    joints: tuple[JointParameters, ...]  # in JOINT_NAMES order
    links: tuple[LinkParameters, ...]  # in LINK_NAMES order
    structure: StructureParameters
    motors: dict[str, MotorParameters]
    transmissions: dict[str, TransmissionParameters]
    drive: DriveParameters
    drill: DrillParameters
    arthroscope: ArthroscopeParameters
    report_model: ReportModelParameters
    sizing: SizingParameters
    canopen: CanopenParameters
    plant: PlantParameters  # the realistic plant (plant_parameters.py)
    geometric: GeometricTolerances  # the machine's geometric errors' tolerances (geometric_errors.py)
    calibration: CalibrationParameters  # the kinematic calibration campaign (geometric_errors.py)
    registration: RegistrationParameters  # patient registration (geometric_errors.py)
    drilling: DrillingParameters  # the spindle and drilling process safety (drilling_parameters.py)
    meshes: MeshParameters  # the visual meshes' own dimensions (mesh_parameters.py)
    homing: dict[str, HomingParameters]  # axis (drive_axes()) -> its homing
    homing_order: tuple[str, ...]  # every axis of drive_axes() once, homed one after the other in this order
    quantities: dict[str, Quantity] = field(repr=False)  # dotted key -> quantity, for tracing

    def joint(self, name: str) -> JointParameters:
        for joint in self.joints:
            if joint.name == name:
                return joint
        raise KeyError(f"no joint named {name!r}; joints are {', '.join(JOINT_NAMES)}")

    def axis(self, name: str) -> JointParameters | DrillParameters:
        """The parameters of a driven axis (drive_axes()): its joint's, or those of the tool whose
        own axis it is (both give .motor and .transmission)."""
        for tool in TOOL_PARAMETERS:  # the fields named as the tools
            if name in TOOL_PARAMETERS[tool].axes:
                return getattr(self, tool)
        if name in JOINT_NAMES:
            return self.joint(name)
        raise KeyError(f"no axis named {name!r}; axes are {', '.join(drive_axes())}")

    def link(self, name: str) -> LinkParameters:
        for link in self.links:
            if link.name == name:
                return link
        raise KeyError(f"no link named {name!r}; links are {', '.join(LINK_NAMES)}")

    @property
    def lower_limits(self) -> np.ndarray:
        """(5,) lower joint limits, m and rad."""
        return np.array([j.lower for j in self.joints])

    @property
    def upper_limits(self) -> np.ndarray:
        """(5,) upper joint limits, m and rad."""
        return np.array([j.upper for j in self.joints])

    @property
    def velocity_limits(self) -> np.ndarray:
        return np.array([j.velocity for j in self.joints])

    @property
    def acceleration_limits(self) -> np.ndarray:
        return np.array([j.acceleration for j in self.joints])

    @property
    def jerk_limits(self) -> np.ndarray:
        return np.array([j.jerk for j in self.joints])

    @property
    def effort_limits(self) -> np.ndarray:
        return np.array([j.effort_limit for j in self.joints])

    @property
    def damping(self) -> np.ndarray:
        """(5,) viscous friction, N*s/m and N*m*s/rad."""
        return np.array([j.damping for j in self.joints])


def load_parameters(path: str | Path | None = None) -> RobotParameters:
    """Read and validate the parameter file (default: the one shipped with the package)."""
    path = Path(path) if path is not None else DEFAULT_PARAMETER_FILE
    raw = read_yaml_mapping(path, ParameterError, "parameter file", as_xacro=True)
    return _Reader(raw, path).robot()


class _Reader(SourcedReader):
    """Walks the raw YAML, building the dataclasses; every leaf is recorded with its dotted key."""

    def __init__(self, raw: dict[str, Any], path: Path) -> None:
        super().__init__(raw, path.name, ParameterError, PARAMETER_FILE)
        self.path = path

    def motor(self, name: str) -> MotorParameters:
        key = f"motors.{name}"
        if not isinstance(self.raw.get("motors"), dict) or name not in self.raw["motors"]:
            raise self.fail(key, "missing (named by a joint or tool)")
        fields = ("resistance", "inductance", "torque_constant", "back_emf_constant", "max_current")
        values = {f: self.number(f"{key}.{f}", positive=True) for f in fields}
        continuous = self.number(f"{key}.continuous_current", positive=True)
        if continuous > values["max_current"]:
            raise self.fail(
                f"{key}.continuous_current", f"{continuous} A exceeds max_current {values['max_current']} A"
            )
        return MotorParameters(
            name=name,
            continuous_current=continuous,
            rotor_inertia=self.number(f"{key}.rotor_inertia", positive=True),
            max_speed=self.number(f"{key}.max_speed", positive=True),
            **values,
        )

    def transmission(self, name: str) -> TransmissionParameters:
        key = f"transmissions.{name}"
        if not isinstance(self.raw.get("transmissions"), dict) or name not in self.raw["transmissions"]:
            raise self.fail(key, "missing (named by a joint or tool)")
        efficiency = self.number(f"{key}.efficiency", positive=True)
        if efficiency > 1.0:
            raise self.fail(f"{key}.efficiency", f"must be in (0, 1], got {efficiency}")
        return TransmissionParameters(
            name=name,
            type=self.text(f"{key}.type", ("ball_screw", "gearbox")),
            ratio=self.number(f"{key}.ratio", positive=True),
            efficiency=efficiency,
        )

    def joint(self, name: str, expected_type: str) -> JointParameters:
        key = f"joints.{name}"
        joint_type = self.text(f"{key}.type", ("prismatic", "revolute"))
        if joint_type != expected_type:
            raise self.fail(f"{key}.type", f"must be {expected_type} (report DH table), got {joint_type}")
        lower = self.number(f"{key}.lower")
        upper = self.number(f"{key}.upper")
        if not lower < upper:
            raise self.fail(key, f"lower limit {lower} must be below upper limit {upper}")
        soft_margin = self.number(f"{key}.soft_margin", non_negative=True)
        if 2.0 * soft_margin >= upper - lower:
            raise self.fail(f"{key}.soft_margin", f"{soft_margin} leaves no range between the soft limits")
        return JointParameters(
            name=name,
            type=joint_type,
            report_symbol=self.text(f"{key}.report_symbol"),
            lower=lower,
            upper=upper,
            velocity=self.number(f"{key}.velocity", positive=True),
            acceleration=self.number(f"{key}.acceleration", positive=True),
            jerk=self.number(f"{key}.jerk", positive=True),
            damping=self.number(f"{key}.damping", non_negative=True),
            friction=self.number(f"{key}.friction", non_negative=True),
            soft_margin=soft_margin,
            k_position=self.number(f"{key}.k_position", positive=True),
            k_velocity=self.number(f"{key}.k_velocity", positive=True),
            motor=self.motor(self.text(f"{key}.motor")),
            transmission=self.transmission(self.text(f"{key}.transmission")),
        )

    def link(self, name: str) -> LinkParameters:
        key = f"links.{name}"
        shape = self.text(f"{key}.shape", ("box", "cylinder"))
        colour = self.node(f"{key}.colour")
        if (
            not isinstance(colour, list)
            or len(colour) != 4
            or not all(isinstance(c, (int, float)) and 0.0 <= c <= 1.0 for c in colour)
        ):
            raise self.fail(f"{key}.colour", f"must be 4 numbers in [0, 1] (RGBA), got {colour!r}")
        common = dict(
            name=name,
            description=self.text(f"{key}.description"),
            shape=shape,
            origin=self.vector(f"{key}.origin", 3),
            mass=self.number(f"{key}.mass", positive=True),
            colour=tuple(float(c) for c in colour),
        )
        if shape == "box":
            return LinkParameters(size=self.vector(f"{key}.size", 3, positive=True), **common)
        axis = self.node(f"{key}").get("axis", "z")
        if axis not in ("x", "y", "z"):
            raise self.fail(f"{key}.axis", f"must be x, y or z, got {axis!r}")
        return LinkParameters(
            radius=self.number(f"{key}.radius", positive=True),
            length=self.number(f"{key}.length", positive=True),
            axis=axis,
            **common,
        )

    def sizing(self) -> SizingParameters:
        key = "sizing"
        safety_factor = self.number(f"{key}.safety_factor", positive=True)
        if safety_factor < 1.0:
            raise self.fail(f"{key}.safety_factor", f"must be >= 1, got {safety_factor}")
        poses = self.number(f"{key}.search_poses", positive=True)
        if poses != int(poses):
            raise self.fail(f"{key}.search_poses", f"must be a whole number, got {poses}")
        return SizingParameters(
            acceleration_time=self.number(f"{key}.acceleration_time", positive=True),
            cruise_time=self.number(f"{key}.cruise_time", non_negative=True),
            deceleration_time=self.number(f"{key}.deceleration_time", positive=True),
            safety_factor=safety_factor,
            dwell_time=self.number(f"{key}.dwell_time", non_negative=True),
            search_poses=int(poses),
        )

    def canopen(self) -> CanopenParameters:
        key = "canopen"
        node_ids = {axis: self.whole(f"{key}.node_ids.{axis}", 1, 127) for axis in drive_axes()}
        extra = set(self.node(f"{key}.node_ids")) - set(drive_axes())
        if extra:
            axes = ", ".join(drive_axes())
            raise self.fail(f"{key}.node_ids", f"unknown axes {sorted(extra)}; axes are {axes}")
        if len(set(node_ids.values())) != len(node_ids):
            raise self.fail(f"{key}.node_ids", f"node ids must all differ, got {node_ids}")
        master_node_id = self.whole(f"{key}.master_node_id", 1, 127)
        if master_node_id in node_ids.values():
            raise self.fail(f"{key}.master_node_id", f"{master_node_id} is a drive's node id too")
        channels = {axis: self.text(f"{key}.channels.{axis}") for axis in drive_axes()}
        extra = set(self.node(f"{key}.channels")) - set(drive_axes())
        if extra:
            raise self.fail(f"{key}.channels", f"unknown axes {sorted(extra)}")
        for axis, channel in channels.items():
            if not channel.strip():
                raise self.fail(f"{key}.channels.{axis}", "must name a CAN interface, got an empty string")
        return CanopenParameters(
            channels=channels,
            node_ids=node_ids,
            bitrate=self.whole(f"{key}.bitrate", 1, 1_000_000),
            sync_period=self.number(f"{key}.sync_period", positive=True),
            feedback_timeout_periods=self.whole(f"{key}.feedback_timeout_periods", 1, 1_000_000),
            transition_timeout=self.number(f"{key}.transition_timeout", positive=True),
            master_node_id=master_node_id,
            heartbeat_period=self.number(f"{key}.heartbeat_period", positive=True),
            sync_loss_periods=self.whole(f"{key}.sync_loss_periods", 1, 1_000_000),
        )

    def homing_axis(self, axis: str, lower: float, upper: float) -> HomingParameters:
        """One axis's homing; its switch inside the travel [lower, upper], reached without overtravel."""
        key = f"homing.{axis}"
        method = self.whole(f"{key}.method", 1, 35)
        if method not in HOMING_METHOD_DIRECTIONS:
            methods = ", ".join(str(m) for m in HOMING_METHOD_DIRECTIONS)
            raise self.fail(
                f"{key}.method", f"the drives run the limit-switch methods {methods}, got {method}"
            )
        homing = HomingParameters(
            method=method,
            switch_position=self.number(f"{key}.switch_position"),
            switch_speed=self.number(f"{key}.switch_speed", positive=True),
            zero_speed=self.number(f"{key}.zero_speed", positive=True),
            acceleration=self.number(f"{key}.acceleration", positive=True),
            home_offset=self.number(f"{key}.home_offset"),
        )
        if homing.zero_speed > homing.switch_speed:
            raise self.fail(
                f"{key}.zero_speed", f"{homing.zero_speed} exceeds switch_speed {homing.switch_speed}"
            )
        # Stopping from the search speed once the switch is hit must not reach the end of travel.
        end = lower if homing.direction < 0 else upper
        room = abs(end - homing.switch_position)
        overtravel = homing.switch_speed**2 / (2.0 * homing.acceleration)
        if not lower < homing.switch_position < upper or overtravel >= room:
            raise self.fail(
                f"{key}.switch_position",
                f"{homing.switch_position} must lie inside the travel [{lower}, {upper}] with room to stop "
                f"from switch_speed ({overtravel:.3g} needed, {room:.3g} to the end)",
            )
        return homing

    def homing(self, joints: tuple[JointParameters, ...], drill: DrillParameters):
        ranges = {j.name: (j.lower, j.upper) for j in joints} | {
            drill.feed_joint: (drill.feed_lower, drill.feed_upper)
        }
        axes = drive_axes()
        homing = {axis: self.homing_axis(axis, *ranges[axis]) for axis in axes}
        order = self.node("homing.order")
        if not isinstance(order, list) or sorted(map(str, order)) != sorted(axes) or len(order) != len(axes):
            raise self.fail("homing.order", f"must list every axis once ({', '.join(axes)}), got {order!r}")
        return homing, tuple(order)

    def robot(self) -> RobotParameters:
        joint_types = ("prismatic",) * 3 + ("revolute",) * 2
        joints = tuple(self.joint(name, kind) for name, kind in zip(JOINT_NAMES, joint_types, strict=True))
        links = tuple(self.link(name) for name in LINK_NAMES)
        l4 = self.number("kinematics.l4", positive=True)
        l5 = self.number("kinematics.l5", positive=True)
        # Report ch.5: links 4 and 5 are cylinders spanning their DH length, centre of mass at
        # mid-link: link 4 hangs l4 down from theta4 (-z), link 5 reaches l5 along its x.
        mid_links = (
            ("wrist_yaw_link", l4, "l4", np.array([0.0, 0.0, -l4 / 2])),
            ("wrist_pitch_link", l5, "l5", np.array([l5 / 2, 0.0, 0.0])),
        )
        for link_name, length, symbol, middle in mid_links:
            link = next(link for link in links if link.name == link_name)
            if not math.isclose(link.length, length, rel_tol=1e-12):
                raise self.fail(
                    f"links.{link_name}.length",
                    f"{link.length} m differs from kinematics.{symbol} = {length} m",
                )
            if not np.allclose(link.origin, middle, rtol=0.0, atol=1e-12):
                raise self.fail(
                    f"links.{link_name}.origin",
                    f"{link.origin.tolist()} m is not mid-link {middle.tolist()} m "
                    f"(kinematics.{symbol} = {length} m)",
                )
        drill_key = "tools.drill"
        drill = DrillParameters(
            **{
                f: self.number(
                    f"{drill_key}.{f}", non_negative=(f == "feed_lower"), positive=(f != "feed_lower")
                )
                for f in (
                    "feed_lower",
                    "feed_upper",
                    "feed_velocity",
                    "feed_acceleration",
                    "feed_jerk",
                    "feed_effort",
                    "feed_damping",
                    "bit_radius",
                    "bit_length",
                    "density",
                )
            },
            motor=self.motor(self.text(f"{drill_key}.motor")),
            transmission=self.transmission(self.text(f"{drill_key}.transmission")),
            feed_friction=self.number(f"{drill_key}.feed_friction", non_negative=True),
            feed_soft_margin=self.number(f"{drill_key}.feed_soft_margin", non_negative=True),
            feed_k_position=self.number(f"{drill_key}.feed_k_position", positive=True),
            feed_k_velocity=self.number(f"{drill_key}.feed_k_velocity", positive=True),
        )
        if not drill.feed_lower < drill.feed_upper:
            raise self.fail(
                drill_key, f"feed_lower {drill.feed_lower} must be below feed_upper {drill.feed_upper}"
            )
        if 2.0 * drill.feed_soft_margin >= drill.feed_upper - drill.feed_lower:
            raise self.fail(
                f"{drill_key}.feed_soft_margin",
                f"{drill.feed_soft_margin} leaves no stroke between the soft limits",
            )
        arthroscope = ArthroscopeParameters(
            **{
                f: self.number(f"tools.arthroscope.{f}", positive=True)
                for f in ("scope_radius", "scope_length", "density", "field_of_view")
            }
        )
        report_key = "report_model"
        report_model = ReportModelParameters(
            gravity=self.number(f"{report_key}.gravity", positive=True),
            carriage_mass=self.number(f"{report_key}.carriage_mass", positive=True),
            link4_mass=self.number(f"{report_key}.link4_mass", non_negative=True),
            link5_mass=self.number(f"{report_key}.link5_mass", positive=True),
            link4_radius=self.number(f"{report_key}.link4_radius", positive=True),
            link5_radius=self.number(f"{report_key}.link5_radius", positive=True),
            prismatic_damping=self.number(f"{report_key}.prismatic_damping", non_negative=True),
            revolute_damping=self.number(f"{report_key}.revolute_damping", non_negative=True),
            transmission_efficiency=self.number(f"{report_key}.transmission_efficiency", positive=True),
        )
        drive_key = "drive"
        headroom = self.number(f"{drive_key}.voltage_headroom", positive=True)
        if headroom > 1.0:
            raise self.fail(f"{drive_key}.voltage_headroom", f"must be in (0, 1], got {headroom}")
        counts = self.number(f"{drive_key}.encoder_counts_per_rev", positive=True)
        if counts != int(counts):
            raise self.fail(f"{drive_key}.encoder_counts_per_rev", f"must be a whole number, got {counts}")
        drive = DriveParameters(
            bus_voltage=self.number(f"{drive_key}.bus_voltage", positive=True),
            voltage_headroom=headroom,
            current_loop_bandwidth=self.number(f"{drive_key}.current_loop_bandwidth", positive=True),
            current_loop_rate=self.number(f"{drive_key}.current_loop_rate", positive=True),
            encoder_counts_per_rev=int(counts),
            control_rate=self.number(f"{drive_key}.control_rate", positive=True),
            brake_engage_time=self.number(f"{drive_key}.brake_engage_time", positive=True),
            brake_holding_ratio=self.number(f"{drive_key}.brake_holding_ratio", positive=True),
            quick_stop_deceleration={
                axis: self.number(f"{drive_key}.quick_stop_deceleration.{axis}", positive=True)
                for axis in drive_axes()
            },
            master_timeout=self.number(f"{drive_key}.master_timeout", positive=True),
        )
        structure = StructureParameters(
            **{
                f: self.number(f"structure.{f}", positive=True)
                for f in ("guide_section", "guide_margin", "ceiling_height", "mount_height", "density")
            },
            section_fill=self.number("structure.section_fill", positive=True),
        )
        if structure.section_fill > 1.0:
            raise self.fail("structure.section_fill", f"must be in (0, 1], got {structure.section_fill}")
        homing, homing_order = self.homing(joints, drill)
        motors = {name: self.motor(name) for name in (self.raw.get("motors") or {})}
        transmissions = {name: self.transmission(name) for name in (self.raw.get("transmissions") or {})}
        return RobotParameters(
            path=self.path,
            gravity=self.number("gravity", positive=True),
            l4=l4,
            l5=l5,
            joints=joints,
            links=links,
            structure=structure,
            motors=motors,
            transmissions=transmissions,
            drive=drive,
            drill=drill,
            arthroscope=arthroscope,
            report_model=report_model,
            sizing=self.sizing(),
            canopen=self.canopen(),
            plant=read_plant(self),
            geometric=read_geometric_tolerances(self),
            calibration=read_calibration_parameters(self),
            registration=read_registration_parameters(self),
            drilling=read_drilling(self),
            meshes=read_meshes(self),
            homing=homing,
            homing_order=homing_order,
            quantities=dict(self.quantities),
        )
