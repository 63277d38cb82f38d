"""The realistic plant: the robot with the errors a real machine has and the controller's model lacks.

`quirobot simulate --plant realistic` and `quirobot accuracy` run the controller (unchanged: its
model is still the rigid robot of the parameter file) on this plant instead of `MujocoPlant`
alone. The rigid-body physics stays MuJoCo's; the rest is modelled here, in Python, around it,
so that nothing of it comes from the controller's model (values: parameter file section
`realistic_plant`, quirobot_description.plant_parameters):

* Wrist joints are two masses: the motor side (rotor inertia reflected through 500:1, integrated
  here with the gearbox's Coulomb + viscous friction and the holding brake) drives the load side
  (the MuJoCo joint, without armature, with its output bearing's dry friction) through the
  gearbox's torsional stiffness, backlash (a dead zone of the total play) and structural
  damping. Why in Python rather than as extra MuJoCo DOFs:
  the motor side and the dead zone live next to the drive model that feeds it, MuJoCo keeps
  exactly the URDF's tree (the same plant file as the ideal run), and each piece can be checked
  on its own (the stiffness mode is 35-130 Hz: sub-stepped explicitly, it is stable).
* Gantry and feed axes: the ball screw's axial stiffness is kept as its static deflection
  (effort / k along the axis; the axial mode is above 500 Hz, far past the position loop), the
  screw and rails' Coulomb + viscous friction replaces the report's 0.06 N*s/m (MuJoCo dry
  friction and damping on the joint).
* One control period of actuation delay (the CANopen RPDO applied at the next SYNC) and encoder
  noise: `RealisticDrive` wraps each SimulatedDrive.
* The ram's lateral compliance: a passive spring-damper (world x, y) at the wrist, stiffness
  3 E I / L^3 of the ram's section, driven by the lateral part of every force at the tip.
* Cutting: skiving (a lateral force at entry, a fraction of the thrust, while the drill's point
  is not fully in the bone, down the inclined surface: in the plane of the axis and the
  vertical) bends the bit (k = 3 E I / L^3) and moves the tip; once the point is in, the hole
  holds the tip where the entry left it (conservative: the offset is kept). The regenerative
  thrust k_r * engagement * (z(t) - z(t - T_rev)) with z the tip's axial vibration (depth less
  its 5-revolution average) adds chatter.

* Geometric errors (quirobot_description.geometric_errors: squareness, tilts, straightness,
  wrist axis offsets and tilts, link length errors, the TCP offset): the tip is moved by the
  actual machine's forward kinematics less the nominal one at the load-side joint positions
  (quirobot_kinematics.geometric). MuJoCo keeps the nominal URDF (the errors are static pose
  errors of a fraction of a millimetre: they do not change the dynamics measurably); the
  controller keeps its nominal model unless it is given a calibrated one.

The true tip (`tip`, what every metric uses) is MuJoCo's tip moved by the screws' deflection,
the ram's, the bit's and the geometric errors' (`tip_quaternion` stays MuJoCo's nominal one).
`compensated` = the design's answer (load-side encoders on the wrist, read by the position loop;
the velocity estimate stays the motor encoder's).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import mujoco
import numpy as np

from quirobot_control.drive_simulators.drive_array import DriveArray
from quirobot_control.drive_simulators.simulated_drive import SimulatedDrive
from quirobot_control.drives.dual_loop import DualLoopFeedback
from quirobot_control.drives.interface import DriveFeedback, DriveState
from quirobot_control.models.bone import BoneThrust
from quirobot_control.models.wrist_gearbox import gear_torque, wrist_motor_substeps
from quirobot_control.simulation.plant import MujocoPlant, kernel_contact
from quirobot_description.geometric_errors import GeometricErrors
from quirobot_description.parameters import DrillParameters, RobotParameters
from quirobot_description.plant_parameters import PlantParameters
from quirobot_kinematics import KinematicModel, forward_kinematics
from quirobot_kinematics.geometric import actual_forward_kinematics

#: Indices (MujocoPlant.axes order) of the two-mass wrist joints and of the gantry screws; world axis of each
#: screw's travel (the tool descends as d3 grows, report DH table).
WRIST = (3, 4)
SCREWS = (0, 1, 2)
SCREW_AXES = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, -1.0]])
#: WRIST as a slice (its joints are adjacent): one copy of both instead of two.
_WRIST_SLICE = slice(WRIST[0], WRIST[-1] + 1)
#: Motor-side sub-steps per physics step (the gearbox mode, <= 130 Hz, at 16 kHz: explicit is stable).
MOTOR_SUBSTEPS = 4
#: Crossover of the wrist drives' dual-loop feedback (drives.dual_loop), rad/s: 2 Hz, far below the
#: position loop's 150 rad/s poles and the gearbox's 35 Hz mode (measured: stable and within the
#: targets on the realistic plant; a stiff loop on the load encoder alone oscillates at ~80 Hz).
DUAL_LOOP_CROSSOVER = 2.0 * math.pi * 2.0
#: Revolutions over which the depth is averaged to get the axial vibration of the regenerative term.
VIBRATION_AVERAGE_REVOLUTIONS = 5.0


class RealisticDrive:
    """A SimulatedDrive seen through the bus: one control period of delay on the current command,
    noisy encoder, optionally a load-side encoder. Everything else is the wrapped drive's."""

    def __init__(
        self,
        inner: SimulatedDrive,
        noise: float,
        rng: np.random.Generator,
        delay_periods: int,
        load_resolution: float | None = None,
        dual_loop: DualLoopFeedback | None = None,
    ) -> None:
        """noise: encoder standard deviation in counts; load_resolution: m or rad per count of a
        load-side encoder (None: the motor encoder feeds the position loop), blended with the
        motor encoder by `dual_loop`."""
        self.inner = inner
        self.noise = noise
        self.rng = rng
        self.delay_periods = delay_periods
        self.load_resolution = load_resolution
        self.dual_loop = dual_loop
        #: The standard normal draws one latch takes: the motor encoder's, then the load encoder's.
        self.draws = 2 if load_resolution is not None and dual_loop is not None else 1
        self.load_position = 0.0  # true load-side position, set by the plant
        self._queue: list[float] = []
        self._position = 0.0

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def command_current(self, current: float) -> None:
        """Queued for `delay_periods` control periods (checked now: a bad command stops at once)."""
        value = float(current) if isinstance(current, (int, float)) else math.nan
        if not math.isfinite(value) or self.inner.state is DriveState.FAULT or self.delay_periods == 0:
            self.inner.command_current(current)
            return
        self._queue.append(value)

    def latch(self, normals: Sequence[float] | None = None) -> None:
        """The sync instant: the command written a period ago reaches the drive; the encoders
        sample. normals: this latch's `draws` standard normal draws, in order; None: drawn here
        from rng (RealisticPlant.sense draws every drive's in one call: the same stream)."""
        if normals is None:
            normals = self.rng.standard_normal(self.draws).tolist()
        if self._queue and len(self._queue) >= self.delay_periods:
            value = self._queue.pop(0)
            if self.inner.state is not DriveState.FAULT:  # a fault refuses it; the loop reads the fault
                self.inner.command_current(value)
        resolution = self.inner.encoder.resolution
        motor = self.inner.position + self.noise * resolution * normals[0]
        self._position = motor
        if self.draws == 2:  # a load encoder blended in
            counts = self.load_position / self.load_resolution + self.noise * normals[1]
            self._position = self.dual_loop.update(motor, round(counts) * self.load_resolution)

    @property
    def position(self) -> float:
        """The position its encoders latched (m or rad): feedback().position, as the host sees it."""
        return self._position

    @property
    def current(self) -> float:
        """The inner drive's measured current (A), as its feedback has it (the log reads it every
        period: asked here, not through __getattr__)."""
        return self.inner.current

    def quick_stop(self) -> None:
        self._queue.clear()
        self.inner.quick_stop()

    def disable(self) -> None:
        self._queue.clear()
        self.inner.disable()

    def feedback(self) -> DriveFeedback:
        """The inner drive's feedback with the position this wrapper's encoder latched: every other
        field is the drive's own (its stop in progress, home reference, mode, halt)."""
        return self.inner.feedback_at(self._position)


