"""A procedure on the robot's own path, in-process: the DrillHole executor (task_node's core) over
the drive bridge (drive_node's core) on the simulated backend, one control period at a time
(simulation.bridge_port.BridgePort), recorded into a `SimulationLog` for the hole's metrics
(`run_drill_hole`); a planned joint trajectory (the line, the accuracy budget's incisions)
tracked by the same controllers and bridge (`run_trajectory`); or a command stream read off the
robot's joint states every period (the scope servo, `run_streamed`).

What `quirobot simulate --task incision` runs (issue 31: one implementation of each procedure, one
set of safety rules): the executor's readiness wait, plan, checks every control period, cancel
policy and result; the bridge's start-up handshake, safety layer, drives (CSP on the ideal plant,
as on the bus; the realistic plant's compensation on the realistic one: simulated_backend), the
drilling monitor of the context the executor sends, the breakthrough hold and the thrust limit.
Only the transport is left out (DDS, the controller manager's scheduling): the trajectory
controllers are BridgePort's, sampling the trajectory each control period as
joint_trajectory_controller does.

The log starts when the motion starts (the executor's start time, `start`: the log's time 0, so
the plan's phases keep their times) and ends when the goal ends, with one row per sample of the
plan at most; a stop is followed by POST_STOP_TIME of physics (simulation_log).
`reference`, `planned_tip` and `planned_tool0` are the first trajectory sent (the plan) at each
period.
"""

from __future__ import annotations

import time as clock
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from quirobot_control.axes.virtual_fixtures import VirtualFixtures
from quirobot_control.hardware.control_config import ControlConfig
from quirobot_control.models.bone import BoneParameters
from quirobot_control.planning.tasks import IncisionTask
from quirobot_control.planning.trajectory import JointTrajectory, Phase
from quirobot_control.procedures.drill_hole_executor import DrillHoleExecutor, DrillRequest, ExecutorConfig
from quirobot_control.procedures.drill_hole_types import DrillResult
from quirobot_control.safety.drilling_monitor import DrillingEvent
from quirobot_control.safety.hole_context import HoleContext
from quirobot_control.simulation.bridge_port import COLUMNS, BridgePort
from quirobot_control.simulation.faults import FaultInjector
from quirobot_control.simulation.plant import SimulationError
from quirobot_control.simulation.simulated_backend import simulated_bridge
from quirobot_control.simulation.simulation_log import POST_STOP_TIME, SimulationLog, planned_tip
from quirobot_description.parameters import RobotParameters
from quirobot_description.plant_parameters import PlantParameters
from quirobot_description.urdf import robot_description

__all__ = [
    "ExecutorRun",
    "StreamedCommand",
    "run_drill_hole",
    "run_streamed",
    "run_trajectory",
    "streamed_trajectory",
]


@dataclass
class ExecutorRun:
    """One goal's run: the executor's result, the plan it sent and the log (module docstring)."""

    result: DrillResult | None  # None: the run ended before the goal (an observation window, `end_time`)
    trajectory: JointTrajectory
    log: SimulationLog


class _Row(NamedTuple):
    """One period's record: SimulationLog's fields of the same names, at the period's end."""

    time: float  # s on the log's clock
    position: np.ndarray  # (6,) true joints
    velocity: np.ndarray  # (6,)
    measured: list[float]  # (6,) the hardware's position states (encoders)
    measured_velocity: list[float]  # (6,)
    current: list[float]  # (6,) A, the drives' measured currents
    effort: np.ndarray  # (6,) N or N*m, the drives' efforts on the plant
    tip: np.ndarray  # (3,) m, world
    tip_orientation: np.ndarray  # (4,) w x y z
    tool0: np.ndarray  # (3,) m, world
    thrust: float  # N, the bone's
    controller_time: float  # s of wall time, the bridge's period without the physics
    spindle_speed: float  # rad/s
    thrust_estimate: float  # N, the drilling monitor's


