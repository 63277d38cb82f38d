"""The tools in the parameter file (`tools.*`) and the axes each one adds to the arm's.

`DrillParameters`: the drill, whose feed (a prismatic axis along tool z, servo-driven like the
joints) is a `JointParameters` like every other driven axis; `ArthroscopeParameters`: a rigid
scope with no axis of its own. `axes_for(tool)` is the one source of axis order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from quirobot_description.inertia import cylinder_inertia, cylinder_mass
from quirobot_description.joint_names import FEED_JOINT, JOINT_NAMES
from quirobot_description.mechanism_parameters import JointParameters, read_motor, read_transmission
from quirobot_description.sourced_yaml import SourcedReader


@dataclass(frozen=True)
class DrillParameters:
    """Drill tool: a feed axis along tool z carrying spindle, chuck and bit."""

    #: The drill's own axis: the feed, a prismatic joint along tool z, servo-driven like the joints.
    feed_joint: ClassVar[str] = FEED_JOINT
    #: The tool's own commanded axes, after the arm's joints in `axes_for("drill")`.
    axes: ClassVar[tuple[str, ...]] = (feed_joint,)
    #: Where the feed is in `axes_for("drill")` (and in every (6,) or (N, 6) drill axis vector).
    feed_index: ClassVar[int] = len(JOINT_NAMES) + axes.index(feed_joint)

    #: The feed axis (tools.drill.feed_*, motor, transmission): m, m/s, N; its effort limit is
    #: feed_effort (the URDF's <limit effort>).
    feed: JointParameters
    bit_radius: float  # m
    bit_length: float  # m
    density: float  # kg/m^3

    @property
    def axis_parameters(self) -> tuple[JointParameters, ...]:
        """The parameters of each of `axes`, in that order."""
        return (self.feed,)

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
    def axis_parameters(self) -> tuple[JointParameters, ...]:
        """The parameters of each of `axes`: none."""
        return ()

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


def read_drill(reader: SourcedReader) -> DrillParameters:
    """tools.drill: the bit and the feed axis (its keys prefixed feed_, as the URDF's xacro reads them)."""
    key = "tools.drill"
    values = {
        f: reader.number(f"{key}.{f}", non_negative=(f == "feed_lower"), positive=(f != "feed_lower"))
        for f in (
            *("feed_lower", "feed_upper", "feed_velocity", "feed_acceleration", "feed_jerk"),
            *("feed_effort", "feed_damping", "bit_radius", "bit_length", "density"),
        )
    }
    motor = read_motor(reader, reader.text(f"{key}.motor"))
    transmission = read_transmission(reader, reader.text(f"{key}.transmission"))
    friction = reader.number(f"{key}.feed_friction", non_negative=True)
    soft_margin = reader.number(f"{key}.feed_soft_margin", non_negative=True)
    k_position = reader.number(f"{key}.feed_k_position", positive=True)
    k_velocity = reader.number(f"{key}.feed_k_velocity", positive=True)
    lower, upper = values["feed_lower"], values["feed_upper"]
    if not lower < upper:
        raise reader.fail(key, f"feed_lower {lower} must be below feed_upper {upper}")
    if 2.0 * soft_margin >= upper - lower:
        raise reader.fail(
            f"{key}.feed_soft_margin", f"{soft_margin} leaves no stroke between the soft limits"
        )
    feed = JointParameters(
        name=FEED_JOINT,
        type="prismatic",
        report_symbol="",
        lower=lower,
        upper=upper,
        velocity=values["feed_velocity"],
        acceleration=values["feed_acceleration"],
        jerk=values["feed_jerk"],
        damping=values["feed_damping"],
        friction=friction,
        soft_margin=soft_margin,
        k_position=k_position,
        k_velocity=k_velocity,
        motor=motor,
        transmission=transmission,
        effort=values["feed_effort"],
    )
    return DrillParameters(
        feed=feed, bit_radius=values["bit_radius"], bit_length=values["bit_length"], density=values["density"]
    )


def read_arthroscope(reader: SourcedReader) -> ArthroscopeParameters:
    """tools.arthroscope."""
    return ArthroscopeParameters(
        **{
            f: reader.number(f"tools.arthroscope.{f}", positive=True)
            for f in ("scope_radius", "scope_length", "density", "field_of_view")
        }
    )
