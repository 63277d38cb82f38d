"""The accuracy budget: Monte-Carlo incisions on the realistic plant (`quirobot accuracy`).

Each sample draws one plant from the parameter file's distributions (realistic_plant.*.
distribution: gearbox stiffness and backlash, friction, screw stiffness, encoder noise, the ram's
overhang, the bit's stick-out, skiving, the regenerative stiffness), an entry point over the
workspace (ENTRY_SPREAD around the task's entry) and a drilling axis (tilted up to MAX_TILT from
vertical, any azimuth), plans it as a DrillHole goal (planning.drill_hole) and runs it on the
robot's own path on that plant: the drive bridge with the goal's hole context (its monitor and the
compensation's thrust feed-forward), simulation.executor_run.run_trajectory. For time, each sample
is a short incision (SHORT_DEPTH at SHORT_FEED_RATE into the task's bone) that starts at rest at
the standoff point on the axis (the plan from its settle phase to the end of its dwell: the
approach is not simulated). Metrics from the plant's true tip (simulation.incision):
entry error, lateral deviation, axis angle error (the angle between the planned axis and the
line fitted through the tip's positions once the drill's point is in the bone) and depth error
(|final depth - target| at the end of the dwell). Every number in m or rad.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from quirobot_control.analysis.system_accuracy import SystemSample, system_json, system_plan, system_sample
from quirobot_control.hardware.control_config import ControlConfig, control_configuration
from quirobot_control.planning.drill_hole import DrillGoal, DrillPlan, plan_drill_hole
from quirobot_control.planning.tasks import IncisionTask, PlanningError, load_task
from quirobot_control.planning.trajectory import JointTrajectory, Phase
from quirobot_control.simulation.executor_run import run_trajectory
from quirobot_control.simulation.incision import incision_metrics
from quirobot_description.parameters import DrillParameters, RobotParameters
from quirobot_kinematics import KinematicModel
from quirobot_kinematics.calibration import CampaignPlan

#: Most samples one request may ask (each is a ~3 s closed-loop simulation, ~3-5 s of wall time).
MAX_SAMPLES = 1000
#: The short incision of each sample: 3 mm (all in the near cortex, the largest thrust) at 2 mm/s.
SHORT_DEPTH = 0.003  # m
SHORT_FEED_RATE = 0.002  # m/s
#: Entry points: uniform in a box of these half-widths (m, world x y z) around the task's entry.
ENTRY_SPREAD = np.array([0.3, 0.3, 0.05])
#: Drilling axes: tilted up to this angle (rad) from vertical, any azimuth.
MAX_TILT = math.radians(35.0)
#: Redraws of an entry point the planner cannot reach, before giving up.
MAX_REDRAWS = 50
#: Seed-sequence key of the system stages' random stream (kept apart from the closed loop's, so
#: that the closed-loop samples stay those of a given seed).
SYSTEM_STREAM = 21
#: Metrics of the budget, in JSON order.
METRICS = ("entry_error", "lateral_deviation", "axis_angle_error", "depth_error")


class AccuracyError(ValueError):
    """A request the accuracy budget cannot run (named in the message)."""


@dataclass(frozen=True)
class AccuracySample:
    """One Monte-Carlo incision: its entry (3,) m, axis (3,), and its metrics (m, rad)."""

    entry: np.ndarray
    direction: np.ndarray
    completed: bool
    metrics: dict[str, float]


@dataclass(frozen=True)
class AccuracyResult:
    samples: tuple[AccuracySample, ...]
    system: tuple[SystemSample, ...] = ()  # the stages per sample (analysis.system_accuracy)

    def values(self, metric: str) -> np.ndarray:
        return np.array([sample.metrics[metric] for sample in self.samples])

    def statistics(self) -> dict[str, dict[str, float]]:
        """{metric: {p50, p95, max}} over the samples (a run that stopped counts as infinite)."""
        stats = {}
        for metric in METRICS:
            values = self.values(metric)
            p50, p95 = np.percentile(values, [50, 95])
            stats[metric] = {"p50": float(p50), "p95": float(p95), "max": float(values.max())}
        return stats

    def as_json(self) -> dict:
        """{"samples": N, metric: {"p50", "p95", "max"}, ...} in m and rad (non-finite: null)."""
        document: dict = {"samples": len(self.samples)}
        for metric, stats in self.statistics().items():
            document[metric] = {k: (v if math.isfinite(v) else None) for k, v in stats.items()}
        document["completed"] = sum(sample.completed for sample in self.samples)
        if self.system:
            document |= system_json(self.system)
        return document


def check_samples(samples: int) -> None:
    if isinstance(samples, bool) or not isinstance(samples, int) or not 1 <= samples <= MAX_SAMPLES:
        raise AccuracyError(
            f"--samples must be a whole number from 1 to {MAX_SAMPLES} (each sample is a closed-loop "
            f"simulation of a few seconds), got {samples!r}"
        )


def short_incision(task: IncisionTask, params: RobotParameters, control: ControlConfig) -> DrillPlan:
    """The task as a DrillHole goal's plan (planning.drill_hole: the goal's checks, the plan-time
    breakthrough check, the drive side's hole context) cut from its settle phase (at rest at the
    standoff) to the end of its dwell."""
    goal = DrillGoal(
        task.entry, task.direction, task.depth, task.feed_rate, params.drilling.safety.thrust_limit
    )
    feed_mass = control.joint(DrillParameters.feed_joint).effective_inertia
    plan = plan_drill_hole(goal, task.park, params, control.dt, task, feed_mass=feed_mass)
    full, dt = plan.trajectory, control.dt
    start = int(round(full.phase("settle").start_time / dt))
    end = int(round(full.phase("dwell").end_time / dt)) + 1
    shift = start * dt
    phases = tuple(
        Phase(p.name, p.start_time - shift, p.end_time - shift)
        for p in full.phases
        if p.start_time >= shift - 1e-9 and p.end_time <= (end - 1) * dt + 1e-9
    )
    short = JointTrajectory(
        dt,
        full.positions[start:end],
        full.velocities[start:end],
        full.accelerations[start:end],
        phases,
        names=full.names,
    )
    return replace(plan, trajectory=short)


def axis_angle_error(task: IncisionTask, tip: np.ndarray) -> float:
    """Angle (rad) between the planned axis and the line fitted (least squares) through the tip
    positions (M, 3) m deeper than the drill's point length; NaN with fewer than 10 of them."""
    depth = (tip - task.entry) @ task.direction
    inside = tip[depth >= task.bone.point_length]
    if len(inside) < 10:
        return math.nan
    centred = inside - inside.mean(axis=0)
    axis = np.linalg.svd(centred, full_matrices=False)[2][0]
    return float(math.acos(min(abs(float(axis @ task.direction)), 1.0)))


