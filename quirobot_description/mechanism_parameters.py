"""The arm's mechanism in the parameter file: motors, transmissions, joints, links, the frame.

Each dataclass is one kind of part, SI units; each `read_*` builds one from a `SourcedReader` over
the parameter file (parameters.load_parameters calls them), refusing a bad value by its dotted key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from quirobot_description.inertia import box_inertia, cylinder_inertia
from quirobot_description.joint_names import JOINT_NAMES, JOINT_TYPES, LINK_NAMES
from quirobot_description.sourced_yaml import SourcedReader


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
    """One driven axis (an arm joint or a tool's own axis, the drill's feed): limits, friction,
    safety-controller gains, drive train. m and N for a prismatic axis, rad and N*m for a revolute."""

    name: str
    type: str  # "prismatic" or "revolute"
    report_symbol: str  # the report's d1 .. theta5; "" for a tool's axis (not in the report)
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
    #: N or N*m, the URDF's <limit effort> when the file sets it below the drive train's peak (the
    #: drill feed's feed_effort); None: the drive train's peak (`effort_limit`).
    effort: float | None = None

    @property
    def effort_limit(self) -> float:
        """Peak joint force (N) or torque (N*m): `effort` if set, else K_T * I_max * ratio (report
        ch.6, before efficiency)."""
        if self.effort is not None:
            return self.effort
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


def read_motor(reader: SourcedReader, name: str) -> MotorParameters:
    """motors.<name>."""
    key = f"motors.{name}"
    if not isinstance(reader.raw.get("motors"), dict) or name not in reader.raw["motors"]:
        raise reader.fail(key, "missing (named by a joint or tool)")
    fields = ("resistance", "inductance", "torque_constant", "back_emf_constant", "max_current")
    values = {f: reader.number(f"{key}.{f}", positive=True) for f in fields}
    continuous = reader.number(f"{key}.continuous_current", positive=True)
    if continuous > values["max_current"]:
        raise reader.fail(
            f"{key}.continuous_current", f"{continuous} A exceeds max_current {values['max_current']} A"
        )
    return MotorParameters(
        name=name,
        continuous_current=continuous,
        rotor_inertia=reader.number(f"{key}.rotor_inertia", positive=True),
        max_speed=reader.number(f"{key}.max_speed", positive=True),
        **values,
    )


def read_transmission(reader: SourcedReader, name: str) -> TransmissionParameters:
    """transmissions.<name>."""
    key = f"transmissions.{name}"
    if not isinstance(reader.raw.get("transmissions"), dict) or name not in reader.raw["transmissions"]:
        raise reader.fail(key, "missing (named by a joint or tool)")
    efficiency = reader.number(f"{key}.efficiency", positive=True)
    if efficiency > 1.0:
        raise reader.fail(f"{key}.efficiency", f"must be in (0, 1], got {efficiency}")
    return TransmissionParameters(
        name=name,
        type=reader.text(f"{key}.type", ("ball_screw", "gearbox")),
        ratio=reader.number(f"{key}.ratio", positive=True),
        efficiency=efficiency,
    )


def read_joint(reader: SourcedReader, name: str, expected_type: str) -> JointParameters:
    """joints.<name>, of the report's kind `expected_type`."""
    key = f"joints.{name}"
    joint_type = reader.text(f"{key}.type", ("prismatic", "revolute"))
    if joint_type != expected_type:
        raise reader.fail(f"{key}.type", f"must be {expected_type} (report DH table), got {joint_type}")
    lower = reader.number(f"{key}.lower")
    upper = reader.number(f"{key}.upper")
    if not lower < upper:
        raise reader.fail(key, f"lower limit {lower} must be below upper limit {upper}")
    soft_margin = reader.number(f"{key}.soft_margin", non_negative=True)
    if 2.0 * soft_margin >= upper - lower:
        raise reader.fail(f"{key}.soft_margin", f"{soft_margin} leaves no range between the soft limits")
    return JointParameters(
        name=name,
        type=joint_type,
        report_symbol=reader.text(f"{key}.report_symbol"),
        lower=lower,
        upper=upper,
        velocity=reader.number(f"{key}.velocity", positive=True),
        acceleration=reader.number(f"{key}.acceleration", positive=True),
        jerk=reader.number(f"{key}.jerk", positive=True),
        damping=reader.number(f"{key}.damping", non_negative=True),
        friction=reader.number(f"{key}.friction", non_negative=True),
        soft_margin=soft_margin,
        k_position=reader.number(f"{key}.k_position", positive=True),
        k_velocity=reader.number(f"{key}.k_velocity", positive=True),
        motor=read_motor(reader, reader.text(f"{key}.motor")),
        transmission=read_transmission(reader, reader.text(f"{key}.transmission")),
    )


