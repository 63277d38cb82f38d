"""The five moving bodies of QUIROBOT as a serial rigid-body chain, built from the parameters.

Two named models:

* ``"physical"``: the links of the parameter file (mass, centre of mass, inertia of homogeneous
  solids about their centre of mass) with the default drill tool at drill_feed = 0 folded rigidly
  into wrist_pitch_link (composite mass, centre of mass and parallel-axis inertia); gravity
  params.gravity; viscous friction params.joints[i].damping and Coulomb friction .friction.
* ``"report"``: the report's own model (report ch.5 code): carriages of report_model.carriage_mass,
  m4 = 0, link 5 lumped to m5 = 7 kg at mid-link with the report's inertia
  diag(m r^2/2 + m l^2/3, same, .) about the proximal joint used again about the centre of mass
  (the parallel-axis term counted twice; the unrecoverable longitudinal element is m r^2/2),
  g = report_model.gravity, its viscous friction, no Coulomb friction.

Kinematic chain (the URDF's joints): world -> x_carriage (prismatic +x) -> y_carriage (prismatic +y)
-> z_ram (prismatic (0, 0, -1)) -> wrist_yaw_link (revolute (0, 0, -1), same origin) ->
wrist_pitch_link (origin (0, 0, -l4), revolute +y) -> tool0 at (l5, 0, 0), rpy (pi/2, 0, pi/2).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from quirobot_description.frames import rpy_matrix
from quirobot_description.parameters import LINK_NAMES, RobotParameters
from quirobot_kinematics.model import TOOL0_RPY

MODEL_NAMES = ("physical", "report")


class ModelError(ValueError):
    """An unknown model name or a rigid-body parameter that is not physical."""


@dataclass(frozen=True)
class Body:
    """One moving body and the joint that carries it (SI units, child-frame quantities).

    The joint frame is the body frame; at q = 0 it sits at `origin` (3,) m with orientation
    `rotation` (3, 3) in the parent body's frame; the joint moves along / about `axis` (3,), a unit
    vector in the body frame.
    """

    name: str
    joint: str
    joint_type: str  # "prismatic" or "revolute"
    origin: np.ndarray  # (3,) m, in the parent frame
    rotation: np.ndarray  # (3, 3), body axes in the parent frame at q = 0
    axis: np.ndarray  # (3,) unit, body frame
    mass: float  # kg
    com: np.ndarray  # (3,) m, body frame
    inertia: np.ndarray  # (3, 3) kg*m^2 about the centre of mass, body axes


@dataclass(frozen=True)
class RigidBodyModel:
    """A serial chain of bodies (in JOINT_NAMES order) with gravity and joint friction."""

    name: str
    bodies: tuple[Body, ...]
    gravity: np.ndarray  # (3,) m/s^2 in the world frame, e.g. (0, 0, -9.80665)
    damping: np.ndarray  # (n,) viscous friction, N*s/m or N*m*s/rad
    coulomb: np.ndarray  # (n,) Coulomb friction, N or N*m
    armature: np.ndarray  # (n,) extra joint-space inertia on the diagonal (reflected rotors), kg or kg*m^2

    @property
    def dof(self) -> int:
        return len(self.bodies)

    @property
    def joint_names(self) -> tuple[str, ...]:
        return tuple(body.joint for body in self.bodies)

    @property
    def revolute(self) -> np.ndarray:
        """(n,) bool, True where the joint is revolute."""
        return np.array([body.joint_type == "revolute" for body in self.bodies])

    @property
    def total_mass(self) -> float:
        return float(sum(body.mass for body in self.bodies))

    def with_armature(self, armature: np.ndarray) -> RigidBodyModel:
        """This model with joint armature (n,) (e.g. reflected rotor inertia J*ratio^2) added."""
        armature = np.asarray(armature, dtype=float)
        if armature.shape != (self.dof,) or not np.all(np.isfinite(armature)) or np.any(armature < 0.0):
            raise ModelError(f"armature must be {self.dof} finite non-negative numbers, got {armature!r}")
        return replace(self, armature=armature)


def combine_inertia(
    masses: list[float], coms: list[np.ndarray], inertias: list[np.ndarray]
) -> tuple[float, np.ndarray, np.ndarray]:
    """Composite of rigid parts in one frame: mass (kg), COM (3,) m, inertia (3, 3) about that COM."""
    mass = float(sum(masses))
    com = sum(m * np.asarray(c, dtype=float) for m, c in zip(masses, coms, strict=True)) / mass
    inertia = np.zeros((3, 3))
    for m, c, inertia_c in zip(masses, coms, inertias, strict=True):
        d = np.asarray(c, dtype=float) - com
        inertia += inertia_c + m * (d @ d * np.eye(3) - np.outer(d, d))
    return mass, com, inertia


def _joint_frames(params: RobotParameters) -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]:
    """(type, origin in parent, rotation in parent, axis) per joint, in JOINT_NAMES order."""
    eye = np.eye(3)
    zero = np.zeros(3)
    return [
        ("prismatic", zero, eye, np.array([1.0, 0.0, 0.0])),
        ("prismatic", zero, eye, np.array([0.0, 1.0, 0.0])),
        ("prismatic", zero, eye, np.array([0.0, 0.0, -1.0])),
        ("revolute", zero, eye, np.array([0.0, 0.0, -1.0])),
        ("revolute", np.array([0.0, 0.0, -params.l4]), eye, np.array([0.0, 1.0, 0.0])),
    ]


def drill_bit_in_pitch_link(params: RobotParameters) -> tuple[float, np.ndarray, np.ndarray]:
    """The drill's moving cylinder at drill_feed = 0 in wrist_pitch_link: mass, COM (3,), inertia (3, 3).

    Its centre is bit_length/2 behind the tip along tool z; the tip is at tool0 (the feed joint frame).
    """
    drill = params.drill
    rotation = rpy_matrix(*TOOL0_RPY)
    tool0 = np.array([params.l5, 0.0, 0.0])
    com = tool0 + rotation @ np.array([0.0, 0.0, -drill.bit_length / 2.0])
    return drill.bit_mass, com, rotation @ drill.bit_inertia @ rotation.T


def physical_model(params: RobotParameters, *, tool: str = "drill") -> RigidBodyModel:
    """The parameter file's rigid bodies; `tool` "drill" (bit folded in at feed 0) or "none"."""
    if tool not in ("drill", "none"):
        raise ModelError(f"tool must be 'drill' or 'none' for the dynamics model, got {tool!r}")
    bodies = []
    for name, joint, link, (kind, origin, rotation, axis) in zip(
        LINK_NAMES, params.joints, params.links, _joint_frames(params), strict=True
    ):
        mass, com, inertia = link.mass, np.array(link.origin, dtype=float), link.inertia
        if name == "wrist_pitch_link" and tool == "drill":
            bit_mass, bit_com, bit_inertia = drill_bit_in_pitch_link(params)
            mass, com, inertia = combine_inertia([mass, bit_mass], [com, bit_com], [inertia, bit_inertia])
        bodies.append(Body(name, joint.name, kind, origin, rotation, axis, mass, com, inertia))
    return RigidBodyModel(
        name="physical",
        bodies=tuple(bodies),
        gravity=np.array([0.0, 0.0, -params.gravity]),
        damping=params.damping,
        coulomb=np.array([j.friction for j in params.joints]),
        armature=np.zeros(len(bodies)),
    )