def draw_incision(task: IncisionTask, rng: np.random.Generator) -> IncisionTask:
    """The task with an entry point and axis drawn over the workspace (module docstring)."""
    entry = task.entry + rng.uniform(-1.0, 1.0, 3) * ENTRY_SPREAD
    tilt = math.acos(1.0 - rng.uniform() * (1.0 - math.cos(MAX_TILT)))  # uniform over the cap
    azimuth = rng.uniform(0.0, 2.0 * math.pi)
    direction = np.array(
        [math.sin(tilt) * math.cos(azimuth), math.sin(tilt) * math.sin(azimuth), -math.cos(tilt)]
    )
    return replace(task, entry=entry, direction=direction, depth=SHORT_DEPTH, feed_rate=SHORT_FEED_RATE)


def run_sample(
    params: RobotParameters,
    control: ControlConfig,
    task: IncisionTask,
    rng: np.random.Generator,
) -> AccuracySample:
    """One Monte-Carlo incision (a reachable entry drawn, a plant drawn, the closed loop run)."""
    for _ in range(MAX_REDRAWS):
        incision = draw_incision(task, rng)
        try:
            plan = short_incision(incision, params, control)
            break
        except (PlanningError, ValueError):
            continue
    else:
        raise AccuracyError(f"no reachable entry point in {MAX_REDRAWS} draws around {task.entry.tolist()}")
    plant = params.plant.sample(rng)
    trajectory = plan.trajectory
    log = run_trajectory(
        trajectory,
        params,
        control,
        plant="realistic",
        plant_parameters=plant,
        seed=int(rng.integers(2**31)),
        incision=plan.task,
        hole=plan.hole_context("accuracy-sample"),
    )
    completed = log.stop_reason is None and len(log.time) == len(trajectory.positions)
    metrics = dict.fromkeys(METRICS, math.inf)
    if completed:
        measured = incision_metrics(incision, trajectory, log)
        metrics = {
            "entry_error": measured.entry_error,
            "lateral_deviation": measured.lateral_deviation,
            "axis_angle_error": axis_angle_error(incision, log.tip),
            "depth_error": measured.final_depth_error,
        }
        metrics = {k: (v if math.isfinite(v) else math.inf) for k, v in metrics.items()}
    return AccuracySample(incision.entry, incision.direction, completed, metrics)