class RealisticPlant:
    """MuJoCo's rigid bodies with the realistic plant's effects (module docstring); the same
    interface as MujocoPlant for the closed loop (reset, sense, step_period, tip, ...)."""

    def __init__(
        self,
        params: RobotParameters,
        plant: PlantParameters,
        drives: Sequence[SimulatedDrive],
        timestep: float,
        *,
        compensated: bool,
        rng: np.random.Generator,
        urdf: Path | None = None,
        geometric: GeometricErrors | None = None,
    ) -> None:
        """drives (6,): the SimulatedDrives in MujocoPlant.axes order (wrapped here; `self.drives`);
        geometric: the machine's geometric errors (None or zero: the nominal machine)."""
        self.params = params
        self.plant = plant
        armature = np.array([d.reflected_inertia for d in drives])
        self.motor_inertia = armature.copy()
        armature[list(WRIST)] = 0.0  # the wrist rotors are the motor side, integrated here
        self.rigid = MujocoPlant(params, armature, timestep, urdf)
        model = self.rigid.model
        for j in SCREWS:
            model.dof_damping[j] = plant.gantry_viscous_friction
            model.dof_frictionloss[j] = plant.gantry_coulomb_friction
        for j in WRIST:  # the gearbox's losses act on the motor side, its output bearing's on the load
            model.dof_damping[j] = 0.0
            model.dof_frictionloss[j] = plant.wrist_output_friction
        self.rigid._joint_friction = model.dof_frictionloss.copy()
        self.model, self.data = model, self.rigid.data
        delay = int(round(plant.actuation_delay * params.drive.control_rate))
        load_resolution = 2.0 * math.pi / plant.load_encoder_counts_per_rev
        self.drives = [
            RealisticDrive(
                drive,
                plant.encoder_noise,
                rng,
                delay,
                load_resolution if (compensated and j in WRIST) else None,
                DualLoopFeedback(DUAL_LOOP_CROSSOVER, 1.0 / params.drive.control_rate),
            )
            for j, drive in enumerate(drives)
        ]
        self._rng = rng  # the encoders' noise, drawn at each sense for every drive
        self._latch_draws = [drive.draws for drive in self.drives]
        self._draws = sum(self._latch_draws)
        #: The wrapped drives advanced together (drive_simulators.drive_array), MujocoPlant.axes order.
        self.drive_array = DriveArray([drive.inner for drive in self.drives])
        self._wrist_mask = np.isin(np.arange(len(self.drives)), WRIST)
        self._drive_position = np.zeros(6)  # what each drive's encoder sees: motor side on the wrist
        self._drive_speed = np.zeros(6)
        self._sensed = np.zeros(6)
        self._engaged: tuple[bool, ...] | None = None  # the brakes follow_brakes last applied
        self._screw_axes = SCREW_AXES.tolist()
        k = plant.wrist_gear_stiffness
        self.gear_damping = {
            j: 2.0 * plant.wrist_gear_damping_ratio * math.sqrt(k * self.motor_inertia[j]) for j in WRIST
        }
        #: Each wrist joint's constants of models.wrist_gearbox.wrist_motor_substeps: rotor inertia,
        #: sub-step (s), viscous friction, gear stiffness, half the play, gear damping.
        self._wrist_constants = {
            j: (
                self.motor_inertia[j],
                timestep / MOTOR_SUBSTEPS,
                plant.wrist_viscous_friction,
                k,
                0.5 * plant.wrist_gear_backlash,
                self.gear_damping[j],
            )
            for j in WRIST
        }
        #: Each wrist joint's dry friction with its brake engaged (N*m): the gearbox's plus the
        #: brake's holding torque (_step_wrists', summed once).
        self._wrist_coulomb = {
            j: plant.wrist_coulomb_friction + self.drive_array.holding_effort[j] for j in WRIST
        }
        # The ram's and the cutting's constants (PlantParameters is frozen; its properties compute
        # them at each call, read at every physics step).
        ram_k, ram_m = plant.ram_stiffness, plant.ram_modal_mass
        self._ram_constants = (ram_k, ram_m, 2.0 * plant.ram_damping_ratio * math.sqrt(ram_k * ram_m))
        self._spindle_period = plant.spindle_period
        self.motor_angle = np.zeros(6)  # motor side of the wrist joints, in joint units (rad)
        self.motor_speed = np.zeros(6)
        self.ram = np.zeros(2)  # ram deflection at the wrist, world x y, m
        self.ram_rate = np.zeros(2)
        self.bit = np.zeros(3)  # bit bending at the tip, world, m
        self.screw = np.zeros(3)  # world offset of the load from the screws' deflection, m
        self.drilling = None
        self._drilling_floats: tuple[list[float], list[float]] | None = None
        self.thrust_model: BoneThrust | None = None
        self._last_force = np.zeros(3)
        self._tip = np.zeros(3)
        self._efforts = np.zeros(6)
        self._depth_history: list[float] = []
        self._depth_average: float | None = None
        self._engaged_once = False
        self.geometric = None if geometric is None or geometric.is_zero() else geometric
        self.kinematics = KinematicModel.from_parameters(params)
        self._kernel = self._kernel_inputs(plant)

    def _kernel_inputs(self, plant: PlantParameters) -> tuple[tuple, tuple, tuple[float, ...]]:
        """What the compiled period (physics_kernel.c) reads, in its order: the arrays it reads and
        writes (all kept for the plant's life, written in place), the calls and objects it hands
        them to, the constants (floats)."""
        rigid, data = self.rigid, self.data
        self._tip_force = np.zeros(3)  # the kernel's tip force, handed to mj_applyFT
        arrays = (
            *(data.qpos, data.qvel, data.qfrc_applied, self._drive_position, self._drive_speed),
            *(self.motor_angle, self.motor_speed, self._efforts, self.screw, self.ram, self.ram_rate),
            *(self.bit, self._tip, rigid._tip_position, rigid._external, self._tip_force),
        )
        calls = (
            *(self.drive_array.advance, self.follow_brakes, wrist_motor_substeps),
            *(mujoco.mj_kinematics, mujoco.mj_applyFT, mujoco.mj_step, self.model, data),
            *(rigid._no_torque, rigid.bit_body, float(self.model.opt.timestep), MOTOR_SUBSTEPS),
            *(self._wrist_constants[WRIST[0]], self._wrist_constants[WRIST[1]]),
        )
        constants = (
            *(self._wrist_coulomb[WRIST[0]], self._wrist_coulomb[WRIST[1]], plant.wrist_coulomb_friction),
            *(plant.screw_axial_stiffness, *SCREW_AXES.ravel().tolist(), *self._ram_constants),
            *(self._spindle_period, plant.regenerative_stiffness, plant.skiving_coefficient),
            *(plant.bit_stiffness, VIBRATION_AVERAGE_REVOLUTIONS),
        )
        return arrays, calls, tuple(float(value) for value in constants)

    # --- the closed loop's interface --------------------------------------------------------------
    def set_drilling(self, entry: np.ndarray, direction: np.ndarray, thrust: BoneThrust) -> None:
        """Where the bone is (skiving, regenerative thrust): entry (3,) m, unit direction (3,)."""
        self.drilling = (np.asarray(entry, float), np.asarray(direction, float))
        self._drilling_floats = (self.drilling[0].tolist(), self.drilling[1].tolist())
        # Skiving's direction, down the surface and perpendicular to the axis: unit, once (numpy's
        # norm sums as its BLAS does; the compiled period takes these numbers, not its own).
        along = self.drilling[1]
        downhill = np.array([0.0, 0.0, -1.0]) - along * (-along[2])
        norm = np.linalg.norm(downhill)
        self._downhill = (downhill / norm if norm > 1e-9 else np.array([1.0, 0.0, 0.0])).tolist()
        self.thrust_model = thrust

    def reset(self, q: np.ndarray) -> None:
        self.rigid.reset(q)
        self.motor_angle[:] = q
        self.motor_speed[:] = 0.0
        # The load rests on the gravity side of the play: gravity's torque on the load decides.
        self.rigid.forward_kinematics()

    def forward_kinematics(self) -> None:
        self.rigid.forward_kinematics()

    @property
    def position(self) -> np.ndarray:
        """(6,) MuJoCo joint positions: the gantry's motor (screw) side, the wrist's load side."""
        return self.data.qpos

    @property
    def velocity(self) -> np.ndarray:
        return self.data.qvel

    def _offset(self) -> np.ndarray:
        return self.screw + np.array([self.ram[0], self.ram[1], 0.0])

    def geometric_shift(self, tcp: bool = True) -> np.ndarray:
        """(3,) m: the actual machine's drill tip (tool0 if not `tcp`) less the nominal one at the
        load-side joint positions (zero without geometric errors)."""
        if self.geometric is None:
            return np.zeros(3)
        errors = self.geometric if tcp else _without_tcp(self.geometric)
        q = self.data.qpos[:5]
        feed = float(self.data.qpos[DrillParameters.feed_index]) if tcp else 0.0
        actual = actual_forward_kinematics(q, self.kinematics, errors, feed)[:3, 3]
        return actual - forward_kinematics(q, self.kinematics, feed)[:3, 3]

    @property
    def tool0(self) -> np.ndarray:
        """(3,) true tool0 in the world (m): MuJoCo's, moved by the screws' and the ram's deflection."""
        if self.geometric is not None:
            return self.rigid.tool0 + self._offset() + self.geometric_shift(tcp=False)
        # Plain floats (the log reads it every period): tool0 + (screw + ram) (+ 0, the nominal
        # machine's geometric shift), the vector form's operations in its order.
        (t0, t1, t2), (s0, s1, s2), (r0, r1) = (
            self.rigid.tool0.tolist(),
            self.screw.tolist(),
            self.ram.tolist(),
        )
        return np.array((t0 + (s0 + r0) + 0.0, t1 + (s1 + r1) + 0.0, t2 + (s2 + 0.0) + 0.0))

    @property
    def tip(self) -> np.ndarray:
        """(3,) true drill tip in the world (m): also moved by the bit's bending."""
        if self.geometric is not None:
            self._tip[:] = self.rigid.tip + self._offset() + self.bit + self.geometric_shift()
            return self._tip
        # Plain floats (read at every physics step): tip + (screw + ram) + bit (+ 0, the nominal
        # machine's geometric shift), the vector form's operations in its order.
        (t0, t1, t2), (s0, s1, s2) = self.rigid.tip.tolist(), self.screw.tolist()
        (r0, r1), (b0, b1, b2) = self.ram.tolist(), self.bit.tolist()
        self._tip[:] = (t0 + (s0 + r0) + b0 + 0.0, t1 + (s1 + r1) + b1 + 0.0, t2 + (s2 + 0.0) + b2 + 0.0)
        return self._tip

    @property
    def tip_quaternion(self) -> np.ndarray:
        return self.rigid.tip_quaternion

    def _drive_inputs(self) -> tuple[np.ndarray, np.ndarray]:
        """(6,), (6,): the joint positions and velocities the drives see (the wrist's motor side)."""
        position, speed = self._drive_position, self._drive_speed
        position[:] = self.data.qpos
        speed[:] = self.data.qvel
        position[_WRIST_SLICE] = self.motor_angle[_WRIST_SLICE]
        speed[_WRIST_SLICE] = self.motor_speed[_WRIST_SLICE]
        return position, speed

    def sense(self, drives: Sequence = ()) -> None:
        """The sync instant: every encoder samples (motor side), the delayed commands arrive."""
        position, speed = self._drive_inputs()
        self.drive_array.advance(0.0, position, speed, self._sensed)
        # Every encoder's noise in one draw (a call per draw cost more than the draws), in the
        # order the drives' own latches take them; after every drive's sample: none depends on another.
        normals = self._rng.standard_normal(self._draws).tolist()
        if latch_drives is not None:  # compiled where it was built (physics_kernel.c), bit for bit
            latch_drives(self, normals)
        else:
            self.latch_in_python(normals)

    def latch_in_python(self, normals: list[float]) -> None:
        """Each drive's load position set, then its latch on its draws of `normals` (sense's)."""
        first = 0
        for drive, load_position, draws in zip(
            self.drives, self.data.qpos.tolist(), self._latch_draws, strict=True
        ):
            drive.load_position = load_position
            drive.latch(normals[first : first + draws])
            first += draws

    def follow_brakes(self) -> tuple[bool, ...]:
        """Apply the gantry's and the feed's engaged holding brakes (the wrist's act on its motor
        side, in _step_wrists); return which drives' brakes hold, (6,)."""
        engaged = self.drive_array.brakes_engaged()
        if engaged != self._engaged:  # the holding efforts are constant: set only on a change
            holding = np.where(engaged, self.drive_array.holding_effort, 0.0)
            holding[self._wrist_mask] = 0.0
            self.rigid.set_brakes(holding)
            self._engaged = engaged
        return engaged

    def step_period(
        self,
        drives: Sequence = (),
        substeps: int = 1,
        tip_force: Callable[[float], np.ndarray | None] | None = None,
    ) -> np.ndarray:
        """One control period of `substeps` physics steps (see MujocoPlant.step_period), with the
        two-mass wrist, the compliances and the cutting forces of this plant: `physics_period`,
        compiled where it was built, on the nominal machine with a bone's contact (kernel_contact)
        or no tip force; step_period_in_python otherwise (the same numbers, bit for bit)."""
        if physics_period is not None and self.geometric is None and kernel_contact(tip_force, self):
            return physics_period(self, tip_force, substeps)
        return self.step_period_in_python(drives, substeps, tip_force)

    def step_period_in_python(
        self,
        drives: Sequence = (),
        substeps: int = 1,
        tip_force: Callable[[float], np.ndarray | None] | None = None,
    ) -> np.ndarray:
        """step_period's law (the drives: this plant's own; `drives` is MujocoPlant's interface)."""
        h = self.model.opt.timestep
        efforts = self._efforts
        applied = np.zeros(6)
        advance, rigid = self.drive_array.advance, self.rigid
        for _ in range(substeps):
            position, speed = self._drive_inputs()
            advance(h, position, speed, efforts)
            applied[:] = efforts
            engaged = self.follow_brakes()
            effort = efforts.tolist()
            self._step_wrists(effort, engaged, applied)
            self._screw_deflections(effort)
            rigid.forward_kinematics()
            force = tip_force(h) if tip_force is not None else None
            force = self._cutting(h, force)
            self._step_ram(h, force)
            rigid.step(applied, force)
        return efforts

    # --- the pieces -------------------------------------------------------------------------------
    def screw_deflection(self, index: int, effort: float) -> None:
        """The load's world offset along screw `index` for the drive's effort (N): -effort / k."""
        self.screw += SCREW_AXES[index] * (
            -effort / self.plant.screw_axial_stiffness - self.screw @ SCREW_AXES[index]
        )

    def _screw_deflections(self, efforts: list[float]) -> None:
        """`screw_deflection` of every screw in turn for the drives' efforts (6 floats, N or N*m),
        in plain floats (each physics step; the same operations in the same order as the vector
        form)."""
        stiffness = self.plant.screw_axial_stiffness
        s0, s1, s2 = self.screw.tolist()
        for (a0, a1, a2), effort in zip(self._screw_axes, [efforts[j] for j in SCREWS], strict=True):
            change = -effort / stiffness - (s0 * a0 + s1 * a1 + s2 * a2)
            s0, s1, s2 = s0 + a0 * change, s1 + a1 * change, s2 + a2 * change
        self.screw[:] = (s0, s1, s2)

    def gear_torque(self, j: int, motor_angle: float, motor_speed: float) -> float:
        """Torque (N*m) the gearbox of wrist joint j transmits: stiffness over the play's dead zone
        plus structural damping while in contact (models.wrist_gearbox.gear_torque)."""
        _, _, _, stiffness, half_play, damping = self._wrist_constants[j]
        return gear_torque(
            stiffness, half_play, damping, motor_angle - self.data.qpos[j], motor_speed - self.data.qvel[j]
        )

    def _step_wrists(self, efforts: list[float], braked: Sequence[bool], applied: np.ndarray) -> None:
        """Advance the motor side of both wrist joints over one physics step from the drives'
        efforts (6 floats, N*m at the wrist joints; `braked[j]`: joint j's holding brake holds);
        write each load's torque (N*m, mean) into `applied`. The law:
        models.wrist_gearbox.wrist_motor_substeps (the load side holds still until MuJoCo's
        step; compiled where it was built), on plain floats read once (each physics step)."""
        load_angle, load_speed = self.data.qpos.tolist(), self.data.qvel.tolist()
        angle, rate = self.motor_angle.tolist(), self.motor_speed.tolist()
        for j in WRIST:
            coulomb = self._wrist_coulomb[j] if braked[j] else self.plant.wrist_coulomb_friction
            angle[j], rate[j], applied[j] = wrist_motor_substeps(
                self._wrist_constants[j],
                MOTOR_SUBSTEPS,
                efforts[j],
                coulomb,
                load_angle[j],
                load_speed[j],
                angle[j],
                rate[j],
            )
        self.motor_angle[_WRIST_SLICE] = angle[_WRIST_SLICE]
        self.motor_speed[_WRIST_SLICE] = rate[_WRIST_SLICE]

    def _step_ram(self, h: float, force: np.ndarray | None) -> None:
        """Spring-damper of the ram at the wrist (semi-implicit Euler), driven by the tip force's x, y."""
        k, m, c = self._ram_constants
        # Plain floats (each physics step), the vector form's operations in its order.
        fx, fy = (0.0, 0.0) if force is None else force[:2].tolist()
        (x, y), (vx, vy) = self.ram.tolist(), self.ram_rate.tolist()
        vx, vy = vx + h * (fx - k * x - c * vx) / m, vy + h * (fy - k * y - c * vy) / m
        self.ram_rate[:] = (vx, vy)
        self.ram[:] = (x + h * vx, y + h * vy)

    def _cutting(self, h: float, force: np.ndarray | None) -> np.ndarray | None:
        """Add skiving and the regenerative thrust to the bone's force; bend the bit."""
        if self.drilling is None or self.thrust_model is None:
            return force
        # depth = (tip - entry) . direction and thrust = -force . direction in plain floats (each
        # physics step; the same operations in the same order as the vector form).
        (ex, ey, ez), (dx, dy, dz) = self._drilling_floats
        tx, ty, tz = self.tip.tolist()
        depth = (tx - ex) * dx + (ty - ey) * dy + (tz - ez) * dz
        bone = self.thrust_model.bone
        engagement = self.thrust_model.engagement(depth)
        if force is None:
            thrust = 0.0
        else:
            fx, fy, fz = force.tolist()
            thrust = -fx * dx + -fy * dy + -fz * dz
        # The extra force in plain floats as well (the vector form was extra = 0 (3,), extra -= the
        # regenerative part * direction, extra += the skiving force; the same operations in order).
        e0 = e1 = e2 = 0.0
        # Regenerative thrust: the axial vibration now against one revolution ago.
        spindle_period = self._spindle_period
        period_steps = max(int(round(spindle_period / h)), 1)
        if self._depth_average is None:
            self._depth_average = depth
        alpha = h / (VIBRATION_AVERAGE_REVOLUTIONS * spindle_period)
        self._depth_average += alpha * (depth - self._depth_average)
        vibration = depth - self._depth_average
        self._depth_history.append(vibration)
        if len(self._depth_history) > period_steps:
            before = self._depth_history.pop(0)
            if engagement > 0.0 and thrust > 0.0:
                regenerative = self.plant.regenerative_stiffness * engagement * (vibration - before)
                along = max(regenerative, -thrust)
                e0, e1, e2 = e0 - along * dx, e1 - along * dy, e2 - along * dz
        # Skiving while the point enters: down the surface, perpendicular to the axis.
        if 0.0 < depth < bone.point_length and not self._engaged_once:
            lateral = self.plant.skiving_coefficient * thrust * np.array(self._downhill)
            l0, l1, l2 = lateral.tolist()
            e0, e1, e2 = e0 + l0, e1 + l1, e2 + l2
            self.bit[:] = lateral / self.plant.bit_stiffness  # in place: the compiled period's array
        elif depth >= bone.point_length:
            self._engaged_once = True  # the hole holds the tip where the entry left it
        if force is None:
            return np.array([e0, e1, e2]) if (e0 != 0.0 or e1 != 0.0 or e2 != 0.0) else None
        return np.array([fx + e0, fy + e1, fz + e2])


@functools.lru_cache(maxsize=16)
def _without_tcp(errors: GeometricErrors) -> GeometricErrors:
    """`errors` with no TCP offset (tool0's errors), cached: asked every physics step."""
    return replace(errors, tcp_offset_x=0.0, tcp_offset_y=0.0, tcp_offset_z=0.0)


try:
    # (From the package, not the module path: the import rules' graph knows no compiled module.)
    from quirobot_control.simulation._physics_kernel import latch_drives, physics_period

    #: Whether step_period and sense's latch run compiled (physics_kernel.c); False: the Python above.
    COMPILED = True
except ImportError:  # not built here: no C compiler or no Python headers at install
    physics_period = latch_drives = None
    COMPILED = False