def report_inertia(mass: float, radius: float, length: float) -> np.ndarray:
    """The report's link inertia for a link along body x: diag(m r^2/2, m r^2/2 + m l^2/3, same).

    The transverse elements are the report's m r^2/2 + m l^2/3 (a rod about its end plus a disc
    term), used about the centre of mass; the longitudinal one is m r^2/2 (design assumption: not
    recoverable from the report).
    """
    transverse = mass * radius**2 / 2.0 + mass * length**2 / 3.0
    return np.diag([mass * radius**2 / 2.0, transverse, transverse])


def report_model(params: RobotParameters) -> RigidBodyModel:
    """The report's own parameter set (report ch.5 code), to reproduce its tables."""
    rm = params.report_model
    bodies = []
    for name, joint, (kind, origin, rotation, axis) in zip(
        LINK_NAMES, params.joints, _joint_frames(params), strict=True
    ):
        if name == "wrist_yaw_link":  # link 4 along -z of its frame, m4 = 0 in the report's code
            inertia = report_inertia(rm.link4_mass, rm.link4_radius, params.l4)[[2, 1, 0]][:, [2, 1, 0]]
            mass, com = rm.link4_mass, np.array([0.0, 0.0, -params.l4 / 2.0])
        elif name == "wrist_pitch_link":
            inertia = report_inertia(rm.link5_mass, rm.link5_radius, params.l5)
            mass, com = rm.link5_mass, np.array([params.l5 / 2.0, 0.0, 0.0])
        else:  # carriages translate only: their rotational inertia and COM never enter the torques
            mass, com, inertia = rm.carriage_mass, np.zeros(3), np.zeros((3, 3))
        bodies.append(Body(name, joint.name, kind, origin, rotation, axis, mass, com, inertia))
    damping = np.array(
        [rm.revolute_damping if b.joint_type == "revolute" else rm.prismatic_damping for b in bodies]
    )
    return RigidBodyModel(
        name="report",
        bodies=tuple(bodies),
        gravity=np.array([0.0, 0.0, -rm.gravity]),
        damping=damping,
        coulomb=np.zeros(len(bodies)),
        armature=np.zeros(len(bodies)),
    )


def build_model(params: RobotParameters, model: str = "physical") -> RigidBodyModel:
    """The named model ("physical" or "report") from the parameters."""
    if model == "physical":
        return physical_model(params)
    if model == "report":
        return report_model(params)
    raise ModelError(f"unknown dynamics model {model!r}; choose one of {', '.join(MODEL_NAMES)}")


def reflected_rotor_inertia(params: RobotParameters) -> np.ndarray:
    """(5,) J_rotor * ratio^2 per joint, kg (prismatic) or kg*m^2 (revolute)."""
    return np.array([j.motor.rotor_inertia * j.transmission.ratio**2 for j in params.joints])