class _Recorder:
    """The plant and the bridge after each period, from the motion's start on (see the module)."""

    def __init__(self, progress: Callable[[int], None] | None) -> None:
        self.rows: list[_Row] = []
        self.start: float | None = None
        self.event: DrillingEvent | None = None
        self.stop_time: float | None = None  # s on the log's clock: when the hardware stopped
        self.progress = progress

    def motion_time(self, port: BridgePort) -> float | None:
        """s on the log's clock now (the motion's start is 0), None before the motion starts."""
        if self.start is None and port.sent:
            self.start = port.sent[0][2]
        if self.start is None or port.time < self.start - 1e-9:
            return None
        return port.time - self.start

    def __call__(self, port: BridgePort) -> None:
        bridge = port.bridge
        monitor = bridge.thrust_monitor
        if monitor is not None and bridge.hole.context is not None and monitor.event is not None:
            self.event = self.event or monitor.event  # the hole's: its monitor goes with the goal
        t = self.motion_time(port)
        if t is None:
            return
        backend = bridge.backend
        plant = backend.plant  # its kinematics are the period's end's (BridgePort updated them)
        hardware = bridge.hardware
        if self.stop_time is None and hardware.stop_reason is not None:
            self.stop_time = t
        thrust = getattr(backend.tip_force, "force", 0.0) if backend.tip_force is not None else 0.0
        # Positional, in _Row's order, and ndarray.copy for the plant's float arrays (the same
        # values): keywords and np.array took a sixth of the row's time, every period.
        self.rows.append(
            _Row(
                t,
                plant.position.copy(),
                plant.velocity.copy(),
                hardware.states("position"),  # measured: the bridge's joints, its order
                hardware.states("velocity"),
                [bridge.drives[name].current for name in bridge.names],  # SimulatedDrive's
                backend.last_efforts.copy(),
                port.tips[-1][1],  # the plant's tip this period, copied by BridgePort._period
                plant.tip_quaternion.copy(),
                plant.tool0.copy(),
                float(thrust),
                port.period_wall,
                backend.spindle.speed,
                monitor.thrust if monitor is not None else 0.0,
            )
        )
        if self.progress is not None and len(self.rows) % 100 == 1:
            self.progress(len(self.rows) - 1)


class _RunEndError(Exception):
    """The run's end time has come (raised from the port's period: the executor stops there)."""


class _BridgeFaults:
    """The robot's path as a `simulation.faults.FaultTarget`: the bridge's drives, hardware and
    hole monitor, the plant's spindle and bone contact, and the port as drive_node (host_running)."""

    def __init__(self, bridge, end_time: float | None) -> None:
        self.bridge = bridge
        self.dt = bridge.dt
        self.end_time = end_time
        self.port: BridgePort | None = None

    @property
    def host_running(self) -> bool:
        return self.port.host_running

    @host_running.setter
    def host_running(self, running: bool) -> None:
        self.port.host_running = running

    @property
    def drives(self):
        return self.bridge.drives

    @property
    def hardware(self):
        return self.bridge.hardware

    @property
    def spindle(self):
        return self.bridge.backend.spindle

    @property
    def contact(self):
        return self.bridge.backend.tip_force

    @property
    def monitor(self):
        return self.bridge.thrust_monitor

    def before_period(
        self, recorder: _Recorder, injectors: Sequence[FaultInjector]
    ) -> Callable[[BridgePort], None]:
        """The port's hook: from the motion's start, each injector at cycle k (the log's row), and
        the end of the run after `end_time`."""

        def hook(port: BridgePort) -> None:
            self.port = port
            t = recorder.motion_time(port)
            if t is None:
                return
            if self.end_time is not None and t > self.end_time + 1e-9:
                raise _RunEndError
            k = int(round(t / self.dt))
            for injector in injectors:
                injector(k, self)

        return hook


