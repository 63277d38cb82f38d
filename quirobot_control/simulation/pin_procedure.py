"""Schanz-pin insertion as a procedure (procedures.procedure).

After the pilot hole, the spindle drives a threaded pin in; the feed follows the spindle's angle
(feed = pitch x revolutions: the drill feed geared to the spindle, so the thread never strips).
The spindle's drive (models.spindle, with the pin driver's torque and speed from the task file)
carries the insertion torque of models.pin_insertion at the pin's depth. Each control period:
the torque monitor (safety.pin_torque, the drive bridge's as well) stops the spindle (and with it
the feed) when the drive's torque passes the torque limit; within one pitch of the target the
spindle command falls in proportion to the depth left (approach_rate), and the insertion ends
when the pin is within 0.01 mm of its depth or has stopped; the spindle is then switched off
and the run goes on until the pin is at rest (its feed below REST_FEED), every revolution counted
in the depth (a pin still advancing is not done: the run fails). Refused before it runs
(TaskError, one line): a depth past the bone's far side (the layers' sum) by more than the task's
protrusion_limit, or by more than it less the far side's imaging margin (check_pin), a depth
beyond the feed's stroke between its soft limits, a feed (pitch x speed) above the feed axis'
velocity limit. The arm is not simulated here (it holds the hole's axis, as after the incision's
feed): the run is the spindle and the synchronised feed, at the control rate. On the drive bridge
(bridge.pin_in_force) the same monitor watches the pin driver's torque while the robot's feed
follows the thread.

Metrics (m, N*m): insertion_depth_error |depth - target| at the end, peak_insertion_torque (the
model's torque, the largest of the run), peak_drive_torque (the spindle drive's), final_depth,
stopped_on_torque (bool), final_feed_speed (m/s, the feed's speed at the end). Targets: depth
within 0.5 mm, torque within the task's limit.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from quirobot_control.models.pin_insertion import PinLayer, insertion_torque
from quirobot_control.models.spindle import Spindle
from quirobot_control.planning.tasks import TaskError
from quirobot_control.procedures.procedure import SummaryRow, register
from quirobot_control.safety.pin_torque import PinTorqueMonitor
from quirobot_control.simulation.metrics import RunMetrics, TaskMetrics
from quirobot_description.file_schema import PIN_FILE
from quirobot_description.parameters import RobotParameters
from quirobot_description.sourced_yaml import SourcedReader, read_yaml_mapping

#: m: the target's tolerance (the issue's 0.5 mm).
DEPTH_TARGET = 0.5e-3
#: m: the insertion ends this close to its depth.
DEPTH_REACHED = 0.01e-3
#: s: the longest insertion simulated (a stalled run ends by its own stop long before).
MAX_DURATION = 120.0
#: m/s: the pin is at rest below this feed speed. Design assumption: 1 um/s, a thousandth of
#: the shipped 1.75 mm/s feed (a pin this slow moves under 1 um in the spindle's run-down).
REST_FEED = 1e-6
#: s: the longest run-down after the spindle is switched off (its time constant is ms).
MAX_SETTLE = 2.0


@dataclass(frozen=True)
class PinTask:
    depth: float  # m, the tip below the bone surface at the end
    pitch: float  # m per revolution
    diameter: float  # m
    speed: float  # rad/s, the spindle's insertion speed
    approach_rate: float  # 1/s
    torque_limit: float  # N*m, the monitor's
    driver_max_torque: float  # N*m, the spindle drive's
    bone_factor: float  # 1, the bone's torque relative to the layers'
    protrusion_limit: float  # m, how far the tip may end past the bone's far side
    layers: tuple[PinLayer, ...]
    path: Path


@dataclass(frozen=True)
class PinMetrics:
    insertion_depth_error: float  # m, |final depth - target|
    peak_insertion_torque: float  # N*m, the bone's largest torque on the pin
    peak_drive_torque: float  # N*m, the spindle drive's largest torque
    final_depth: float  # m
    stopped_on_torque: bool  # the torque limit ended the insertion
    torque_limit: float  # N*m, the limit it ran under
    final_feed_speed: float  # m/s, the feed's speed at the end (pitch x spindle speed)


@dataclass
class PinResult:
    task: PinTask
    metrics: TaskMetrics
    depth: list[float] = field(default_factory=list)  # m, per control period
    torque: list[float] = field(default_factory=list)  # N*m, per control period
    trajectory: None = None  # no arm motion: no plan to log
    log: None = None
    unsafe: list[str] = field(default_factory=list)


def load_pin(path: Path) -> PinTask:
    raw = read_yaml_mapping(path, TaskError, "task file")
    reader = SourcedReader(raw, path.name, TaskError, PIN_FILE)
    node = raw.get("layers")
    if not isinstance(node, list) or not node:
        raise reader.fail("layers", "must be a non-empty list")
    layers = []
    for index, item in enumerate(node):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise reader.fail(f"layers.{index}", "must have a name")
        layers.append(
            PinLayer(
                item["name"],
                reader.number(f"layers.{index}.thickness", positive=True),
                reader.number(f"layers.{index}.torque_per_length", non_negative=True),
            )
        )
    task = PinTask(
        depth=reader.number("depth", positive=True),
        pitch=reader.number("pitch", positive=True),
        diameter=reader.number("diameter", positive=True),
        speed=reader.number("speed", positive=True),
        approach_rate=reader.number("approach_rate", positive=True),
        torque_limit=reader.number("torque_limit", positive=True),
        driver_max_torque=reader.number("driver_max_torque", positive=True),
        bone_factor=reader.number("bone_factor", positive=True),
        protrusion_limit=reader.number("protrusion_limit", non_negative=True),
        layers=tuple(layers),
        path=path,
    )
    if task.torque_limit >= task.driver_max_torque:
        raise reader.fail("torque_limit", "must be below driver_max_torque (the monitor must trip first)")
    bone = sum(layer.thickness for layer in task.layers)
    if task.depth > bone + task.protrusion_limit + 1e-9:
        raise reader.fail(
            "depth",
            f"{task.depth * 1e3:.1f} mm is past the bone's far side ({bone * 1e3:.1f} mm, the layers) "
            f"by more than protrusion_limit {task.protrusion_limit * 1e3:.1f} mm "
            f"(at most {(bone + task.protrusion_limit) * 1e3:.1f} mm)",
        )
    return task


def check_pin(task: PinTask, params: RobotParameters) -> None:
    """Refuse (TaskError, one line) a task the drill's feed cannot run: a depth beyond the feed's
    stroke between its soft limits, a feed (pitch x speed) above the feed's velocity limit; and a
    depth whose tip would end more than the task's protrusion_limit past a far side as near as the
    imaging allows (the layers' sum less drilling.safety.breakthrough_exit_tolerance, the CT-planned
    far cortex' exit within about 1 mm): nothing senses the far side during the insertion, so a bone
    thinner than imaged within that margin must not take the tip past the limit. Before, the
    shipped 27 mm pin (25 mm bone + the 2 mm limit) reported success 2.79 mm past the far side of a
    bone 0.8 mm thinner than imaged (test_success_is_honest.py)."""
    bone = sum(layer.thickness for layer in task.layers)
    nearest = bone - params.drilling.safety.breakthrough_exit_tolerance
    if task.depth > nearest + task.protrusion_limit + 1e-9:
        raise TaskError(
            f"{task.path.name}: depth: {task.depth * 1e3:.1f} mm would end "
            f"{(task.depth - nearest) * 1e3:.1f} mm past a far side imaged at {bone * 1e3:.1f} mm but "
            f"{params.drilling.safety.breakthrough_exit_tolerance * 1e3:.1f} mm nearer "
            f"(drilling.safety.breakthrough_exit_tolerance), more than protrusion_limit "
            f"{task.protrusion_limit * 1e3:.1f} mm (at most {(nearest + task.protrusion_limit) * 1e3:.1f} mm)"
        )
    drill = params.drill
    stroke = drill.feed.upper - drill.feed.lower - 2.0 * drill.feed.soft_margin
    if task.depth > stroke + 1e-12:
        raise TaskError(
            f"{task.path.name}: depth: {task.depth * 1e3:.1f} mm is beyond the drill feed's "
            f"{stroke * 1e3:.1f} mm stroke between its soft limits"
        )
    feed = task.pitch * task.speed / (2.0 * math.pi)
    if feed > drill.feed.velocity + 1e-12:
        raise TaskError(
            f"{task.path.name}: speed: the feed pitch x speed is {feed * 1e3:.1f} mm/s, above the "
            f"drill feed's velocity limit {drill.feed.velocity * 1e3:.1f} mm/s"
        )


def insert_pin(
    task: PinTask, params: RobotParameters, dt: float, bone_factor: float | None = None
) -> PinResult:
    """Run the insertion (module docstring) at the control period dt (s); `bone_factor` overrides
    the task's (a harder bone than planned)."""
    check_pin(task, params)
    factor = task.bone_factor if bone_factor is None else float(bone_factor)
    spindle = Spindle(replace(params.drilling.spindle, speed=task.speed, max_torque=task.driver_max_torque))
    spindle.switch_on(task.speed)
    monitor = PinTorqueMonitor(task.torque_limit, task.depth)  # the drive bridge's too (bridge.pin_in_force)
    wall = time.perf_counter()
    angle, depth, t = 0.0, 0.0, 0.0
    depths, torques, drive = [], [], []
    stop_reason = None
    stopped_on_torque = False  # set where that stop is decided, never read back from its words
    while t < MAX_DURATION:
        left = task.depth - depth
        if left <= DEPTH_REACHED:
            break
        # Feed = pitch x revolutions: the spindle's command slows within one pitch of the target.
        command = min(task.speed, 2.0 * math.pi * task.approach_rate * left / task.pitch)
        if spindle.running:
            spindle.command = max(command, 0.05 * task.speed)
        torque = float(insertion_torque(depth, task.layers, factor))
        spindle.external_torque = torque
        speed = spindle.update(dt, 0.0)
        angle += speed * dt
        depth = task.pitch * angle / (2.0 * math.pi)
        t += dt
        depths.append(depth)
        torques.append(torque)
        drive.append(spindle.motor_torque)
        reason = monitor.check(spindle.motor_torque, depth)
        if reason is not None:
            spindle.switch_off()
            stopped_on_torque = True
            stop_reason = reason
            break
        if spindle.stalled:
            stop_reason = f"pin driver stalled: {spindle.stall_reason}"
            break
    # Run down: the spindle off, the feed follows it until the pin is at rest (every revolution
    # counts in the depth; a pin still advancing is not done).
    spindle.switch_off()
    end = t + MAX_SETTLE
    while task.pitch * spindle.speed / (2.0 * math.pi) > REST_FEED and t < end:
        spindle.external_torque = float(insertion_torque(depth, task.layers, factor))
        angle += spindle.update(dt, 0.0) * dt
        depth = task.pitch * angle / (2.0 * math.pi)
        t += dt
        depths.append(depth)
        torques.append(spindle.external_torque)
        drive.append(spindle.motor_torque)
    feed = task.pitch * spindle.speed / (2.0 * math.pi)
    if feed > REST_FEED and stop_reason is None:
        stop_reason = (
            f"pin still advancing at {feed * 1e3:.3f} mm/s at the end "
            f"(at rest below {REST_FEED * 1e3:.3f} mm/s)"
        )
    wall = time.perf_counter() - wall
    pin = PinMetrics(
        insertion_depth_error=abs(task.depth - depth),
        peak_insertion_torque=max(torques, default=0.0),
        peak_drive_torque=max(drive, default=0.0),
        final_depth=depth,
        stopped_on_torque=stopped_on_torque,
        torque_limit=task.torque_limit,
        final_feed_speed=feed,
    )
    run = RunMetrics(
        completed=stop_reason is None and task.depth - depth <= DEPTH_REACHED and feed <= REST_FEED,
        stop_reason=stop_reason,
        duration=t,
        wall_time=wall,
        real_time_factor=t / max(wall, 1e-9),
        controller_p99=None,  # no arm controller in this run (no row, null in JSON)
        peak_current={},
        max_tracking_error={},
    )
    return PinResult(task, TaskMetrics(run, procedure=pin), depths, torques)


@dataclass(frozen=True)
class PinProcedure:
    """Drive a threaded Schanz pin into the pilot hole, feed synchronised to the thread pitch."""

    name: str = "pin"
    tool: str = "drill"
    phases: tuple[str, ...] = ("insert",)
    options: frozenset[str] = frozenset({"bone_factor"})
    summary_rows: tuple[SummaryRow, ...] = (
        SummaryRow("insertion depth error", "insertion_depth_error", 1e6, "um"),
        SummaryRow("peak insertion torque", "peak_insertion_torque", 1.0, "N*m"),
        SummaryRow("torque limit", "torque_limit", 1.0, "N*m"),
    )
    panels: tuple[str, ...] = ()  # the tracking and current panels only
    targets: dict[str, float] = field(default_factory=lambda: {"insertion_depth_error": DEPTH_TARGET})

    def load(self, path: Path) -> PinTask:
        return load_pin(path)

    def plan(self, task: PinTask, params: RobotParameters, dt: float) -> None:
        return None  # the arm holds still; the feed follows the spindle (insert_pin)

    def fixtures(self, task: PinTask, params: RobotParameters) -> None:
        return None

    def simulate(self, task: PinTask, params: RobotParameters, **options: Any) -> PinResult:
        from quirobot_control.hardware.control_config import control_configuration

        control = options.get("control") or control_configuration(params)
        result = insert_pin(task, params, control.dt, options.get("bone_factor"))
        metrics = result.metrics.procedure
        if metrics.peak_drive_torque > task.torque_limit + 1e-9 and not metrics.stopped_on_torque:
            result.unsafe.append("the drive's torque passed the limit without a stop")
        return result

    def document(self, result: PinResult, base: dict[str, Any]) -> dict[str, Any]:
        task = result.task
        return {"pin": {"depth": task.depth, "pitch": task.pitch, "diameter": task.diameter}, **base}


register(PinProcedure())
