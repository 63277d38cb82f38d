"""Surgical tasks (config/tasks/*.yaml) and their plans.

`load_task(name_or_path)` reads an incision or line task; `plan_incision` and `plan_line_task`
turn it into one `JointTrajectory` with named phases:

incision: approach (joint space) -> align (straight line down the drilling axis to the standoff)
-> feed (drill feed to depth at the feed rate) -> dwell -> retract -> withdraw (straight line
back up the axis) -> park (joint space).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from quirobot_control.axes.limits import JointLimits, PlanningError
from quirobot_control.models.bone import BoneLayer, BoneParameters
from quirobot_control.planning.trajectory import (
    JointTrajectory,
    LineLimits,
    hold,
    plan_feed,
    plan_line,
    plan_point_to_point,
)
from quirobot_description.data_files import find_data_file
from quirobot_description.file_schema import TASK_FILE
from quirobot_description.parameters import FEED_INDEX, RobotParameters
from quirobot_description.sourced_yaml import SourcedReader, read_yaml_mapping
from quirobot_kinematics import ApproachTarget, KinematicModel, forward_kinematics, inverse_kinematics

TASK_NAMES = ("incision", "line")
#: s: the longest task planned. The shipped incision lasts about 10 s; a slower feed than this
#: allows is a typo or a wrong unit, and planning it would fill the memory (the trajectory holds
#: one sample per control period: a 1e-9 m/s feed over 25 mm is 2.5e10 samples).
MAX_TASK_DURATION = 300.0


def check_task_duration(phases: dict[str, float], what: str) -> None:
    """PlanningError naming the slowest phase if the phases' durations (s) add up to more than
    MAX_TASK_DURATION; checked before planning, so nothing large is ever allocated."""
    total = sum(phases.values())
    if not total <= MAX_TASK_DURATION:  # also catches NaN
        slowest = max(phases, key=lambda name: phases[name])
        raise PlanningError(
            f"{what}: the task would last {total:.4g} s, more than the {MAX_TASK_DURATION:g} s limit "
            f"(MAX_TASK_DURATION; {slowest} alone takes {phases[slowest]:.4g} s)"
        )


class TaskError(ValueError):
    """A task file is missing, malformed or holds an invalid value (named in the message)."""


def task_file(name: str) -> Path:
    """The shipped task file of a task in TASK_NAMES (config/tasks/<name>.yaml, see data_files)."""
    if name not in TASK_NAMES:
        raise TaskError(f"unknown task {name!r}: give one of {', '.join(TASK_NAMES)}")
    return find_data_file(f"config/tasks/{name}.yaml")


@dataclass(frozen=True)
class IncisionTask:
    entry: np.ndarray  # (3,) m, world
    direction: np.ndarray  # (3,) unit, into the bone
    depth: float  # m below the entry point along direction
    feed_rate: float  # m/s
    feed_acceleration: float  # m/s^2, start and stop of the feed in bone
    feed_jerk: float  # m/s^3
    standoff: float  # m
    approach_distance: float  # m
    dwell: float  # s
    retract_rate: float  # m/s
    park: np.ndarray  # (6,)
    line: LineLimits
    bone: BoneParameters
    path: Path


@dataclass(frozen=True)
class LineTask:
    start: np.ndarray  # (6,)
    end: np.ndarray  # (3,) m, tool0
    line: LineLimits
    settle: float  # s
    path: Path


def load_task(name: str | Path) -> IncisionTask | LineTask:
    """A task by name (incision, line: from config/tasks) or by path to a task YAML file."""
    path = Path(name)
    if str(name) in TASK_NAMES:
        path = task_file(str(name))
    elif path.suffix not in (".yaml", ".yml"):
        raise TaskError(
            f"unknown task {name!r}: give one of {', '.join(TASK_NAMES)} or a path to a .yaml file"
        )
    raw = read_yaml_mapping(path, TaskError, "task file")
    kind = raw.get("task")
    if kind is None:
        raise TaskError(
            f"{path} is not a task file: it has no 'task' key (task: {' or '.join(TASK_NAMES)}); "
            "the shipped tasks are in config/tasks"
        )
    if not isinstance(kind, str) or kind not in TASK_KEYS:
        raise TaskError(f"{path.name}: task must be one of {', '.join(TASK_NAMES)}, got {kind!r}")
    unknown = unknown_keys(raw, TASK_KEYS[kind])
    if unknown:
        raise TaskError(
            f"{path.name}: unknown key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} "
            f"(task: {kind} takes {', '.join(TASK_KEYS[kind])})"
        )
    reader = _Reader(raw, path)
    line = LineLimits(
        speed=reader.number("line.speed", positive=True),
        acceleration=reader.number("line.acceleration", positive=True),
        jerk=reader.number("line.jerk", positive=True),
    )
    if kind == "incision":
        direction = reader.vector("direction", 3)
        norm = float(np.linalg.norm(direction))
        if abs(norm - 1.0) > 1e-6:
            raise TaskError(f"{path.name}: direction must be a unit vector, its length is {norm:.9g}")
        return IncisionTask(
            entry=reader.vector("entry", 3),
            direction=direction / norm,
            depth=reader.number("depth", positive=True),
            feed_rate=reader.number("feed_rate", positive=True),
            feed_acceleration=reader.number("feed_acceleration", positive=True),
            feed_jerk=reader.number("feed_jerk", positive=True),
            standoff=reader.number("standoff", positive=True),
            approach_distance=reader.number("approach_distance", positive=True),
            dwell=reader.number("dwell", non_negative=True),
            retract_rate=reader.number("retract_rate", positive=True),
            park=reader.vector("park", 6),
            line=line,
            bone=reader.bone(),
            path=path,
        )
    if kind == "line":
        return LineTask(
            start=reader.vector("start", 6),
            end=reader.vector("end", 3),
            line=line,
            settle=reader.number("settle", non_negative=True),
            path=path,
        )
    raise TaskError(f"{path.name}: task must be one of {', '.join(TASK_NAMES)}, got {kind!r}")


#: The keys a task file may hold, by task: LEAF is a {value, unit, source} number, None a plain
#: value, a dict a mapping of such keys, a one-item list a list of such items.
LEAF = "leaf"
_LEAF_KEYS = dict.fromkeys(("value", "unit", "source"))
_LINE_KEYS = {"speed": LEAF, "acceleration": LEAF, "jerk": LEAF}
TASK_KEYS: dict[str, dict[str, Any]] = {
    "incision": {
        "task": None,
        **dict.fromkeys(("entry", "direction", "depth", "feed_rate", "feed_acceleration", "feed_jerk"), LEAF),
        **dict.fromkeys(("standoff", "approach_distance", "dwell", "retract_rate", "park"), LEAF),
        "line": _LINE_KEYS,
        "schema_version": None,
        "bone": {
            "layers": [{"name": None, "thickness": LEAF, "thrust_factor": LEAF}],
            **dict.fromkeys(
                (
                    "reference_thrust",
                    "reference_feed_rate",
                    "feed_rate_exponent",
                    "point_length",
                    "time_constant",
                ),
                LEAF,
            ),
        },
    },
    "line": {
        "task": None,
        **dict.fromkeys(("start", "end"), LEAF),
        "line": _LINE_KEYS,
        "settle": LEAF,
        "schema_version": None,
    },
}


def unknown_keys(node: Any, schema: Any, prefix: str = "") -> list[str]:
    """Dotted names of the keys in `node` that `schema` (see TASK_KEYS) does not have.

    A value of the wrong kind (a list where a mapping belongs) is not reported here: reading it
    names it.
    """
    if schema == LEAF:
        schema = _LEAF_KEYS
    if isinstance(schema, dict) and isinstance(node, dict):
        found = []
        for key, value in node.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            found += [name] if key not in schema else unknown_keys(value, schema[key], name)
        return found
    if isinstance(schema, list) and isinstance(node, list):
        return [
            name for i, item in enumerate(node) for name in unknown_keys(item, schema[0], f"{prefix}[{i}]")
        ]
    return []


class _Reader(SourcedReader):
    def __init__(self, raw: dict[str, Any], path: Path) -> None:
        super().__init__(raw, path.name, TaskError, TASK_FILE)

    def bone(self) -> BoneParameters:
        node = self.raw.get("bone")
        if not isinstance(node, dict):
            raise self.fail("bone", "missing")
        layers_raw = node.get("layers")
        if not isinstance(layers_raw, list) or not layers_raw:
            raise self.fail("bone.layers", "must be a non-empty list")
        layers = []
        for index, layer in enumerate(layers_raw):
            if not isinstance(layer, dict) or not isinstance(layer.get("name"), str):
                raise self.fail(f"bone.layers[{index}]", "must have a name")
            layers.append(
                BoneLayer(
                    name=layer["name"],
                    thickness=self.number(f"bone.layers.{index}.thickness", positive=True),
                    thrust_factor=self.number(f"bone.layers.{index}.thrust_factor", non_negative=True),
                )
            )
        return BoneParameters(
            layers=tuple(layers),
            reference_thrust=self.number("bone.reference_thrust", positive=True),
            reference_feed_rate=self.number("bone.reference_feed_rate", positive=True),
            feed_rate_exponent=self.number("bone.feed_rate_exponent", positive=True),
            point_length=self.number("bone.point_length", positive=True),
            time_constant=self.number("bone.time_constant", positive=True),
        )


@dataclass(frozen=True)
class Kinematics:
    """FK/IK closures over the kinematic model, in the planner's call signatures."""

    model: KinematicModel

    def forward(self, q: np.ndarray) -> np.ndarray:
        return forward_kinematics(np.asarray(q, dtype=float), self.model)

    def inverse(self, position: np.ndarray, approach: np.ndarray, seed: np.ndarray) -> np.ndarray:
        return inverse_kinematics(ApproachTarget(position, approach), self.model, seed=seed)

    def tip(self, q6: np.ndarray) -> np.ndarray:
        """(3,) drill tip position (m) for q6 = arm joints + feed."""
        q6 = np.asarray(q6, dtype=float)
        return forward_kinematics(q6[:FEED_INDEX], self.model, feed=float(q6[FEED_INDEX]))[:3, 3]