def run_drill_hole(
    task: IncisionTask,
    params: RobotParameters,
    control: ControlConfig,
    *,
    depth: float,
    feed_rate: float,
    thrust_limit: float,
    plant: str = "ideal",
    seed: int = 0,
    plant_parameters: PlantParameters | None = None,
    compensated: bool = True,
    bone: BoneParameters | None = None,
    injectors: Sequence[FaultInjector] = (),
    end_time: float | None = None,
    progress: Callable[[int], None] | None = None,
) -> ExecutorRun:
    """A DrillHole goal for `task` (its file: bone, no-go zones, standoff, dwell) to `depth` (m) at
    `feed_rate` (m/s) under `thrust_limit` (N), from the task's park pose, on the simulated
    `plant` (`seed`: the realistic plant's encoder noise; `plant_parameters`, `compensated`: see
    SimulatedBackend) with the task's bone in it, or `bone` (the bone drilled where it differs
    from the imaged one the goal is planned on). `injectors`: faults applied at the start of their
    control period (simulation.faults; `detected` recorded), on the log's clock. `end_time` (s on
    the log's clock): the run ends after it (a phase's end); an injection's observation window may
    end it sooner. `progress(periods)` every 100 recorded periods. Raises SimulationError if the
    executor never sends the goal (its message)."""
    from quirobot_control.planning.drill_hole import DrillGoal

    urdf = robot_description("drill", "real")
    bridge = simulated_bridge(
        params,
        control,
        urdf,
        now=0.0,
        initial=task.park,
        plant=plant,
        seed=seed,
        plant_parameters=plant_parameters,
        compensated=compensated,
    )
    bridge.backend.place_bone(task, bone)
    recorder = _Recorder(progress)
    faults = _BridgeFaults(bridge, end_time)
    port = BridgePort(bridge, on_period=recorder, before_period=faults.before_period(recorder, injectors))
    # No transport: no lag to allow for (task_node's default allows for the joint states' age).
    config = ExecutorConfig.shipped(params, tracking_lag=0.0)
    goal = DrillGoal(task.entry, task.direction, depth, feed_rate, thrust_limit)
    result: DrillResult | None = None
    started = clock.perf_counter()
    with bridge:
        try:
            result = DrillHoleExecutor(port, config).run(DrillRequest(goal=goal, task=task))
            if not port.sent:
                raise SimulationError(f"the DrillHole goal did not start: {result.message}")
            if bridge.hardware.stop_reason is not None:  # the physics after a stop, as the robot does it
                port.sleep(POST_STOP_TIME)
        except _RunEndError:  # the observation window or the phase asked for is over
            pass
    wall = clock.perf_counter() - started
    if faults.end_time is not None:  # the rows up to the end of the observation window
        recorder.rows = [row for row in recorder.rows if row.time <= faults.end_time + 1e-9]
    trajectory = port.sent[0][1]
    log = _log(recorder, bridge, trajectory, params, result, wall)
    return ExecutorRun(result=result, trajectory=trajectory, log=log)


