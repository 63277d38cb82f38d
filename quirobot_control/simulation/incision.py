"""Run a task (incision or line) and measure it against the targets.

An incision runs on the robot's own path (simulation.executor_run: a DrillHole goal carried by the
executor over the drive bridge on the simulated backend, what task_node and drive_node run over
ROS), injected faults included. The line's plan, and an incision with its breakthrough detector
switched off (unsafe on purpose, for tests), are tracked on the same drive bridge
(executor_run.run_trajectory).

Incision metrics, from the true drill tip of the physics (not the encoders), during the feed
phase and the dwell at depth:
- entry_error: distance from the planned entry point to where the tip crossed the bone surface;
- lateral_deviation: largest distance of the tip from the planned drilling axis while in bone;
- depth_overshoot: largest depth beyond the target over the whole run, retract included (0 if
  never past it); max_depth likewise;
- final_depth_error: |depth - target| at the end of the dwell;
Line metrics: largest distance of tool0 from the planned straight line while it moves, and the
final position error. Both: peak current per joint, durations, controller p99 per cycle. Typed,
with units: simulation.metrics (`TaskMetrics.as_dict()` is the JSON `quirobot simulate` prints).

An incision runs with the drilling process safety (safety.drilling_monitor: thrust limit, far-cortex
breakthrough, spindle interlock; models.spindle), as the drive side runs it for a DrillHole goal;
`breakthrough_detection=False` disarms the breakthrough detector (an unsafe run on purpose, for
tests: the plan tracked on the same drive bridge with its hole's detector off). When the
breakthrough detector ends the feed, the depth reached is the bone's, not the plan's:
final_depth_error is not applicable (NaN, no target) and `feed_end` says "breakthrough".
Each `Injection` (simulation.faults; one or several) injects a fault and adds its report to
`faults`; a far cortex within reach of the planned depth adds the `breakthrough` report;
`unsafe` lists why the robot did not end safe (empty: it did).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from quirobot_control.hardware.control_config import ControlConfig, control_configuration
from quirobot_control.models.bone import BoneParameters
from quirobot_control.planning.drill_hole import DrillGoal, plan_drill_hole
from quirobot_control.planning.tasks import IncisionTask, LineTask, load_task, plan_line_task, task_fixtures
from quirobot_control.planning.trajectory import JointTrajectory
from quirobot_control.safety.breakthrough_plan import target_cortex
from quirobot_control.simulation.executor_run import run_drill_hole, run_trajectory
from quirobot_control.simulation.faults import (
    BreakthroughReport,
    FaultError,
    FaultInjector,
    FaultReport,
    Injection,
    breakthrough_report,
    fault_report,
    safety_verdict,
)
from quirobot_control.simulation.metrics import IncisionMetrics, LineMetrics, RunMetrics, TaskMetrics
from quirobot_control.simulation.simulation_log import SimulationLog
from quirobot_description.parameters import DrillParameters, RobotParameters
from quirobot_description.plant_parameters import PlantParameters

#: The issue's targets, m (controller time in s, real-time factor dimensionless).
TARGETS = {
    "lateral_deviation": 0.1e-3,
    "depth_overshoot": 0.05e-3,
    "final_depth_error": 0.05e-3,
    "entry_error": 0.1e-3,
    "line_deviation": 0.1e-3,
    "controller_p99": 200e-6,
    "real_time_factor": 1.0,
}
#: Targets that measure this machine's speed, not the robot's precision.
TIMING_TARGETS = frozenset({"controller_p99", "real_time_factor"})


@dataclass
class TaskResult:
    task: IncisionTask | LineTask
    trajectory: JointTrajectory
    log: SimulationLog
    metrics: TaskMetrics
    fault: FaultReport | None = None  # the first injection's
    faults: list[FaultReport] = field(default_factory=list)  # every injection's, in order
    breakthrough: BreakthroughReport | None = None  # the far cortex within reach
    unsafe: list[str] = field(default_factory=list)  # why the robot did not end safe (empty: it did)


def run_task(
    task: IncisionTask | LineTask | str,
    params: RobotParameters,
    *,
    control: ControlConfig | None = None,
    progress: Callable[[int], None] | None = None,
    on_plan: Callable[[JointTrajectory], None] | None = None,
    depth: float | None = None,
    feed_rate: float | None = None,
    plant: str = "ideal",
    compensated: bool = True,
    plant_parameters: PlantParameters | None = None,
    seed: int = 0,
    injection: Injection | Sequence[Injection] | None = None,
    breakthrough_detection: bool = True,
    until: str | None = None,
    bone: BoneParameters | None = None,
    max_thrust: float | None = None,
) -> TaskResult:
    """Plan and simulate a task; `depth`/`feed_rate` (m, m/s) override an incision's; `plant`,
    `compensated`, `plant_parameters`, `seed`: see simulation.simulated_backend.SimulatedBackend;
    `injection` (one or several), `breakthrough_detection`: see the module docstring; `until`: end the
    run at the end of that phase of the plan (a shorter run, e.g. "retract"). An injection timed
    after the planned run's end is refused (FaultError naming the end). `bone`: the bone the plant
    drills, where it differs from the task's (the bone as imaged, which the plan and the monitor
    know): a thinner bone, a porous band. `max_thrust` (N): the goal's thrust limit for the
    drilling monitor (procedures.goal_monitor: never above the robot's; None: the robot's
    tools.drill.thrust_limit)."""
    if isinstance(task, str):
        task = load_task(task)
    control = control or control_configuration(params)
    if isinstance(task, IncisionTask):
        if depth is not None:
            task = replace(task, depth=float(depth))
        if feed_rate is not None:
            task = replace(task, feed_rate=float(feed_rate))
        # The goal's checks and the plan-time breakthrough check, as a DrillHole goal gets them
        # (planning.drill_hole): from the task's park pose back to it.
        plan = plan_drill_hole(
            DrillGoal(
                task.entry,
                task.direction,
                task.depth,
                task.feed_rate,
                params.drilling.safety.thrust_limit if max_thrust is None else max_thrust,
            ),
            task.park,
            params,
            control.dt,
            task,
            feed_mass=control.joint(DrillParameters.feed_joint).effective_inertia,
        )
        trajectory = plan.trajectory
        # The report measures the plant's bone (what is drilled), which may differ from the imaged.
        far_cortex = target_cortex(bone or task.bone, task.depth)
    else:
        trajectory = plan_line_task(task, params, control.dt)
    if on_plan is not None:
        on_plan(trajectory)
    end_time = None if until is None else trajectory.phase(until).end_time
    injectors = [FaultInjector(item) for item in _injections(injection, control.dt, end_time, trajectory)]
    # The robot's own path (simulation.executor_run), injected faults included.
    if isinstance(task, IncisionTask) and breakthrough_detection:
        run = run_drill_hole(
            task,
            params,
            control,
            depth=task.depth,
            feed_rate=task.feed_rate,
            thrust_limit=params.drilling.safety.thrust_limit if max_thrust is None else max_thrust,
            plant=plant,
            seed=seed,
            plant_parameters=plant_parameters,
            compensated=compensated,
            bone=bone,
            injectors=injectors,
            end_time=end_time,
            progress=progress,
        )
        completed = run.result is not None and run.result.success  # None: cut at `until`
        faults = [fault_report(injector, run.log, task.entry, task.direction) for injector in injectors]
        return _incision_result(task, run.trajectory, run.log, faults, far_cortex, completed=completed)
    # The line, and an incision with its breakthrough detector off on purpose (tests): the plan
    # tracked on the same drive bridge, the incision with its goal's hole but that detector disarmed
    # (the feed goes on to the planned depth), the line with its task's fixtures.
    incision = isinstance(task, IncisionTask)
    log = run_trajectory(
        trajectory,
        params,
        control,
        plant=plant,
        seed=seed,
        plant_parameters=plant_parameters,
        compensated=compensated,
        fixtures=None if incision else task_fixtures(task, params),
        incision=task if incision else None,
        bone=bone,
        hole=(
            replace(plan.hole_context("breakthrough-detection-off"), arm_depth=None, exit_depth=None)
            if incision
            else None
        ),
        injectors=injectors,
        end_time=end_time,
        progress=progress,
    )
    run = common_metrics(log, trajectory)
    if not incision:
        metrics = TaskMetrics(run, line=line_metrics(trajectory, log))
        return TaskResult(task=task, trajectory=trajectory, log=log, metrics=metrics)
    faults = [fault_report(injector, log, task.entry, task.direction) for injector in injectors]
    return _incision_result(task, trajectory, log, faults, far_cortex, completed=run.completed)


def _incision_result(
    task: IncisionTask,
    trajectory: JointTrajectory,
    log: SimulationLog,
    faults: list[FaultReport],
    far_cortex,
    *,
    completed: bool,
) -> TaskResult:
    """The incision's TaskResult from its log: metrics, the far cortex' breakthrough report (a far
    cortex within reach of the planned depth), the safety verdict."""
    run = replace(common_metrics(log, trajectory), completed=completed)
    metrics = TaskMetrics(run, incision=incision_metrics(task, trajectory, log))
    breakthrough = None
    if far_cortex is not None and task.depth >= far_cortex.exit - task.bone.point_length:
        breakthrough = breakthrough_report(log, task.entry, task.direction, far_cortex.exit)
    unsafe = safety_verdict(log, task.depth, task.entry, task.direction, faults, breakthrough)
    return TaskResult(
        task=task,
        trajectory=trajectory,
        log=log,
        metrics=metrics,
        fault=faults[0] if faults else None,
        faults=faults,
        breakthrough=breakthrough,
        unsafe=unsafe,
    )


def _injections(
    injection: Injection | Sequence[Injection] | None,
    dt: float,
    end_time: float | None,
    trajectory: JointTrajectory,
) -> list[Injection]:
    """The injections as a list, each timed within the planned run (its plan of `dt` s periods, cut
    at `end_time` s if given), else FaultError naming its end."""
    if injection is None:
        return []
    items = [injection] if isinstance(injection, Injection) else list(injection)
    end = (len(trajectory.positions) - 1) * dt
    if end_time is not None:
        end = min(end, end_time)
    for item in items:
        if item.at > end + 1e-9:
            raise FaultError(
                f"--inject {item.kind}@{item.at:g}: the run ends at {end:.3f} s, the fault would never happen"
            )
    return items


def common_metrics(log: SimulationLog, trajectory: JointTrajectory) -> RunMetrics:
    wall = max(log.wall_time, 1e-9)
    return RunMetrics(
        completed=log.stop_reason is None and len(log.time) == len(trajectory.positions),
        stop_reason=log.stop_reason,
        duration=log.simulated_time,
        wall_time=log.wall_time,
        real_time_factor=log.simulated_time / wall,
        controller_p99=float(np.percentile(log.controller_time, 99)),
        peak_current={name: float(np.max(np.abs(log.current[:, j]))) for j, name in enumerate(log.names)},
        max_tracking_error={
            name: float(np.max(np.abs(log.position[:, j] - log.reference[:, j])))
            for j, name in enumerate(log.names)
        },
    )


def incision_metrics(task: IncisionTask, trajectory: JointTrajectory, log: SimulationLog) -> IncisionMetrics:
    feed = trajectory.phase("feed")
    dwell = trajectory.phase("dwell")
    t = log.time
    window = (t >= feed.start_time - 1e-9) & (t <= dwell.end_time + 1e-9)
    # Past the target is unsafe whenever it happens (a lunge as the feed reverses, or the coasting
    # after a stop, included): over the whole physics run.
    deepest = float(np.max((log.tip - task.entry) @ task.direction))
    if not window.any():  # stopped before the feed: nothing drilled, the report still says so
        return IncisionMetrics(
            entry_error=float("nan"),
            lateral_deviation=float("nan"),
            depth_overshoot=max(deepest - task.depth, 0.0),
            final_depth_error=float("nan"),
            max_depth=deepest,
            peak_thrust=float(log.thrust.max()),
            feed_start_time=feed.start_time,
            feed_end_time=feed.end_time,
            **_drilling_metrics(log),
        )
    offset = log.tip[window] - task.entry
    depth = offset @ task.direction
    lateral = np.linalg.norm(offset - depth[:, None] * task.direction, axis=1)
    in_bone = depth >= 0.0
    crossing = np.nonzero((depth[:-1] < 0.0) & (depth[1:] >= 0.0))[0]
    if crossing.size:
        k = int(crossing[0])
        w = -depth[k] / (depth[k + 1] - depth[k])
        point = (1 - w) * log.tip[window][k] + w * log.tip[window][k + 1]
        entry_error = float(np.linalg.norm(point - task.entry))
    else:
        entry_error = float("nan")
    end_of_dwell = np.nonzero(t[window] <= dwell.end_time + 1e-9)[0][-1]
    event = log.drilling_event
    breakthrough = event is not None and event.success
    return IncisionMetrics(
        entry_error=entry_error,
        lateral_deviation=float(lateral[in_bone].max()) if in_bone.any() else float("nan"),
        depth_overshoot=max(deepest - task.depth, 0.0),
        # Ended by the breakthrough: the depth is the bone's, not the plan's (no target to meet).
        final_depth_error=float("nan") if breakthrough else float(abs(depth[end_of_dwell] - task.depth)),
        max_depth=deepest,
        peak_thrust=float(log.thrust.max()),
        feed_start_time=feed.start_time,
        feed_end_time=feed.end_time,
        **_drilling_metrics(log),
    )


def _drilling_metrics(log: SimulationLog) -> dict[str, str | float | None]:
    """IncisionMetrics' fields of what the drilling process safety saw: the event that stopped
    the feed, the feed's peak effort (N, the drive's) and the monitor's peak thrust estimate (N)."""
    event = log.drilling_event
    feed = log.names.index(DrillParameters.feed_joint)
    return {
        "feed_end": None if event is None else event.kind.value,
        "drilling_stop": None if event is None else event.message,
        "peak_feed_effort": float(np.max(np.abs(log.effort[:, feed]))),
        "peak_thrust_estimate": None if log.thrust_estimate is None else float(log.thrust_estimate.max()),
    }