def plan_incision(task: IncisionTask, params: RobotParameters, dt: float) -> JointTrajectory:
    """The whole incision as one trajectory (phases approach, align, feed, dwell, retract, withdraw, park)."""
    limits = JointLimits.from_parameters(params)
    stroke = task.standoff + task.depth
    check_task_duration(
        {
            "feed": stroke / task.feed_rate,
            "dwell": task.dwell,
            "retract": stroke / min(task.retract_rate, limits.velocity[FEED_INDEX]),
            "align and withdraw": 2.0 * (task.approach_distance - task.standoff) / task.line.speed,
        },
        "incision",
    )
    kin = Kinematics(KinematicModel.from_parameters(params))
    park = task.park.copy()
    limits.check_position(park, "incision: park pose")
    # The drill tip is tool0 + feed * u: tool0 targets are the tip's minus the retracted feed.
    retracted = float(park[FEED_INDEX])
    u = task.direction
    above = task.entry - (task.approach_distance + retracted) * u
    standoff = task.entry - (task.standoff + retracted) * u
    try:
        q_above = kin.inverse(above, u, park[:FEED_INDEX])
    except ValueError as error:
        raise PlanningError(
            f"incision: cannot reach the approach point {above.round(4).tolist()}: {error}"
        ) from error
    q_above6 = np.append(q_above, retracted)
    trajectory = hold(park, 0.2, dt, "start")
    trajectory = trajectory.then(plan_point_to_point(park, q_above6, limits, dt, "approach"))
    align = plan_line(
        q_above6, standoff, limits, task.line, dt, forward=kin.forward, inverse=kin.inverse, name="align"
    )
    trajectory = trajectory.then(align)
    trajectory = trajectory.then(hold(align.positions[-1], 0.2, dt, "settle"))
    feed_goal = retracted + task.standoff + task.depth
    if feed_goal > limits.soft_upper[FEED_INDEX]:
        raise PlanningError(
            f"incision: retracted feed + standoff + depth = {feed_goal * 1000:.1f} mm exceeds the drill "
            f"feed stroke {limits.soft_upper[FEED_INDEX] * 1000:.1f} mm (soft limit)"
        )
    feed = plan_feed(
        align.positions[-1],
        feed_goal,
        task.feed_rate,
        limits,
        dt,
        "feed",
        acceleration=task.feed_acceleration,
        jerk=task.feed_jerk,
    )
    trajectory = trajectory.then(feed)
    trajectory = trajectory.then(hold(feed.positions[-1], task.dwell, dt, "dwell"))
    retract_rate = min(task.retract_rate, limits.velocity[FEED_INDEX])
    trajectory = trajectory.then(
        plan_feed(feed.positions[-1], retracted, retract_rate, limits, dt, "retract")
    )
    withdraw = plan_line(
        trajectory.positions[-1],
        above,
        limits,
        task.line,
        dt,
        forward=kin.forward,
        inverse=kin.inverse,
        name="withdraw",
    )
    trajectory = trajectory.then(withdraw)
    trajectory = trajectory.then(plan_point_to_point(withdraw.positions[-1], park, limits, dt, "park"))
    return trajectory.then(hold(park, 0.2, dt, "end"))


def plan_line_task(task: LineTask, params: RobotParameters, dt: float) -> JointTrajectory:
    """Hold, the straight line of tool0, hold (phases start, line, end)."""
    limits = JointLimits.from_parameters(params)
    kin = Kinematics(KinematicModel.from_parameters(params))
    length = float(np.linalg.norm(task.end - kin.forward(task.start[:FEED_INDEX])[:3, 3]))
    check_task_duration({"line": length / task.line.speed, "settle": 2.0 * task.settle}, "line")
    line = plan_line(
        task.start, task.end, limits, task.line, dt, forward=kin.forward, inverse=kin.inverse, name="line"
    )
    trajectory = hold(task.start, task.settle, dt, "start").then(line)
    return trajectory.then(hold(line.positions[-1], task.settle, dt, "end"))
