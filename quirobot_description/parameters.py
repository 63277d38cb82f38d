"""The robot's parameter file, read into typed, validated dataclasses.

The YAML (quirobot_description/quirobot.yaml, see data_files.py) is the single source of truth for every
physical number; every numeric leaf is {value, unit, source}. `load_parameters` rejects a
malformed file with a `ParameterError` naming the offending key, so a bad file never yields a
half-built model. Values are SI: m, rad, kg, kg*m^2, N, N*m, V, A, ohm, H.

`RobotParameters` gathers every section; each section's dataclasses and reader live with their
concern: mechanism_parameters (motors, transmissions, joints, links, the frame), tool_parameters
(the drill and its feed, the arthroscope, `axes_for`), drive_parameters (the drives' electronics,
homing, CANopen), plant_parameters, geometric_errors, drilling_parameters, mesh_parameters.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from quirobot_description.data_files import find_data_file
from quirobot_description.drilling_parameters import DrillingParameters, read_drilling
from quirobot_description.drive_parameters import (
    HOMING_METHOD_DIRECTIONS,
    CanopenParameters,
    DriveParameters,
    HomingParameters,
    read_canopen,
    read_drive,
    read_homing,
)
from quirobot_description.file_schema import PARAMETER_FILE
from quirobot_description.geometric_errors import (
    CalibrationParameters,
    GeometricTolerances,
    RegistrationParameters,
    read_calibration_parameters,
    read_geometric_tolerances,
    read_registration_parameters,
)
from quirobot_description.joint_names import JOINT_NAMES, LINK_NAMES
from quirobot_description.mechanism_parameters import (
    JointParameters,
    LinkParameters,
    MotorParameters,
    StructureParameters,
    TransmissionParameters,
    read_arm,
    read_motor,
    read_structure,
    read_transmission,
)
from quirobot_description.mesh_parameters import MeshParameters, read_meshes
from quirobot_description.plant_parameters import PlantParameters, read_plant
from quirobot_description.sourced_yaml import Quantity, SourcedReader, read_yaml_mapping
from quirobot_description.tool_parameters import (
    TOOL_PARAMETERS,
    ArthroscopeParameters,
    DrillParameters,
    axes_for,
    drive_axes,
    read_arthroscope,
    read_drill,
)

__all__ = [
    "HOMING_METHOD_DIRECTIONS",
    "JOINT_NAMES",
    "LINK_NAMES",
    "TOOL_PARAMETERS",
    "ArthroscopeParameters",
    "CanopenParameters",
    "DrillParameters",
    "DriveParameters",
    "HomingParameters",
    "JointParameters",
    "LinkParameters",
    "MotorParameters",
    "ParameterError",
    "Quantity",
    "RobotParameters",
    "StructureParameters",
    "TransmissionParameters",
    "axes_for",
    "drive_axes",
    "load_parameters",
]

#: Shipped with the package (package data and share/quirobot/config).
DEFAULT_PARAMETER_FILE = find_data_file("quirobot.yaml")


class ParameterError(ValueError):
    """The parameter file is missing, malformed, or holds an invalid value (named in the message)."""


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

    def axis(self, name: str) -> JointParameters:
        """The parameters of a driven axis (drive_axes()): its joint's, or those of the tool whose
        own axis it is (the drill's feed: `drill.feed`)."""
        if name in JOINT_NAMES:
            return self.joint(name)
        for tool in TOOL_PARAMETERS:  # the fields named as the tools
            for axis in getattr(self, tool).axis_parameters:
                if axis.name == name:
                    return axis
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

    def report_model(self) -> ReportModelParameters:
        key = "report_model"
        return ReportModelParameters(
            gravity=self.number(f"{key}.gravity", positive=True),
            carriage_mass=self.number(f"{key}.carriage_mass", positive=True),
            link4_mass=self.number(f"{key}.link4_mass", non_negative=True),
            link5_mass=self.number(f"{key}.link5_mass", positive=True),
            link4_radius=self.number(f"{key}.link4_radius", positive=True),
            link5_radius=self.number(f"{key}.link5_radius", positive=True),
            prismatic_damping=self.number(f"{key}.prismatic_damping", non_negative=True),
            revolute_damping=self.number(f"{key}.revolute_damping", non_negative=True),
            transmission_efficiency=self.number(f"{key}.transmission_efficiency", positive=True),
        )

    def robot(self) -> RobotParameters:
        # The sections in the file's order of checks: the first bad key found is the one named.
        joints, links, l4, l5 = read_arm(self)
        drill = read_drill(self)
        arthroscope = read_arthroscope(self)
        report_model = self.report_model()
        drive = read_drive(self)
        structure = read_structure(self)
        homing, homing_order = read_homing(self, joints, drill)
        motors = {name: read_motor(self, name) for name in (self.raw.get("motors") or {})}
        transmissions = {
            name: read_transmission(self, name) for name in (self.raw.get("transmissions") or {})
        }
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
            canopen=read_canopen(self),
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