def line_metrics(trajectory: JointTrajectory, log: SimulationLog) -> LineMetrics:
    path = trajectory.paths[0]
    line = trajectory.phase("line")
    window = (log.time >= line.start_time - 1e-9) & (log.time <= line.end_time + 1e-9)
    start, end = path.start, path.end
    direction = (end - start) / np.linalg.norm(end - start)
    offset = log.tool0[window] - start
    along = offset @ direction
    deviation = np.linalg.norm(offset - along[:, None] * direction, axis=1)
    return LineMetrics(
        line_deviation=float(deviation.max()),
        line_final_error=float(np.linalg.norm(log.tool0[-1] - end)),
        line_start=tuple(start.tolist()),
        line_end=tuple(end.tolist()),
        line_start_time=line.start_time,
        line_end_time=line.end_time,
    )


def targets_met(metrics, targets: Mapping[str, float] | None = None) -> dict[str, bool]:
    """Which of `targets` (default TARGETS; a procedure's own) the metrics meet (only those the
    task has; no depth target when the far cortex' breakthrough ended the feed). `metrics`: any
    object with as_dict() (TaskMetrics or a procedure's)."""
    values = metrics.as_dict()
    met = {}
    for key, limit in (TARGETS if targets is None else targets).items():
        if key == "final_depth_error" and values.get("feed_end") == "breakthrough":
            continue
        if values.get(key) is not None:
            value = values[key]
            met[key] = bool(value >= limit) if key == "real_time_factor" else bool(value <= limit)
    return met