def run_trajectory(
    trajectory: JointTrajectory,
    params: RobotParameters,
    control: ControlConfig,
    *,
    plant: str = "ideal",
    seed: int = 0,
    plant_parameters: PlantParameters | None = None,
    compensated: bool = True,
    fixtures: VirtualFixtures | None = None,
    incision: IncisionTask | None = None,
    bone: BoneParameters | None = None,
    hole: HoleContext | None = None,
    injectors: Sequence[FaultInjector] = (),
    end_time: float | None = None,
    progress: Callable[[int], None] | None = None,
) -> SimulationLog:
    """A planned joint trajectory (6 columns: the arm's joints, then the feed) tracked on the
    robot's own path: its two parts sent to BridgePort's trajectory controllers at once, one period
    after the bridge came up at the plan's first pose, the drive bridge (hardware component, safety
    layer, the task's `fixtures` if given) on the simulated `plant` (`seed`, `plant_parameters`,
    `compensated`: see SimulatedBackend), with `incision`'s bone in the plant if given (or `bone`
    at its entry: a bone other than the imaged one) and `hole` the drilling context the drive side
    runs (its monitor, fixtures and thrust feed-forward, as a DrillHole goal's: planning.
    drill_hole.DrillPlan.hole_context), in force before the motion starts. What the line, the
    arthroscopy, the accuracy budget's short incisions and an incision with its breakthrough
    detector off on purpose run (issue 31: one loop for every procedure).
    `injectors`, `end_time`, `progress`: as run_drill_hole. The log starts with the motion; a stop
    is followed by POST_STOP_TIME of physics."""
    bridge = simulated_bridge(
        params,
        control,
        robot_description("drill", "real"),
        now=0.0,
        initial=trajectory.positions[0],
        plant=plant,
        seed=seed,
        plant_parameters=plant_parameters,
        compensated=compensated,
    )
    if fixtures is not None:
        bridge.hardware.set_fixtures(fixtures)
    if incision is not None:
        bridge.backend.place_bone(incision, bone)
    if hole is not None:
        bridge.set_drilling_context(hole.goal_id, hole)
    recorder = _Recorder(progress)
    faults = _BridgeFaults(bridge, end_time)
    port = BridgePort(bridge, on_period=recorder, before_period=faults.before_period(recorder, injectors))
    started = clock.perf_counter()
    with bridge:
        try:
            port.sleep(port.dt)  # the controllers take over at the plan's first pose (the hand-over)
            for part in COLUMNS:
                port.send(part, trajectory, port.time)
            hardware = bridge.hardware
            while port.time < port.sent[0][2] + trajectory.duration + 0.5 * port.dt:
                port.sleep(port.dt)
                if hardware.stop_reason is not None:
                    port.sleep(POST_STOP_TIME)  # the physics after a stop, as the robot does it
                    break
        except _RunEndError:  # the observation window or the phase asked for is over
            pass
    wall = clock.perf_counter() - started
    if faults.end_time is not None:
        recorder.rows = [row for row in recorder.rows if row.time <= faults.end_time + 1e-9]
    return _log(
        recorder, bridge, trajectory, params, None, wall, complete=bridge.hardware.stop_reason is None
    )


#: A streamed command for one control period: joints (6,), their velocities (6,), its phase's name.
StreamedCommand = tuple[np.ndarray, np.ndarray, str]


def run_streamed(
    initial: np.ndarray,
    next_command: Callable[[BridgePort], StreamedCommand | None],
    params: RobotParameters,
    control: ControlConfig,
    *,
    plant: str = "ideal",
    compensated: bool = True,
    progress: Callable[[int], None] | None = None,
) -> tuple[JointTrajectory, SimulationLog]:
    """A command stream on the robot's own path, as a servo node streams it to the trajectory
    controller (one point a period): the drive bridge comes up at `initial` (6,) on the simulated
    `plant` (`compensated`: see SimulatedBackend), the controllers take over, then every control
    period `next_command(port)` reads what it needs (the joint states drive_node publishes:
    `port.measured()`, the clock `port.time`) and gives that period's command, until it returns
    None; a stop ends the stream after POST_STOP_TIME of physics. Returns the commands as a
    trajectory (their phases from the names given) and the log (from the first command on)."""
    bridge = simulated_bridge(
        params,
        control,
        robot_description("drill", "real"),
        now=0.0,
        initial=initial,
        plant=plant,
        compensated=compensated,
    )
    recorder = _Recorder(progress)
    port = BridgePort(bridge, on_period=recorder)
    commands: list[StreamedCommand] = []
    started = clock.perf_counter()
    with bridge:
        port.sleep(port.dt)  # the controllers take over at `initial` (the hand-over)
        recorder.start = port.time
        hardware = bridge.hardware
        while (command := next_command(port)) is not None:
            port.command[:], port.velocity[:] = command[0], command[1]  # the point the controller is sent
            commands.append(command)
            port.sleep(port.dt)
            if hardware.stop_reason is not None:
                port.sleep(POST_STOP_TIME)  # the physics after a stop, as the robot does it
                break
        else:  # the controller holds the last command one period more: a row per command and the start
            port.sleep(port.dt)
    wall = clock.perf_counter() - started
    trajectory = streamed_trajectory(initial, commands, port.dt)
    log = _log(recorder, bridge, trajectory, params, None, wall, complete=bridge.hardware.stop_reason is None)
    return trajectory, log


