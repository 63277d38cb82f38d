"""The drive bridge's simulated backend: SimulatedDrives on the MuJoCo rigid-body plant.

A `bridge.backend.DriveBackend` for drive_node's drive_backend:=simulated (tests, trying the ROS
stack without motors). The plant is the robot with the drill tool, six joints: `plant="ideal"`
(simulation.plant.MujocoPlant, the controller's own model) or `"realistic"`
(simulation.realistic_plant.RealisticPlant with the design's compensation, its load-side wrist
encoders, as `quirobot simulate --plant realistic` builds it; encoder noise from `seed`). The
backend drives the joints it is opened for (those of the launched robot description's
<ros2_control> block). A plant joint without a commanded drive (the drill's feed axis when the
description's tool has none) keeps its drive disabled, so its holding brake holds it where it
started. `true_tip()` is the plant's drill tip (the realistic plant's with its compliances), what
`quirobot simulate`'s hole metrics use: simulation ground truth, which the joint states (encoders)
do not show. `machine` is the simulated machine (quirobot_description.machine_identity.
simulated_machine: the drives' serial numbers, which a calibration must name): a seed draws that
machine's geometric errors into the realistic plant, as `quirobot calibrate --seed` draws them (the
ideal plant is the controller's own model: no geometric errors, whichever machine it is); None,
the default, is the nominal machine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from time import perf_counter
from typing import TYPE_CHECKING

import numpy as np

from quirobot_control.axes.limits import JointLimits
from quirobot_control.bridge.drive_bridge import DriveBridge, open_bridge
from quirobot_control.drive_simulators.drive_array import DriveArray
from quirobot_control.drive_simulators.simulated_drive import SimulatedDrive, drive_for_joint
from quirobot_control.drives.interface import DriveError
from quirobot_control.hardware.control_config import ControlConfig
from quirobot_control.hardware.hardware_info import hardware_info_from_urdf
from quirobot_control.models.bone import BoneParameters
from quirobot_control.models.pin_insertion import PinLayer, insertion_torque
from quirobot_control.models.spindle import Spindle
from quirobot_control.simulation.plant import MujocoPlant
from quirobot_control.simulation.realistic_plant import RealisticDrive, RealisticPlant
from quirobot_description.drilling_parameters import SpindleParameters
from quirobot_description.machine_identity import MachineIdentity, simulated_machine
from quirobot_description.parameters import RobotParameters
from quirobot_description.plant_parameters import PLANTS, PlantParameters

if TYPE_CHECKING:  # the planner is imported when a bone is placed, not with drive_node's backend
    from quirobot_control.planning.tasks import IncisionTask

#: Fraction of gantry_z's soft range below its top (the gantry's zero) where the simulated robot
#: powers up (design assumption: clear of the patient and the operating table below the drilling
#: corridor, the shipped incision's no-go zone; at mid-range the drill tip was inside it).
START_RAISED = 0.25


class SimulatedBackend:
    """SimulatedDrives on the MuJoCo rigid-body plant, stepped in `control.physics_substeps`."""

    def __init__(
        self,
        params: RobotParameters,
        control: ControlConfig,
        initial: Sequence[float] | None = None,
        *,
        joints: Sequence[str] = MujocoPlant.axes,
        absolute_encoders: bool = True,
        plant: str = "ideal",
        seed: int = 0,
        plant_parameters: PlantParameters | None = None,
        compensated: bool = True,
        machine: int | None = None,
    ) -> None:
        """`initial` (6,): start pose of the plant, its axes' order (MujocoPlant.axes, m, rad); default
        mid-range, gantry_z raised and the drill feed retracted (START_RAISED). `joints`: the
        commanded joints (plant joints). `absolute_encoders` (default): every drive is homed at
        power-up; False: incremental encoders, not homed until the hardware's homing has run.
        `plant`: "ideal" or "realistic" (module docstring), `seed` its encoder noise,
        `plant_parameters` its parameters (default the parameter file's), `compensated` False: its
        wrists on their motor encoders instead of the design's load-side ones. `machine`: the
        simulated machine's seed (module docstring), None the nominal machine."""
        axes = MujocoPlant.axes
        unknown = [name for name in joints if name not in axes]
        if unknown:
            raise ValueError(
                f"the simulated plant has no joint {', '.join(unknown)}; its joints are {', '.join(axes)}"
            )
        if plant not in PLANTS:
            raise ValueError(f"simulated plant must be one of {', '.join(PLANTS)}, got {plant!r}")
        self.dt = control.dt
        self.substeps = control.physics_substeps
        # The drives watch their master like real ones (drive.master_timeout, CiA 402 0x6007): a
        # host that stops writing (a lost master, BridgePort.host_running False) leaves them to
        # stop by themselves, as on the bus.
        self._plant_drives: list[SimulatedDrive | RealisticDrive] = [
            drive_for_joint(params, name, absolute_encoder=absolute_encoders, master_watchdog=True)
            for name in axes
        ]
        armature = np.array([d.reflected_inertia for d in self._plant_drives])
        self.plant: MujocoPlant | RealisticPlant
        if plant == "realistic":
            self.plant = RealisticPlant(
                params,
                plant_parameters or params.plant,
                self._plant_drives,
                self.dt / self.substeps,
                compensated=compensated,
                rng=np.random.default_rng(seed),
            )
            self._plant_drives = list(self.plant.drives)  # the plant's wrappers (delay, noise)
            if machine is not None:
                self.plant.geometric = params.geometric.sample(np.random.default_rng(machine))
        else:
            self.plant = MujocoPlant(params, armature, self.dt / self.substeps)
        self.drives: dict[str, SimulatedDrive | RealisticDrive] = {
            name: drive for name, drive in zip(axes, self._plant_drives, strict=True) if name in joints
        }
        #: The drives' serial numbers (0x1018:04): which machine this is.
        self.machine: MachineIdentity = simulated_machine(machine, self.drives)
        # The plant's drives advance together, one call per physics step (drive_simulators.drive_array);
        # self.drives are their per-joint views, what the bridge talks to.
        realistic = isinstance(self.plant, RealisticPlant)
        self._drive_array = self.plant.drive_array if realistic else DriveArray(self._plant_drives)
        limits = JointLimits.from_parameters(params, axes)
        if initial is not None:
            q0 = np.array(initial, dtype=float)
        else:  # mid-range, gantry_z raised, the drill retracted to its soft limit
            q0 = 0.5 * (limits.soft_lower + limits.soft_upper)
            z = axes.index("gantry_z")
            q0[z] = limits.soft_lower[z] + START_RAISED * (limits.soft_upper[z] - limits.soft_lower[z])
            q0[-1] = limits.soft_lower[-1]
        limits.check_position(q0, "drive bridge: initial pose")
        self.plant.reset(q0)
        self.plant.sense(self._drive_array)
        #: An optional tip force (MujocoPlant.step_period's callback), e.g. a bone's thrust
        #: (simulation.bone_contact.BoneContact).
        self.tip_force: Callable[[float], np.ndarray | None] | None = None
        #: The drill's spindle (models.spindle, loaded by the bone's thrust): the drive bridge
        #: switches it on and off with the drilling context and its monitor reads it.
        self.spindle = Spindle(params.drilling.spindle)
        #: The pin in the bone (place_pin): its layers, the bone's factor and the feed position (m)
        #: where its tip met the bone surface; None: no pin.
        self._pin: tuple[tuple[PinLayer, ...], float, float] | None = None
        #: (6,) the drives' joint efforts of the last physics step, N or N*m (the plant's buffer).
        self.last_efforts = np.zeros(len(axes))
        #: s of wall time the last period's physics took (drive electronics and MuJoCo): the
        #: plant's share of a bridge period, which a controller-cost figure leaves out.
        self.physics_wall = 0.0

    def place_bone(self, task: str | IncisionTask, bone: BoneParameters | None = None) -> None:
        """Put the bone of task `task` (an incision: a name or path, planning.tasks.load_task, or
        the task itself) in the plant, or `bone` at that task's entry (a bone other than the imaged
        one: thinner, a porous band): its thrust acts on the drill tip from then on."""
        from quirobot_control.planning.tasks import IncisionTask, load_task
        from quirobot_control.simulation.bone_contact import BoneContact, Drilling

        loaded = task if isinstance(task, IncisionTask) else load_task(task)
        if not isinstance(loaded, IncisionTask):
            raise ValueError(f"task {task!r} has no bone: give an incision task")
        contact = BoneContact(self.plant, Drilling(loaded.entry, loaded.direction, bone or loaded.bone))
        if isinstance(self.plant, RealisticPlant):  # its cutting forces (skiving, chatter) too
            self.plant.set_drilling(loaded.entry, loaded.direction, contact.thrust)
        self.tip_force = contact

    def place_pin(self, layers: Sequence[PinLayer], driver: SpindleParameters, factor: float = 1.0) -> None:
        """The pin driver on the wrist and a threaded pin in the bone: the driver (`driver`,
        models.spindle's parameters at the pin's speed and torque) replaces the drill's spindle, and
        from now on each period loads it with the insertion torque (models.pin_insertion: `layers`,
        scaled by `factor`) at the feed's travel since now (m: the pin's tip at the bone surface
        here, the feed carrying the pin)."""
        self.spindle = Spindle(driver)
        self._pin = (tuple(layers), float(factor), float(self.plant.position[-1]))

    def true_tip(self) -> np.ndarray:
        """(3,) m, world: the plant's drill tip (simulation ground truth, module docstring)."""
        return np.array(self.plant.tip, dtype=float)

    def before_read(self) -> None:
        """Latch every encoder at the plant's state."""
        self.plant.sense(self._drive_array)

    def after_write(self) -> None:
        """One control period of drive electronics and physics (MujocoPlant.step_period)."""
        began = perf_counter()
        self.last_efforts = self.plant.step_period(self._drive_array, self.substeps, self.tip_force)
        self.physics_wall = perf_counter() - began
        thrust = getattr(self.tip_force, "force", 0.0) if self.tip_force is not None else 0.0
        if self._pin is not None:
            layers, factor, start = self._pin
            depth = float(self.plant.position[-1]) - start
            self.spindle.external_torque = float(insertion_torque(depth, layers, factor))
        self.spindle.update(self.dt, float(thrust))

    def close(self) -> list[str]:
        """Quick-stop every drive (the simulation needs no other release)."""
        problems = []
        for drive in self.drives.values():
            try:
                drive.quick_stop()
            except DriveError as error:
                problems.append(str(error))
        return problems


def simulated_bridge(
    params: RobotParameters,
    control: ControlConfig,
    robot_description: str,
    *,
    now: float,
    initial: Sequence[float] | None = None,
    absolute_encoders: bool = True,
    plant: str = "ideal",
    seed: int = 0,
    plant_parameters: PlantParameters | None = None,
    compensated: bool = True,
    machine: int | None = None,
) -> DriveBridge:
    """drive_node's bridge (bridge.drive_bridge.open_bridge) on a SimulatedBackend of the joints of
    `robot_description`'s <ros2_control> block (see SimulatedBackend for `initial`,
    `absolute_encoders`, `plant`, `seed`, `plant_parameters`, `compensated`, `machine`). `plant` "realistic":
    the realistic plant run as `quirobot simulate --plant realistic` runs it, with its compensation:
    the host's PID (control.yaml drive_mode.simulation, CST: the dual-loop wrist on the load-side
    encoders was designed and measured with it) and the bone's thrust fed forward (not with
    `compensated` False). `now`: the adapter's clock, s."""
    joints = [joint.name for joint in hardware_info_from_urdf(robot_description).joints]
    backend = SimulatedBackend(
        params,
        control,
        initial,
        joints=joints,
        absolute_encoders=absolute_encoders,
        plant=plant,
        seed=seed,
        plant_parameters=plant_parameters,
        compensated=compensated,
        machine=machine,
    )
    realistic = plant == "realistic"
    return open_bridge(
        backend,
        params,
        control,
        robot_description,
        now=now,
        drive_mode=control.simulation_drive_mode if realistic else None,
        thrust_feedforward=realistic and compensated,  # the compensation's, as simulate's
    )