def sample_rngs(seed: int, index: int) -> tuple[np.random.Generator, np.random.Generator]:
    """Sample `index`'s random streams (closed loop, system stages): from (seed, index) alone, so
    a sample is the same whichever process runs it and in whatever order."""
    return (
        np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(index, 0))),
        np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(index, 1))),
    )


@dataclass(frozen=True)
class BudgetSetup:
    """What every sample of one budget shares (built once, sent to each worker)."""

    params: RobotParameters
    control: ControlConfig
    task: IncisionTask
    seed: int
    plan: CampaignPlan | None  # the system stages' campaign poses; None: no system stages


def budget_setup(
    params: RobotParameters, seed: int, task: IncisionTask | None = None, system: bool = True
) -> BudgetSetup:
    task = task or load_task("incision")
    if not isinstance(task, IncisionTask):
        raise AccuracyError("the accuracy budget needs an incision task")
    plan = None
    if system:
        model = KinematicModel.from_parameters(params)
        plan = system_plan(params, model, np.random.default_rng([seed, SYSTEM_STREAM]))
    return BudgetSetup(params, control_configuration(params), task, seed, plan)


def run_indexed_sample(setup: BudgetSetup, index: int) -> tuple[AccuracySample, SystemSample | None]:
    """Sample `index` of the budget: its closed-loop incision and, with a plan, its system stages."""
    rng, system_rng = sample_rngs(setup.seed, index)
    sample = run_sample(setup.params, setup.control, setup.task, rng)
    if setup.plan is None:
        return sample, None
    model = KinematicModel.from_parameters(setup.params)
    dynamic = {m: sample.metrics[m] for m in ("entry_error", "axis_angle_error")}
    stages = system_sample(
        setup.params, model, setup.plan, sample.entry, sample.direction, system_rng, dynamic
    )
    return sample, stages


def run_accuracy(
    params: RobotParameters,
    samples: int,
    *,
    seed: int = 0,
    task: IncisionTask | None = None,
    progress: Callable[[int], None] | None = None,
    system: bool = True,
    runner: Callable[[BudgetSetup, int, Callable[[int], None] | None], list] | None = None,
) -> AccuracyResult:
    """`samples` Monte-Carlo incisions (at most MAX_SAMPLES); `progress(done)` after each;
    `system`: each also through the stages of analysis.system_accuracy. Sample k depends on
    (seed, k) only (`sample_rngs`); `runner(setup, samples, progress)` -> the samples' results in
    index order runs them elsewhere (analysis.accuracy_cluster: Dask), default here in turn."""
    check_samples(samples)
    setup = budget_setup(params, seed, task, system)
    if runner is not None:
        outcomes = runner(setup, samples, progress)
    else:
        outcomes = []
        for k in range(samples):
            outcomes.append(run_indexed_sample(setup, k))
            if progress is not None:
                progress(k + 1)
    results = tuple(sample for sample, _ in outcomes)
    stages = tuple(stage for _, stage in outcomes if stage is not None)
    return AccuracyResult(results, stages)


def plot_accuracy(result: AccuracyResult, path) -> None:
    """PNG: a histogram per metric (um or mrad) with p50 and p95 marked."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    figure, axes = plt.subplots(1, 4, figsize=(16, 4), constrained_layout=True)
    stats = result.statistics()
    for ax, metric in zip(axes, METRICS, strict=True):
        scale, unit = (1e3, "mrad") if metric == "axis_angle_error" else (1e6, "um")
        values = result.values(metric)
        finite = values[np.isfinite(values)] * scale
        ax.hist(finite, bins=max(5, min(40, len(finite) // 4 or 5)), color="tab:blue", alpha=0.7)
        for key, colour in (("p50", "tab:green"), ("p95", "tab:red")):
            value = stats[metric][key]
            if math.isfinite(value):
                ax.axvline(value * scale, color=colour, lw=2, label=f"{key} {value * scale:.1f} {unit}")
        ax.set_title(metric.replace("_", " "))
        ax.set_xlabel(unit)
        ax.legend(fontsize=9)
    figure.suptitle(f"QUIROBOT accuracy budget: {len(result.samples)} Monte-Carlo incisions, realistic plant")
    figure.savefig(path, dpi=100)
    plt.close(figure)