def streamed_trajectory(
    initial: np.ndarray, commands: Sequence[StreamedCommand], dt: float
) -> JointTrajectory:
    """The commands of a stream, one a period `dt` (s) after `initial` (6,) at rest, as a
    trajectory: accelerations from the velocities' differences, a phase for each run of one name
    (`initial` in the first command's)."""
    q = np.array([initial, *(command[0] for command in commands)], dtype=float)
    qd = np.array([np.zeros(len(initial)), *(command[1] for command in commands)], dtype=float)
    qdd = np.vstack([np.zeros((1, q.shape[1])), np.diff(qd, axis=0) / dt])
    names = [commands[0][2] if commands else "start", *(command[2] for command in commands)]
    phases, first = [], 0
    for k in range(1, len(names) + 1):
        if k == len(names) or names[k] != names[first]:
            phases.append(Phase(names[first], first * dt, (k - 1) * dt))
            first = k
    return JointTrajectory(dt, q, qd, qdd, phases=tuple(phases))


def _log(
    recorder: _Recorder,
    bridge,
    trajectory: JointTrajectory,
    params,
    result: DrillResult | None,
    wall: float,
    *,
    complete: bool | None = None,
) -> SimulationLog:
    # A goal that succeeded (`complete`: a plan tracked without a stop): one row per sample of the
    # plan at most (row k is the state at the plan's time k * dt; the
    # controllers' last periods add nothing). Otherwise every row: the executor's retract and
    # withdraw after the plan are what it did.
    rows = recorder.rows
    if complete is None:
        complete = result is not None and result.success
    if complete:
        rows = rows[: len(trajectory.positions)]
    columns = _Row(*(np.array(column) for column in zip(*rows, strict=True)))
    time = columns.time
    # The plan at each recorded period (held at its end after it).
    index = np.clip(np.round(time / bridge.dt).astype(int), 0, len(trajectory.positions) - 1)
    tip, tool0 = planned_tip(params, trajectory)
    start = recorder.start or 0.0
    event = recorder.event
    if event is not None:  # on the log's clock (the motion's start is 0)
        event = replace(event, time=event.time - start)
    hardware = bridge.hardware
    # The robot's latched stop in its own words, else the goal's
    # end if it failed (a refusal mid-way, a path tolerance, an early breakthrough).
    stop_reason, stop_code = hardware.stop_reason, hardware.stop_code
    if stop_reason is None and result is not None and not result.success:
        stop_reason, stop_code = result.message, result.stop_code
    return SimulationLog(
        names=bridge.names,
        time=time,
        position=columns.position,
        velocity=columns.velocity,
        measured=columns.measured,
        reference=trajectory.positions[index],
        current=columns.current,
        effort=columns.effort,
        tip=columns.tip,
        planned_tip=tip[index],
        tool0=columns.tool0,
        planned_tool0=tool0[index],
        thrust=columns.thrust,
        controller_time=columns.controller_time,
        tip_orientation=columns.tip_orientation,
        measured_velocity=columns.measured_velocity,
        wall_time=wall,
        stop_reason=stop_reason,
        stop_code=stop_code,
        events=[*bridge.events, *hardware.events],
        stop_time=recorder.stop_time,
        spindle_speed=columns.spindle_speed,
        thrust_estimate=columns.thrust_estimate,
        drilling_event=event,
    )