def read_link(reader: SourcedReader, name: str) -> LinkParameters:
    """links.<name>."""
    key = f"links.{name}"
    shape = reader.text(f"{key}.shape", ("box", "cylinder"))
    colour = reader.node(f"{key}.colour")
    if (
        not isinstance(colour, list)
        or len(colour) != 4
        or not all(isinstance(c, (int, float)) and 0.0 <= c <= 1.0 for c in colour)
    ):
        raise reader.fail(f"{key}.colour", f"must be 4 numbers in [0, 1] (RGBA), got {colour!r}")
    common = dict(
        name=name,
        description=reader.text(f"{key}.description"),
        shape=shape,
        origin=reader.vector(f"{key}.origin", 3),
        mass=reader.number(f"{key}.mass", positive=True),
        colour=tuple(float(c) for c in colour),
    )
    if shape == "box":
        return LinkParameters(size=reader.vector(f"{key}.size", 3, positive=True), **common)
    axis = reader.node(f"{key}").get("axis", "z")
    if axis not in ("x", "y", "z"):
        raise reader.fail(f"{key}.axis", f"must be x, y or z, got {axis!r}")
    return LinkParameters(
        radius=reader.number(f"{key}.radius", positive=True),
        length=reader.number(f"{key}.length", positive=True),
        axis=axis,
        **common,
    )


def read_arm(
    reader: SourcedReader,
) -> tuple[tuple[JointParameters, ...], tuple[LinkParameters, ...], float, float]:
    """The arm: its joints (JOINT_NAMES order), its moving links (LINK_NAMES order) and the wrist's
    DH lengths l4, l5 (m), which links 4 and 5 span."""
    kinds = zip(JOINT_NAMES, JOINT_TYPES, strict=True)
    joints = tuple(read_joint(reader, name, kind) for name, kind in kinds)
    links = tuple(read_link(reader, name) for name in LINK_NAMES)
    l4 = reader.number("kinematics.l4", positive=True)
    l5 = reader.number("kinematics.l5", positive=True)
    # Report ch.5: links 4 and 5 are cylinders spanning their DH length, centre of mass at
    # mid-link: link 4 hangs l4 down from theta4 (-z), link 5 reaches l5 along its x.
    mid_links = (
        ("wrist_yaw_link", l4, "l4", np.array([0.0, 0.0, -l4 / 2])),
        ("wrist_pitch_link", l5, "l5", np.array([l5 / 2, 0.0, 0.0])),
    )
    for link_name, length, symbol, middle in mid_links:
        link = next(link for link in links if link.name == link_name)
        if not math.isclose(link.length, length, rel_tol=1e-12):
            raise reader.fail(
                f"links.{link_name}.length",
                f"{link.length} m differs from kinematics.{symbol} = {length} m",
            )
        if not np.allclose(link.origin, middle, rtol=0.0, atol=1e-12):
            raise reader.fail(
                f"links.{link_name}.origin",
                f"{link.origin.tolist()} m is not mid-link {middle.tolist()} m "
                f"(kinematics.{symbol} = {length} m)",
            )
    return joints, links, l4, l5


def read_structure(reader: SourcedReader) -> StructureParameters:
    """structure: the fixed frame."""
    structure = StructureParameters(
        **{
            f: reader.number(f"structure.{f}", positive=True)
            for f in ("guide_section", "guide_margin", "ceiling_height", "mount_height", "density")
        },
        section_fill=reader.number("structure.section_fill", positive=True),
    )
    if structure.section_fill > 1.0:
        raise reader.fail("structure.section_fill", f"must be in (0, 1], got {structure.section_fill}")
    return structure
