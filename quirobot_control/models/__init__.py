"""Physical models, built from the robot parameters: the arm, its motors, transmissions, encoders, the bone.

- rigid_body: the five moving bodies as a serial chain (`build_model(params)`, the report's
  lumped variant `report_model`), the rotors' reflected inertia;
- dynamics: RNEA, CRBA, gravity, forward dynamics on that chain (`Dynamics(params)`), and the
  six-axis gravity load (`gravity_model`);
- motor: the brushless motor's electrical model and its sampled PI current loop (`CurrentLoop`);
- transmission: ball screws and gearboxes (motor <-> joint position, speed, effort; efficiency
  by power-flow direction; reflected inertia);
- encoder: the motor-shaft encoder's quantization (`Encoder`);
- bone: the drilling thrust the bone opposes to the feed (`BoneParameters`, `BoneThrust`);
- spindle: the drill spindle (speed loop within its torque limit, cutting torque, at speed,
  latched stall: `Spindle`);
- wrist_gearbox: a wrist motor through its gearbox's play and stiffness against dry and viscous
  friction over one physics step (`wrist_motor_substeps`, the realistic plant's; compiled).

Units SI; joint vectors (5,) for the arm (JOINT_NAMES order), (6,) with the drill feed last.
"""

from quirobot_control.models.bone import BoneLayer, BoneParameters, BoneThrust
from quirobot_control.models.dynamics import Dynamics, gravity_model
from quirobot_control.models.encoder import Encoder
from quirobot_control.models.motor import CurrentLoop
from quirobot_control.models.rigid_body import RigidBodyModel, build_model, reflected_rotor_inertia

__all__ = [
    "BoneLayer",
    "BoneParameters",
    "BoneThrust",
    "CurrentLoop",
    "Dynamics",
    "Encoder",
    "RigidBodyModel",
    "build_model",
    "gravity_model",
    "reflected_rotor_inertia",
]
