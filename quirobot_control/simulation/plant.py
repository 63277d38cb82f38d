"""The robot's rigid-body physics in MuJoCo: the plant the simulated drives move.

The plant is the URDF of `quirobot export` loaded in MuJoCo, with each joint's armature set to
its drive's reflected rotor inertia (J_rotor * ratio^2), gravity from the parameter file,
contacts disabled (the joint limits stay as the mechanical end stops) and a physics step of
1 / (control rate * physics_substeps). Each physics step, every drive advances its electrical
dynamics with the joint's state and returns its joint effort, applied as a generalized force;
an optional force at the drill tip (world frame; e.g. the bone's thrust) is applied too. Each
drive's holding brake, once engaged (the drive stopped driving, see drives.simulated), is the
joint's dry friction up to its holding effort (MuJoCo frictionloss, stiffened so that a held
joint creeps by micrometres per second).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import mujoco
import numpy as np

from quirobot_control.drives.simulated import SimulatedDrive
from quirobot_description.export import export_urdf
from quirobot_description.parameters import AXES, RobotParameters

TIP_BODY = "drill_tip"
#: MuJoCo constraint settings of the dry friction that models an engaged holding brake: reference
#: time constant in physics steps (2 is the stiffest MuJoCo integrates stably; damping ratio 1)
#: and impedance (dmin, dmax) close to 1, so a held joint creeps by micrometres per second.
BRAKE_SOLREF_STEPS = 2.0
BRAKE_SOLIMP = (0.99, 0.999)
TOOL_BODY = "tool0"
BIT_BODY = "drill_bit"


class SimulationError(RuntimeError):
    """The simulation could not be built or run (the message says why)."""


class MujocoPlant:
    """The robot's rigid-body physics in MuJoCo (joints in AXES order)."""

    def __init__(
        self, params: RobotParameters, armature: np.ndarray, timestep: float, urdf: Path | None = None
    ):
        """armature (6,): reflected rotor inertia per joint, kg or kg*m^2; timestep in s."""
        with tempfile.TemporaryDirectory() as directory:
            path = urdf or export_urdf(directory, tool="drill")
            spec = mujoco.MjSpec.from_file(str(path))
            spec.option.timestep = timestep
            spec.option.gravity = [0.0, 0.0, -params.gravity]
            spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
            for joint in spec.joints:
                if joint.name in AXES:
                    joint.armature = float(armature[AXES.index(joint.name)])
            self.model = spec.compile()
        self.model.dof_solref[:] = [BRAKE_SOLREF_STEPS * timestep, 1.0]
        self.model.dof_solimp[:, :2] = BRAKE_SOLIMP
        self._joint_friction = self.model.dof_frictionloss.copy()
        self._brakes: tuple[bool, ...] | None = None
        self.data = mujoco.MjData(self.model)
        names = [self.model.joint(i).name for i in range(self.model.njnt)]
        if tuple(names) != AXES:
            raise SimulationError(f"the exported model's joints are {names}, expected {list(AXES)}")
        self.tip_body = self.model.body(TIP_BODY).id
        self.tool_body = self.model.body(TOOL_BODY).id
        self.bit_body = self.model.body(BIT_BODY).id
        self._external = np.zeros(self.model.nv)

    def set_brakes(self, holding: np.ndarray) -> None:
        """Engaged holding brakes: (6,) holding effort per joint, N or N*m (0: released)."""
        self.model.dof_frictionloss[:] = self._joint_friction + holding

    def follow_brakes(self, drives: list[SimulatedDrive]) -> None:
        """Apply the holding brakes of the drives (AXES order) that are engaged now."""
        engaged = tuple(drive.brake_engaged for drive in drives)
        if engaged != self._brakes:
            holding = [d.brake_holding_effort if e else 0.0 for d, e in zip(drives, engaged, strict=True)]
            self.set_brakes(np.array(holding))
            self._brakes = engaged

    def reset(self, q: np.ndarray) -> None:
        mujoco.mj_resetData(self.model, self.data)
        self.data.qpos[:] = q
        mujoco.mj_forward(self.model, self.data)

    def forward_kinematics(self) -> None:
        """Update body poses (mj_step leaves them at the start of the last step)."""
        mujoco.mj_kinematics(self.model, self.data)

    @property
    def position(self) -> np.ndarray:
        return self.data.qpos

    @property
    def velocity(self) -> np.ndarray:
        return self.data.qvel

    @property
    def tool0(self) -> np.ndarray:
        """(3,) tool0 position in the world (m)."""
        return self.data.xpos[self.tool_body]

    @property
    def tip(self) -> np.ndarray:
        """(3,) drill tip position in the world (m), after the last step."""
        return self.data.xpos[self.tip_body]

    def step(self, efforts: np.ndarray, tip_force: np.ndarray | None = None) -> None:
        """One physics step with joint efforts (6,) and a world force (3,) N at the drill tip."""
        applied = self.data.qfrc_applied
        applied[:] = efforts
        if tip_force is not None:
            self._external[:] = 0.0
            mujoco.mj_applyFT(
                self.model,
                self.data,
                tip_force,
                np.zeros(3),
                self.data.xpos[self.tip_body],
                self.bit_body,
                self._external,
            )
            applied += self._external
        mujoco.mj_step(self.model, self.data)
