"""Closed-loop simulation: planned trajectory -> QuirobotHardware (safety, PID) -> simulated
brushless drives -> MuJoCo rigid-body physics (simulation.plant), with the bone's drilling thrust.

The bone's thrust is applied at the drill tip along the drilling axis (world frame), so the
feed axis and the whole arm carry it. The controller runs at the control rate: read, set the
trajectory's commands (with the model-based feed-forward computed along the plan in one batch),
write.

Drilling process safety (optional, `monitor` and `spindle`): the host runs the drilling monitor
(safety.drilling_monitor) every cycle between read and write, on the feed drive's effort and the
spindle model (models.spindle, switched on at the align phase and off after the retract). An
event stops the feed. A fault (thrust limit, spindle stall, spindle not at speed) is the host's
stop (`QuirobotHardware.stop`: a category 1 quick stop of every drive, each decelerating on its
own ramp and braking at standstill; the arm stands still during the feed anyway), named in
log.stop_reason. A breakthrough ends the feed as planned: the host decelerates the feed at its
acceleration limit (safety.feed_stop.FeedStop, a category 2 stop of the feed, as the drive bridge
does: held under power, the arm fed gravity only), holds it through the dwell and rejoins the
plan over the retract phase (`rejoin`, a smooth fade the bridge cannot do: it does not know the
plan's phases, so it holds until the retract passes the held depth); the task goes on. An early
breakthrough (short of the imaged far cortex) ends the feed the same way, but is no success: its
message is log.stop_reason.

Fault injection hooks: `before_cycle`, `host_running` (False: the host no longer calls read or
write, the drives keep being advanced by the plant: a lost master) and `end_time`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from quirobot_control.drive_simulators.drive_array import DriveArray
from quirobot_control.drive_simulators.simulated_drive import SimulatedDrive, drive_for_joint
from quirobot_control.hardware.component import QuirobotHardware
from quirobot_control.hardware.control_config import ControlConfig
from quirobot_control.hardware.hardware_info import hardware_info_from_urdf
from quirobot_control.hardware.lifecycle import CallbackReturn, ReturnType
from quirobot_control.models.dynamics import Dynamics, gravity_model
from quirobot_control.models.rigid_body import build_model, reflected_rotor_inertia
from quirobot_control.models.spindle import Spindle
from quirobot_control.planning.trajectory import JointTrajectory
from quirobot_control.safety.drilling_monitor import DrillingEvent, DrillingMonitor
from quirobot_control.safety.feed_stop import FeedStop
from quirobot_control.safety.stop_codes import StopCode
from quirobot_control.simulation.bone_contact import BoneContact, Drilling
from quirobot_control.simulation.plant import MujocoPlant, SimulationError
from quirobot_control.simulation.realistic_plant import RealisticPlant
from quirobot_control.simulation.thrust_feedforward import thrust_feedforward
from quirobot_description.geometric_errors import GeometricErrors
from quirobot_description.parameters import JOINT_NAMES, DrillParameters, RobotParameters
from quirobot_description.plant_parameters import PLANTS, PlantParameters
from quirobot_description.urdf import robot_description
from quirobot_kinematics import KinematicModel, forward_kinematics

#: The plant of `quirobot simulate` and `quirobot_control.simulate`: the realistic one, now that the
#: controller meets the targets on it (docs/accuracy.md); the ideal plant (the controller's own
#: model) stays the engine's default for the design checks.
DEFAULT_PLANT = "realistic"


#: s of physics simulated after a stop (controller stopped, drives quick-stopped, brakes engaging):
#: what the robot does after a stop is part of the run (it coasts, sags or is held), so the log
#: and the metrics keep it. Half a second covers the brakes' 15 ms and the arm coming to rest.
POST_STOP_TIME = 0.5


@dataclass
class SimulationLog:
    """Everything recorded at the control rate; arrays (N, ...) of SI values."""

    names: tuple[str, ...]
    time: np.ndarray  # (N,) s
    position: np.ndarray  # (N, 6) true joint positions
    velocity: np.ndarray  # (N, 6)
    measured: np.ndarray  # (N, 6) encoder positions
    reference: np.ndarray  # (N, 6) planned positions
    current: np.ndarray  # (N, 6) current commands, A
    effort: np.ndarray  # (N, 6) drive efforts, N or N*m
    tip: np.ndarray  # (N, 3) drill tip, world, m (the plant's true tip)
    planned_tip: np.ndarray  # (N, 3) planned drill tip (FK of the plan), m
    tool0: np.ndarray  # (N, 3) tool0, world, m
    planned_tool0: np.ndarray  # (N, 3) planned tool0 (FK of the plan), m
    thrust: np.ndarray  # (N,) bone thrust, N
    controller_time: np.ndarray  # (N,) wall time of read + write, s
    tip_orientation: np.ndarray | None = None  # (N, 4) true drill-tip orientation, quaternion w x y z
    measured_velocity: np.ndarray | None = None  # (N, 6) velocities as the drives report them
    wall_time: float = 0.0  # s for the whole run
    stop_reason: str | None = None
    stop_code: StopCode = StopCode.NONE  # the stop's kind (safety.stop_codes), as the hardware latched it
    events: list[str] = field(default_factory=list)
    stop_time: float | None = None  # s, when the controller stopped; the physics ran on after it
    spindle_speed: np.ndarray | None = None  # (N,) rad/s, with a spindle
    thrust_estimate: np.ndarray | None = None  # (N,) N, the drilling monitor's filtered feed thrust
    drilling_event: DrillingEvent | None = None  # what stopped the feed (drilling monitor), if anything

    @property
    def simulated_time(self) -> float:
        return float(self.time[-1]) if len(self.time) else 0.0


def plan_feedforward(
    params: RobotParameters,
    trajectory: JointTrajectory,
    *,
    gravity: bool = True,
    inverse_dynamics: bool = True,
) -> np.ndarray:
    """(N, 6) model-based efforts along the plan, at the middle of each control period.

    inverse_dynamics: the arm's rigid-body inverse dynamics (with the reflected rotor inertia and
    friction) and the feed axis' (bit + rotor inertia, viscous friction), without gravity;
    gravity: the gravity efforts (the arm's model, the bit's weight along the tool axis).
    Both False: zeros (the PID alone, with its velocity feed-forward).
    """
    feed_index = DrillParameters.feed_index  # the drill feed's column
    q = trajectory.positions
    qd = trajectory.velocities
    qdd = trajectory.accelerations
    qdd_mid = 0.5 * (qdd + np.vstack([qdd[1:], qdd[-1:]]))
    qd_mid = 0.5 * (qd + np.vstack([qd[1:], qd[-1:]]))
    arm = slice(0, len(JOINT_NAMES))
    model = build_model(params).with_armature(reflected_rotor_inertia(params))
    dynamics = Dynamics(model)
    efforts = np.zeros_like(q)
    drill = params.drill
    if inverse_dynamics:
        efforts[:, arm] = dynamics.inverse_dynamics(q[:, arm], qd_mid[:, arm], qdd_mid[:, arm], friction=True)
        efforts[:, arm] -= dynamics.gravity_torques(q[:, arm])
        feed_drive = drive_for_joint(params, DrillParameters.feed_joint)
        efforts[:, feed_index] = (feed_drive.reflected_inertia + drill.bit_mass) * qdd_mid[
            :, feed_index
        ] + drill.feed.damping * qd_mid[:, feed_index]
    if gravity:
        efforts += gravity_model(params)(q)
    return efforts


def planned_tip(params: RobotParameters, trajectory: JointTrajectory) -> tuple[np.ndarray, np.ndarray]:
    """(tip, tool0): the planned drill tip and tool0 (N, 3) in the world, m (FK of the plan, the
    feed along tool z)."""
    q = trajectory.positions
    poses = forward_kinematics(q[:, : len(JOINT_NAMES)], KinematicModel.from_parameters(params))
    feed = DrillParameters.feed_index
    tip = poses[:, :3, 3] + poses[:, :3, 2] * q[:, feed : feed + 1]
    return tip, poses[:, :3, 3]


def rejoin(offset: float, u: float, duration: float) -> tuple[float, float, float]:
    """An offset (m) faded out smoothly over a phase: (position, velocity, acceleration) to add to
    the plan at phase fraction u in [0, 1] of `duration` s (smoothstep: starts and ends at rest)."""
    u = min(max(u, 0.0), 1.0)
    return (
        offset * (1.0 - (3.0 * u**2 - 2.0 * u**3)),
        -offset * (6.0 * u - 6.0 * u**2) / duration,
        -offset * (6.0 - 12.0 * u) / duration**2,
    )


class ClosedLoopSimulation:
    """One closed-loop run of a planned trajectory (see the module docstring)."""

    #: The simulated robot's axes: the plant's, which carries the drill (axes_for("drill")).
    axes: tuple[str, ...] = MujocoPlant.axes

    def __init__(
        self,
        params: RobotParameters,
        control: ControlConfig,
        trajectory: JointTrajectory,
        *,
        drilling: Drilling | None = None,
        feedforward: bool | None = None,
        urdf: Path | None = None,
        plant: str = "ideal",
        compensated: bool = True,
        plant_parameters: PlantParameters | None = None,
        seed: int = 0,
        monitor: DrillingMonitor | None = None,
        spindle: Spindle | None = None,
        geometric: GeometricErrors | None = None,
    ) -> None:
        """plant: "ideal" (MuJoCo's rigid bodies, the controller's own model) or "realistic"
        (simulation.realistic_plant, `plant_parameters` or the parameter file's, noise from `seed`;
        `compensated`: the load-side wrist encoders of the design, False: the motor encoders).
        monitor, spindle: the drilling process safety (module docstring); with `drilling` only.
        geometric: the realistic plant's geometric errors (default none: the nominal machine)."""
        if plant not in PLANTS:
            raise SimulationError(f"unknown plant {plant!r}; choose one of {', '.join(PLANTS)}")
        self.params = params
        self.control = control
        self.trajectory = trajectory
        self.drilling = drilling
        self.dt = control.dt
        self.substeps = control.physics_substeps
        # The drives watch the master like real ones (drive.master_timeout): a host that stops
        # calling write (the master-loss fault) leaves them to stop by themselves.
        self.drives: dict[str, SimulatedDrive] = {
            name: drive_for_joint(params, name, master_watchdog=True) for name in self.axes
        }
        armature = np.array([self.drives[name].reflected_inertia for name in self.axes])
        self.plant: MujocoPlant | RealisticPlant
        if plant == "realistic":
            self.plant = RealisticPlant(
                params,
                plant_parameters or params.plant,
                [self.drives[name] for name in self.axes],
                self.dt / self.substeps,
                compensated=compensated,
                rng=np.random.default_rng(seed),
                urdf=urdf,
                geometric=geometric,
            )
            self.drives = dict(zip(self.axes, self.plant.drives, strict=True))
        else:
            self.plant = MujocoPlant(params, armature, self.dt / self.substeps, urdf)
        # The simulation keeps the host PID (control.yaml drive_mode.simulation: cst).
        self.hardware = QuirobotHardware(
            params, control, lambda name: self.drives[name], drive_mode=control.simulation_drive_mode
        )
        info = hardware_info_from_urdf(robot_description("drill", "mock"))
        if self.hardware.on_init(info) is not CallbackReturn.SUCCESS:
            raise SimulationError(f"hardware on_init failed: {self.hardware.stop_reason}")
        if tuple(self.hardware.joint_names) != self.axes:
            raise SimulationError(f"the URDF's ros2_control joints are {self.hardware.joint_names}")
        # Model-based feed-forward as configured (control.yaml feedforward.*); False: none.
        use = feedforward is not False
        self._gravity_feedforward = use and control.gravity_feedforward
        self.feedforward = plan_feedforward(
            params,
            trajectory,
            gravity=use and control.gravity_feedforward,
            inverse_dynamics=use and control.inverse_dynamics_feedforward,
        )
        self.contact = BoneContact(self.plant, drilling) if drilling else None
        self.thrust = self.contact.thrust if self.contact else None
        if drilling and isinstance(self.plant, RealisticPlant):
            self.plant.set_drilling(drilling.entry, drilling.direction, self.thrust)
            if compensated and self.feedforward is not None:  # the compensation's thrust feed-forward
                self.feedforward = self.feedforward + thrust_feedforward(
                    params, trajectory, drilling.entry, drilling.direction, drilling.bone
                )
        self.planned_tip, self.planned_tool0 = planned_tip(params, trajectory)
        #: Hook called before each control cycle with (cycle index, simulation): tests inject faults here.
        self.before_cycle: Callable[[int, ClosedLoopSimulation], None] | None = None
        #: Extra world force (3,) N at the drill tip, e.g. a collision in a test.
        self.external_tip_force: np.ndarray | None = None
        #: False: the host has stopped calling read/write (a lost master); the plant runs on.
        self.host_running = True
        #: s: the run ends at this time (fault injection: the observation window), None: the plan's end.
        self.end_time: float | None = None
        self.monitor = monitor if drilling is not None else None
        self.spindle = spindle if drilling is not None else None
        self.feed_stop: FeedStop | None = None
        self._spindle_started = False
        self._retract_index = 0
        self._hold: tuple[np.ndarray, np.ndarray] | None = None  # arm hold: positions, feed-forward
        if drilling is not None:
            self.planned_depth = (self.planned_tip - drilling.entry) @ drilling.direction
        names = {phase.name: phase for phase in trajectory.phases}
        self._spindle_window = (
            names["align"].start_time if "align" in names else 0.0,
            names["retract"].end_time if "retract" in names else math.inf,
        )
        self._retract = names.get("retract")

    def run(self, progress: Callable[[int], None] | None = None, stop_on_error: bool = True) -> SimulationLog:
        """Run the whole trajectory; `progress(cycles_done)` is called every 100 cycles.

        After a stop the physics runs on for POST_STOP_TIME (to the end with stop_on_error=False),
        recorded like the rest; log.stop_time says when the controller stopped."""
        import time as clock

        trajectory = self.trajectory
        count = len(trajectory.positions)
        n = len(self.axes)
        log = SimulationLog(
            names=self.axes,
            time=np.arange(count) * self.dt,
            position=np.zeros((count, n)),
            velocity=np.zeros((count, n)),
            measured=np.zeros((count, n)),
            reference=trajectory.positions,
            current=np.zeros((count, n)),
            effort=np.zeros((count, n)),
            tip=np.zeros((count, 3)),
            planned_tip=self.planned_tip,
            tool0=np.zeros((count, 3)),
            planned_tool0=self.planned_tool0,
            thrust=np.zeros(count),
            controller_time=np.zeros(count),
            tip_orientation=np.zeros((count, 4)),
            measured_velocity=np.zeros((count, n)),
        )
        plant = self.plant
        plant.reset(trajectory.positions[0])
        # The drives advance together, one call per physics step (drive_simulators.drive_array); the
        # realistic plant steps the drives inside its wrappers.
        drives = plant.drive_array if isinstance(plant, RealisticPlant) else DriveArray(self.drives.values())
        plant.sense(drives)
        hardware = self.hardware
        if hardware.on_configure() is not CallbackReturn.SUCCESS:
            raise SimulationError(f"hardware on_configure failed: {hardware.stop_reason}")
        if hardware.on_activate() is not CallbackReturn.SUCCESS:
            raise SimulationError(f"hardware on_activate failed: {hardware.stop_reason}")
        drilling = self.drilling
        contact = self.contact

        def tip_force(h: float) -> np.ndarray | None:
            """The bone's thrust (while drilling) plus any external force at the tip, world, N."""
            force = contact(h) if contact is not None else None
            if self.external_tip_force is not None:
                force = self.external_tip_force if force is None else force + self.external_tip_force
            return force

        if self.spindle is not None:
            log.spindle_speed = np.zeros(count)
        if self.monitor is not None:
            log.thrust_estimate = np.zeros(count)
        started = clock.perf_counter()
        last = count
        stopped_at: int | None = None
        post_stop_cycles = int(round(POST_STOP_TIME / self.dt))
        status = ReturnType.OK
        for k in range(count):
            t = k * self.dt
            if self.end_time is not None and t > self.end_time + 1e-9:
                last = k
                break
            if self.before_cycle is not None:
                self.before_cycle(k, self)
            plant.sense(drives)  # the encoders sample at the start of the cycle (the sync instant)
            # Record the state at t (before this period's physics), paired with the plan at t.
            plant.forward_kinematics()
            log.position[k] = plant.position
            log.velocity[k] = plant.velocity
            log.tip[k] = plant.tip
            log.tip_orientation[k] = plant.tip_quaternion
            log.tool0[k] = plant.tool0
            log.thrust[k] = contact.force if contact is not None else 0.0
            if self.spindle is not None:
                self._run_spindle(t, log.thrust[k])
                log.spindle_speed[k] = self.spindle.speed
            tick = clock.perf_counter()
            if self.host_running:
                status = hardware.read(t, self.dt)
                if status is ReturnType.OK:
                    position, velocity, effort = self._commands(k, t)
                    event = self._monitor_cycle(k, t, velocity)
                    if event is not None:  # the feed stops this cycle
                        position, velocity, effort = self._commands(k, t)
                        if event.is_fault:  # a fault: the host's one way to stop
                            hardware.stop(event.message, StopCode.DRILLING_MONITOR)
                    hardware.set_commands(t, position, velocity, None, effort)
                    status = hardware.write(t, self.dt)
            if self.monitor is not None:
                log.thrust_estimate[k] = self.monitor.thrust
            log.controller_time[k] = clock.perf_counter() - tick
            log.measured[k] = [j.state["position"] for j in hardware.joints]
            log.measured_velocity[k] = [j.state["velocity"] for j in hardware.joints]
            log.current[k] = hardware.currents
            pushed = drilling is not None or self.external_tip_force is not None
            log.effort[k] = plant.step_period(drives, self.substeps, tip_force if pushed else None)
            if progress is not None and k % 100 == 0:
                progress(k)
            if stopped_at is None and hardware.stop_reason is not None and status is ReturnType.ERROR:
                stopped_at = k
            if stop_on_error and stopped_at is not None and k - stopped_at >= post_stop_cycles:
                last = k + 1
                break
        log.wall_time = clock.perf_counter() - started
        event = self.monitor.event if self.monitor is not None else None
        log.drilling_event = event
        log.stop_reason, log.stop_code = hardware.stop_reason, hardware.stop_code
        if log.stop_reason is None and event is not None and not event.success:
            log.stop_reason, log.stop_code = event.message, StopCode.DRILLING_MONITOR
        log.stop_time = None if stopped_at is None else stopped_at * self.dt
        log.events = list(hardware.events)
        if last < count:
            for name in (
                "time",
                "position",
                "velocity",
                "measured",
                "reference",
                "current",
                "effort",
                "tip",
                "planned_tip",
                "tool0",
                "planned_tool0",
                "thrust",
                "controller_time",
                "tip_orientation",
                "measured_velocity",
                "spindle_speed",
                "thrust_estimate",
            ):
                if getattr(log, name) is not None:
                    setattr(log, name, getattr(log, name)[:last])
        return log

    # --- drilling process safety --------------------------------------------------------------
    @property
    def feed_stop_retracts(self) -> bool:
        """The feed stop ended the feed as a breakthrough does (early or not): the task retracts."""
        event = self.monitor.event if self.monitor is not None else None
        return event is not None and not event.is_fault

    def _run_spindle(self, t: float, thrust: float) -> None:
        """The spindle's schedule (on from the align phase to the end of the retract), one step."""
        spindle = self.spindle
        on, off = self._spindle_window
        if on <= t < off and spindle.command == 0.0 and not spindle.stalled and not self._spindle_started:
            spindle.switch_on()
            self._spindle_started = True
        elif t >= off and spindle.command > 0.0:
            spindle.switch_off()
        spindle.update(self.dt, thrust)

    def _commands(self, k: int, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """This cycle's position, velocity and feed-forward commands: the plan's, or after a feed
        stop the held arm and the stopping (then held, then rejoining) feed."""
        feed_index = DrillParameters.feed_index  # the drill feed's column
        trajectory = self.trajectory
        position, velocity = trajectory.positions[k], trajectory.velocities[k]
        effort = self.feedforward[k] if self.feedforward is not None else None
        stop = self.feed_stop
        if stop is None:
            return position, velocity, effort
        retract = self._retract
        if self.feed_stop_retracts and retract is not None and t >= retract.start_time:
            if t > retract.end_time:
                return position, velocity, effort
            # Rejoin the plan over the retract from where the feed stopped.
            offset = stop.rest_position - trajectory.positions[self._retract_index, feed_index]
            extra, extra_velocity, _ = rejoin(
                offset,
                (t - retract.start_time) / (retract.end_time - retract.start_time),
                retract.end_time - retract.start_time,
            )
            position, velocity = position.copy(), velocity.copy()
            position[feed_index] += extra
            velocity[feed_index] += extra_velocity
            return position, velocity, effort
        hold_position, hold_effort = self._hold
        position, velocity = hold_position.copy(), np.zeros_like(velocity)
        position[feed_index], velocity[feed_index], _ = stop.command(t)
        return position, velocity, hold_effort

    def _monitor_cycle(self, k: int, t: float, velocity: np.ndarray) -> DrillingEvent | None:
        """Run the drilling monitor; the event that stops the feed this cycle, if any (the first
        one also starts the host's feed stop)."""
        feed_index = DrillParameters.feed_index  # the drill feed's column
        monitor = self.monitor
        if monitor is None:
            return None
        spindle = self.spindle
        feed = self.hardware.joints[feed_index]
        stop = self.feed_stop
        if stop is None:
            acceleration = float(self.trajectory.accelerations[k, feed_index])
        else:
            acceleration = stop.command(t)[2]
        depth = float(
            self.planned_depth[k] + feed.state["position"] - self.trajectory.positions[k, feed_index]
        )
        event = monitor.update(
            t,
            self.dt,
            depth=depth,
            effort=feed.state["effort"],
            velocity=feed.state["velocity"],
            commanded_velocity=float(velocity[feed_index]),
            commanded_acceleration=acceleration,
            spindle_at_speed=spindle.at_speed if spindle is not None else True,
            spindle_stalled=spindle.stalled if spindle is not None else False,
            spindle_reason=spindle.stall_reason if spindle is not None else None,
        )
        if event is None or self.feed_stop is not None:
            return event
        position = self.trajectory.positions[k]
        self.feed_stop = FeedStop(
            t, float(position[feed_index]), float(velocity[feed_index]), self.params.drill.feed.acceleration
        )
        # The arm holds where the plan is; only gravity is fed forward (no planned thrust any more).
        self._hold = (position.copy(), self._gravity(position[None, :])[0])
        if self._retract is not None:
            self._retract_index = int(round(self._retract.start_time / self.dt))
        return event

    def _gravity(self, q: np.ndarray) -> np.ndarray:
        """(1, 6) gravity feed-forward at q (1, 6), if the run feeds gravity forward, else zeros."""
        return gravity_model(self.params)(q) if self._gravity_feedforward else np.zeros(q.shape)
