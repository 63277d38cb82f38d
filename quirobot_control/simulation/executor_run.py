"""An incision on the robot's own path, in-process: the DrillHole executor (task_node's core) over
the drive bridge (drive_node's core) on the simulated backend, one control period at a time
(simulation.bridge_port.BridgePort), recorded into a `SimulationLog` for the hole's metrics.

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
plan at most; a stop is followed by POST_STOP_TIME of physics, as ClosedLoopSimulation records.
`reference`, `planned_tip` and `planned_tool0` are the first trajectory sent (the plan) at each
period.
"""

from __future__ import annotations

import time as clock
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from quirobot_control.hardware.control_config import ControlConfig
from quirobot_control.planning.tasks import IncisionTask
from quirobot_control.planning.trajectory import JointTrajectory
from quirobot_control.procedures.drill_hole_executor import DrillHoleExecutor, DrillRequest, ExecutorConfig
from quirobot_control.procedures.drill_hole_types import DrillResult
from quirobot_control.safety.drilling_monitor import DrillingEvent
from quirobot_control.safety.stop_codes import StopCode
from quirobot_control.simulation.bridge_port import BridgePort
from quirobot_control.simulation.closed_loop import POST_STOP_TIME, SimulationLog, planned_tip
from quirobot_control.simulation.plant import SimulationError
from quirobot_control.simulation.simulated_backend import simulated_bridge
from quirobot_description.parameters import RobotParameters
from quirobot_description.urdf import robot_description

__all__ = ["ExecutorRun", "run_drill_hole"]


@dataclass
class ExecutorRun:
    """One goal's run: the executor's result, the plan it sent and the log (module docstring)."""

    result: DrillResult
    trajectory: JointTrajectory
    log: SimulationLog


class _Recorder:
    """The plant and the bridge after each period, from the motion's start on (see the module)."""

    def __init__(self, progress: Callable[[int], None] | None) -> None:
        self.rows: list[tuple] = []
        self.start: float | None = None
        self.event: DrillingEvent | None = None
        self.progress = progress

    def __call__(self, port: BridgePort) -> None:
        bridge = port.bridge
        monitor = bridge.thrust_monitor
        if monitor is not None and bridge.hole.context is not None and monitor.event is not None:
            self.event = self.event or monitor.event  # the hole's: its monitor goes with the goal
        if self.start is None:
            if not port.sent:
                return
            self.start = port.sent[0][2]
        if port.time < self.start - 1e-9:
            return
        backend = bridge.backend
        plant = backend.plant
        plant.forward_kinematics()
        hardware = bridge.hardware
        thrust = getattr(backend.tip_force, "force", 0.0) if backend.tip_force is not None else 0.0
        self.rows.append(
            (
                port.time - self.start,
                np.array(plant.position),
                np.array(plant.velocity),
                [hardware.state(name, "position") for name in bridge.names],
                [hardware.state(name, "velocity") for name in bridge.names],
                [bridge.drives[name].feedback().current for name in bridge.names],
                np.array(backend.last_efforts),
                np.array(plant.tip),
                np.array(plant.tip_quaternion),
                np.array(plant.tool0),
                float(thrust),
                port.period_wall,
                backend.spindle.speed,
                monitor.thrust if monitor is not None else 0.0,
            )
        )
        if self.progress is not None and len(self.rows) % 100 == 1:
            self.progress(len(self.rows) - 1)


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
    progress: Callable[[int], None] | None = None,
) -> ExecutorRun:
    """A DrillHole goal for `task` (its file: bone, no-go zones, standoff, dwell) to `depth` (m) at
    `feed_rate` (m/s) under `thrust_limit` (N), from the task's park pose, on the simulated
    `plant` with the task's bone in it (`seed`: the realistic plant's encoder noise).
    `progress(periods)` every 100 recorded periods. Raises SimulationError if the executor never
    sends the goal (its message)."""
    from quirobot_control.planning.drill_hole import DrillGoal

    urdf = robot_description("drill", "real")
    bridge = simulated_bridge(params, control, urdf, now=0.0, initial=task.park, plant=plant, seed=seed)
    bridge.backend.place_bone(str(task.path))
    recorder = _Recorder(progress)
    port = BridgePort(bridge, on_period=recorder)
    # No transport: no lag to allow for (task_node's default allows for the joint states' age).
    config = ExecutorConfig.shipped(params, tracking_lag=0.0)
    goal = DrillGoal(task.entry, task.direction, depth, feed_rate, thrust_limit)
    started = clock.perf_counter()
    with bridge:
        result = DrillHoleExecutor(port, config).run(DrillRequest(goal=goal, task=str(task.path)))
        if not port.sent:
            raise SimulationError(f"the DrillHole goal did not start: {result.message}")
        if bridge.hardware.stop_reason is not None:  # the physics after a stop, as the robot does it
            port.sleep(POST_STOP_TIME)
    wall = clock.perf_counter() - started
    trajectory = port.sent[0][1]
    log = _log(recorder, bridge, trajectory, params, result, wall)
    return ExecutorRun(result=result, trajectory=trajectory, log=log)


def _log(recorder: _Recorder, bridge, trajectory: JointTrajectory, params, result: DrillResult, wall: float):
    # One row per sample of the plan at most, as ClosedLoopSimulation's log: row k is the state
    # at the plan's time k * dt (the controllers' last periods after it add nothing).
    rows = recorder.rows[: len(trajectory.positions)]
    columns = list(zip(*rows, strict=True))
    time = np.array(columns[0])
    # The plan at each recorded period (held at its end after it).
    index = np.clip(np.round(time / bridge.dt).astype(int), 0, len(trajectory.positions) - 1)
    tip, tool0 = planned_tip(params, trajectory)
    start = recorder.start or 0.0
    event = recorder.event
    if event is not None:  # on the log's clock (the motion's start is 0)
        event = replace(event, time=event.time - start)
    hardware = bridge.hardware
    stop_reason = None if result.success else result.message
    stop_code = hardware.stop_code if hardware.stop_code is not StopCode.NONE else result.stop_code
    stop_time = None
    if hardware.stop_reason is not None and event is not None and event.is_fault:
        stop_time = event.time
    return SimulationLog(
        names=bridge.names,
        time=time,
        position=np.array(columns[1]),
        velocity=np.array(columns[2]),
        measured=np.array(columns[3]),
        reference=trajectory.positions[index],
        current=np.array(columns[5]),
        effort=np.array(columns[6]),
        tip=np.array(columns[7]),
        planned_tip=tip[index],
        tool0=np.array(columns[9]),
        planned_tool0=tool0[index],
        thrust=np.array(columns[10]),
        controller_time=np.array(columns[11]),
        tip_orientation=np.array(columns[8]),
        measured_velocity=np.array(columns[4]),
        wall_time=wall,
        stop_reason=stop_reason,
        stop_code=stop_code,
        events=[*bridge.events, *hardware.events],
        stop_time=stop_time,
        spindle_speed=np.array(columns[12]),
        thrust_estimate=np.array(columns[13]),
        drilling_event=event,
    )
