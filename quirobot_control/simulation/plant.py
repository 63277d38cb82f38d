"""The robot's rigid-body physics in MuJoCo: the plant the simulated drives move.

The plant is the URDF of `quirobot export` loaded in MuJoCo, with each joint's armature set to
its drive's reflected rotor inertia (J_rotor * ratio^2), gravity from the parameter file,
contacts disabled (the joint limits stay as the mechanical end stops) and a physics step of
1 / (control rate * physics_substeps). Each physics step, every drive advances its electrical
dynamics with the joint's state and returns its joint effort, applied as a generalized force;
an optional force at the drill tip (world frame; e.g. the bone's thrust) is applied too. Each
drive's holding brake, once engaged (the drive stopped driving, see drive_simulators.simulated_drive), is the
joint's dry friction up to its holding effort (MuJoCo frictionloss, stiffened so that a held
joint creeps by micrometres per second). The drives advance together (drive_simulators.drive_array:
one call per physics step for all of them); a control period's loop is compiled where it was
built (physics_kernel.c, with the bone's contact: step_period).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import mujoco
import numpy as np

from quirobot_control.drive_simulators.drive_array import DriveArray
from quirobot_control.drive_simulators.simulated_drive import SimulatedDrive
from quirobot_description.export import export_urdf
from quirobot_description.parameters import RobotParameters, axes_for

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
    """The robot's rigid-body physics in MuJoCo (joints in `axes` order)."""

    #: Its joints: it carries the drill (the exported URDF's tool), so the drill's axes.
    axes: tuple[str, ...] = axes_for("drill")

    def __init__(
        self, params: RobotParameters, armature: np.ndarray, timestep: float, urdf: Path | None = None
    ):
        """armature (6,): reflected rotor inertia per joint, kg or kg*m^2; timestep in s."""
        with tempfile.TemporaryDirectory() as directory:
            # The description the drive bridge runs (hardware "real": drive_node's): its
            # ros2_control block is no physics, and the one xacro expansion (cached) serves both.
            path = urdf or export_urdf(directory, tool="drill", hardware="real")
            spec = mujoco.MjSpec.from_file(str(path))
            spec.option.timestep = timestep
            spec.option.gravity = [0.0, 0.0, -params.gravity]
            spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
            for joint in spec.joints:
                if joint.name in self.axes:
                    joint.armature = float(armature[self.axes.index(joint.name)])
            self.model = spec.compile()
        self.model.dof_solref[:] = [BRAKE_SOLREF_STEPS * timestep, 1.0]
        self.model.dof_solimp[:, :2] = BRAKE_SOLIMP
        self._joint_friction = self.model.dof_frictionloss.copy()
        self._brakes: tuple[bool, ...] | None = None
        self._drive_array: DriveArray | None = None
        self.data = mujoco.MjData(self.model)
        names = [self.model.joint(i).name for i in range(self.model.njnt)]
        if tuple(names) != self.axes:
            raise SimulationError(f"the exported model's joints are {names}, expected {list(self.axes)}")
        self.tip_body = self.model.body(TIP_BODY).id
        self.tool_body = self.model.body(TOOL_BODY).id
        self.bit_body = self.model.body(BIT_BODY).id
        # Views of the tip's and tool0's rows of data.xpos and the tip's of data.xquat (read
        # several times a physics step; MjData keeps its buffers, so the views stay current).
        self._tip_position = self.data.xpos[self.tip_body]
        self._tool0_position = self.data.xpos[self.tool_body]
        self._tip_quaternion = self.data.xquat[self.tip_body]
        self._external = np.zeros(self.model.nv)
        self._efforts = np.zeros(self.model.nv)
        self._sensed = np.zeros(self.model.nv)  # sense()'s efforts (a zero step: unchanged currents)
        self._no_torque = np.zeros(3)  # the tip force's torque (mj_applyFT only reads it)
        self._tip_force = np.zeros(3)  # the compiled period's tip force, handed to mj_applyFT
        #: What the compiled period (physics_kernel.c: ideal_period) reads, in its order: the arrays
        #: it reads and writes (MjData's and this plant's, kept for its life), the calls and objects.
        data = self.data
        self._kernel = (
            (
                data.qpos,
                data.qvel,
                data.qfrc_applied,
                self._efforts,
                self._tip_position,
                self._external,
                self._tip_force,
            ),
            (
                *(mujoco.mj_kinematics, mujoco.mj_applyFT, mujoco.mj_step, self.model, data, self._no_torque),
                *(self.bit_body, float(self.model.opt.timestep), self._apply_brakes),
            ),
        )

    def set_brakes(self, holding: np.ndarray) -> None:
        """Engaged holding brakes: (6,) holding effort per joint, N or N*m (0: released)."""
        self.model.dof_frictionloss[:] = self._joint_friction + holding

    def follow_brakes(self, drives: Sequence[SimulatedDrive] | DriveArray) -> None:
        """Apply the holding brakes of the drives (`axes` order) that are engaged now."""
        array = self.drive_array(drives)
        engaged = array.brakes_engaged()
        if engaged != self._brakes:
            self._apply_brakes(engaged, array)

    def _apply_brakes(self, engaged: tuple[bool, ...], array: DriveArray) -> None:
        """The brakes `engaged` (which of `array`'s drives hold, a change) applied."""
        self.set_brakes(np.where(engaged, array.holding_effort, 0.0))
        self._brakes = engaged

    def drive_array(self, drives: Sequence[SimulatedDrive] | DriveArray) -> DriveArray:
        """The drives (`axes` order) as one DriveArray: given, or built once for these drives."""
        if isinstance(drives, DriveArray):
            return drives
        array = self._drive_array
        if array is None or tuple(array) != tuple(drives):
            array = self._drive_array = DriveArray(drives)
        return array

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
        return self._tool0_position

    @property
    def tip(self) -> np.ndarray:
        """(3,) drill tip position in the world (m), after the last step."""
        return self._tip_position

    @property
    def tip_quaternion(self) -> np.ndarray:
        """(4,) drill tip orientation in the world, unit quaternion (w, x, y, z); its z axis is the bit's."""
        return self._tip_quaternion

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
                self._no_torque,
                self._tip_position,
                self.bit_body,
                self._external,
            )
            applied += self._external
        mujoco.mj_step(self.model, self.data)

    def sense(self, drives: Sequence[SimulatedDrive] | DriveArray) -> None:
        """Every drive (`axes` order) samples its encoder at its joint's state now (advance by 0 s):
        the sync instant at the start of a control period, or the start pose after `reset`."""
        self.drive_array(drives).advance(0.0, self.data.qpos, self.data.qvel, self._sensed)

    def step_period(
        self,
        drives: Sequence[SimulatedDrive] | DriveArray,
        substeps: int,
        tip_force: Callable[[float], np.ndarray | None] | None = None,
    ) -> np.ndarray:
        """One control period: `substeps` physics steps of the model's timestep h.

        Each step: every drive (`axes` order) advances its electronics over h with its joint's
        state and returns its joint effort, the drives' engaged holding brakes are applied, and
        the plant steps with those efforts and, if `tip_force` is given, the world force (3,) N
        that `tip_force(h)` returns at the drill tip (None: none), the tip's pose being current
        when it is called. Returns the efforts (6,) of the last step, N or N*m (a buffer the
        next call overwrites).

        Compiled where it was built (physics_kernel.c: ideal_period) with a bone's contact
        (kernel_contact) or no tip force; step_period_in_python otherwise (the same numbers).
        """
        array = self.drive_array(drives)
        if ideal_period is not None and kernel_contact(tip_force, self):
            return ideal_period(self, array, tip_force, substeps)
        return self.step_period_in_python(array, substeps, tip_force)

    def step_period_in_python(
        self,
        drives: Sequence[SimulatedDrive] | DriveArray,
        substeps: int,
        tip_force: Callable[[float], np.ndarray | None] | None = None,
    ) -> np.ndarray:
        """step_period's law."""
        model, data = self.model, self.data
        h = model.opt.timestep
        efforts = self._efforts
        array = self.drive_array(drives)
        # follow_brakes, forward_kinematics and step written out, their objects bound once: this
        # loop runs at every physics step, five a control period (the same operations in the same
        # order: test_simulate_json_unchanged).
        advance, brakes_engaged = array.advance, array.brakes_engaged
        qpos, qvel, applied, external = data.qpos, data.qvel, data.qfrc_applied, self._external
        for _ in range(substeps):
            advance(h, qpos, qvel, efforts)
            engaged = brakes_engaged()
            if engaged != self._brakes:
                self._apply_brakes(engaged, array)
            force = None
            if tip_force is not None:
                # mj_step leaves the body poses at the start of the step it took: bring the tip to
                # the current state, or a depth (and its rate) would lag one physics step.
                mujoco.mj_kinematics(model, data)
                force = tip_force(h)
            applied[:] = efforts
            if force is not None:
                external[:] = 0.0
                mujoco.mj_applyFT(
                    model, data, force, self._no_torque, self._tip_position, self.bit_body, external
                )
                applied += external
            mujoco.mj_step(model, data)
        return efforts


def kernel_contact(tip_force: object, plant: object) -> bool:
    """Whether the compiled periods (physics_kernel.c) compute `tip_force` themselves: no tip force,
    or a BoneContact (exactly that class: BoneContact.KERNEL_CONTACT) on `plant`."""
    return tip_force is None or (
        type(tip_force).__dict__.get("KERNEL_CONTACT", False) and getattr(tip_force, "plant", None) is plant
    )


try:
    # (From the package, not the module path: the import rules' graph knows no compiled module.)
    from quirobot_control.simulation._physics_kernel import ideal_period

    #: Whether step_period runs the compiled period (physics_kernel.c); False: the Python above.
    COMPILED = True
except ImportError:  # not built here: no C compiler or no Python headers at install
    ideal_period = None
    COMPILED = False
