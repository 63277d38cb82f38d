"""Surgical tasks (config/tasks/*.yaml) and their plans.

`load_task(name_or_path)` reads an incision or line task; `plan_incision` and `plan_line_task`
turn it into one `JointTrajectory` with named phases:

incision: approach (joint space) -> align (straight line down the drilling axis to the standoff)
-> feed (drill feed to depth at the feed rate) -> dwell -> retract -> withdraw (straight line
back up the axis) -> park (joint space).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from quirobot_control.axes.limits import JointLimits, PlanningError
from quirobot_control.axes.virtual_fixtures import (
    SHAPES,
    EntrySpeedLimit,
    FixtureError,
    NoGoZone,
    ToolGeometry,
    VirtualFixtures,
    tip_positions,
)
from quirobot_control.models.bone import BoneLayer, BoneParameters
from quirobot_control.planning.fixture_check import check_out_of_bone, check_plan
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
from quirobot_description.geometric_errors import GeometricErrors
from quirobot_description.parameters import JOINT_NAMES, DrillParameters, RobotParameters
from quirobot_description.shown_numbers import compared, shown
from quirobot_description.sourced_yaml import SourcedReader, read_yaml_mapping
from quirobot_kinematics import ApproachTarget, KinematicModel, forward_kinematics, inverse_kinematics
from quirobot_kinematics.forward import tool_axis_single
from quirobot_kinematics.inverse import approach_inverse

TASK_NAMES = ("incision", "line")
#: The dimensions each no-go zone shape takes (rpy optional).
ZONE_DIMENSIONS = {"box": ("center", "size", "rpy"), "capsule": ("start", "end", "radius")}
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
        duration, limit = compared(total, MAX_TASK_DURATION)
        raise PlanningError(
            f"{what}: the task would last {duration} s, more than the {limit} s limit "
            f"(MAX_TASK_DURATION; {slowest} alone takes {shown(phases[slowest])} s)"
        )


class TaskError(ValueError):
    """A task file is missing, malformed or holds an invalid value (named in the message)."""


def task_file(name: str) -> Path:
    """The shipped task file of a task in TASK_NAMES (config/tasks/<name>.yaml, see data_files)."""
    if name not in TASK_NAMES:
        raise TaskError(f"unknown task {name!r}: give one of {', '.join(TASK_NAMES)}")
    return find_data_file(f"config/tasks/{name}.yaml")


@dataclass(frozen=True)
class NearEntrySpeed:
    """entry_speed_limit of a task file: within `radius` m of the task's entry point the drill tip
    moves at most `speed` m/s (the feed at most the task's feed rate). Kept apart from the entry
    and the feed rate so that a task derived with another entry or feed rate (DrillHole goals,
    the accuracy budget's samples) is limited around its own."""

    radius: float
    speed: float


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
    no_go_zones: tuple[NoGoZone, ...] = ()  # world frame (axes.virtual_fixtures)
    entry_speed_limit: NearEntrySpeed | None = None  # the tip near the entry point


@dataclass(frozen=True)
class LineTask:
    start: np.ndarray  # (6,)
    end: np.ndarray  # (3,) m, tool0
    line: LineLimits
    settle: float  # s
    path: Path
    no_go_zones: tuple[NoGoZone, ...] = ()  # world frame (axes.virtual_fixtures)
    # The line drills nothing: no bone and no entry point to slow near (read as an incision's are).
    bone: None = None
    entry_speed_limit: None = None


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
    if not isinstance(kind, str) or kind not in TASK_NAMES:
        raise TaskError(f"{path.name}: task must be one of {', '.join(TASK_NAMES)}, got {kind!r:.40}")
    reader = _Reader(raw, path)  # refuses unknown keys by name (file_schema.TASK_FILE, per task)
    line = LineLimits(
        speed=reader.number("line.speed", positive=True),
        acceleration=reader.number("line.acceleration", positive=True),
        jerk=reader.number("line.jerk", positive=True),
    )
    if kind == "incision":
        return IncisionTask(
            entry=reader.vector("entry", 3),
            direction=reader.unit_vector("direction"),
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
            no_go_zones=reader.zones(),
            entry_speed_limit=reader.entry_speed_limit(),
        )
    if kind == "line":
        return LineTask(
            start=reader.vector("start", 6),
            end=reader.vector("end", 3),
            line=line,
            settle=reader.number("settle", non_negative=True),
            path=path,
            no_go_zones=reader.zones(),
        )
    raise TaskError(f"{path.name}: task must be one of {', '.join(TASK_NAMES)}, got {kind!r}")


#: The values that name no bone: task_node's `task`, the launch files' bone arguments (drive_node's
#: `simulated_bone` spells them itself: the real-drive path loads no planner).
NO_BONE = ("", "none")


def bone_task(value: str) -> str:
    """A simulated plant's bone, checked (drive_node's `simulated_bone`, the launch files' bone
    arguments): "" or "none" give "none" (no bone); a shipped task name stays itself; a task file
    becomes its absolute path (a node reads it from its own working directory). TaskError naming
    the value and the problem: unreadable, invalid, or not an incision (only an incision has a bone)."""
    if value in NO_BONE:
        return "none"
    path = value if value in TASK_NAMES else str(Path(value).expanduser().resolve())
    try:
        task = load_task(path)
    except (TaskError, OSError) as error:
        raise TaskError(f"bone {value!r}: {' '.join(str(error).split())}") from None
    if not isinstance(task, IncisionTask):
        raise TaskError(f"bone {value!r}: a {type(task).__name__} has no bone; give an incision task")
    return path


class _Reader(SourcedReader):
    def __init__(self, raw: dict[str, Any], path: Path) -> None:
        super().__init__(raw, path.name, TaskError, TASK_FILE)

    def unit_vector(self, key: str) -> np.ndarray:
        """The 3-vector at `key`, a unit vector to 1e-6 (renormalised exactly); TaskError naming
        its length otherwise."""
        vector = self.vector(key, 3)
        norm = float(np.linalg.norm(vector))
        if abs(norm - 1.0) > 1e-6:
            raise TaskError(f"{self.label}: {key} must be a unit vector, its length is {norm:.9g}")
        return vector / norm

    def zones(self) -> tuple[NoGoZone, ...]:
        """The task's no_go_zones (none if the key is absent): each a name, a shape and its
        dimensions (box: center, size, optional rpy; capsule: start, end, radius)."""
        node = self.raw.get("no_go_zones", [])
        if not isinstance(node, list):
            raise self.fail(
                "no_go_zones", "must be a list of zones, each with a name, a shape and its dimensions"
            )
        zones: list[NoGoZone] = []
        for index, zone in enumerate(node):
            key = f"no_go_zones.{index}"
            if (
                not isinstance(zone, dict)
                or not isinstance(zone.get("name"), str)
                or not zone["name"].strip()
            ):
                raise self.fail(key, "must have a name")
            name = zone["name"]
            if any(other.name == name for other in zones):
                raise self.fail(key, f"a second zone named {name!r}: give each zone its own name")
            shape = self.text(f"{key}.shape", SHAPES)
            takes = ZONE_DIMENSIONS[shape]
            extra = [k for k in zone if k not in ("name", "shape", *takes)]
            if extra:
                raise self.fail(
                    f"{key}.{extra[0]}",
                    f"is not a dimension of a {shape} (a {shape} takes {', '.join(takes)})",
                )
            try:
                if shape == "box":
                    rpy = self.vector(f"{key}.rpy", 3) if "rpy" in zone else np.zeros(3)
                    zones.append(
                        NoGoZone.box(
                            name,
                            self.vector(f"{key}.center", 3),
                            self.vector(f"{key}.size", 3, positive=True),
                            rpy,
                        )
                    )
                else:
                    zones.append(
                        NoGoZone.capsule(
                            name,
                            self.vector(f"{key}.start", 3),
                            self.vector(f"{key}.end", 3),
                            self.number(f"{key}.radius", positive=True),
                        )
                    )
            except FixtureError as error:
                raise self.fail(key, str(error)) from error
        return tuple(zones)

    def entry_speed_limit(self) -> NearEntrySpeed | None:
        """The tip-speed limit near the entry point (None if the task has none)."""
        if "entry_speed_limit" not in self.raw:
            return None
        return NearEntrySpeed(
            radius=self.number("entry_speed_limit.radius", positive=True),
            speed=self.number("entry_speed_limit.speed", positive=True),
        )

    def bone(self) -> BoneParameters:
        node = self.raw.get("bone")
        if not isinstance(node, dict):
            raise self.fail("bone", "missing")
        layers_raw = node.get("layers")
        if not isinstance(layers_raw, list) or not layers_raw:
            raise self.fail("bone.layers", "must be a non-empty list")
        layers: list[BoneLayer] = []
        for index, layer in enumerate(layers_raw):
            if (
                not isinstance(layer, dict)
                or not isinstance(layer.get("name"), str)
                or not layer["name"].strip()
            ):
                raise self.fail(f"bone.layers.{index}", "must have a name")
            if any(other.name == layer["name"] for other in layers):
                raise self.fail(
                    f"bone.layers.{index}",
                    f"a second layer named {layer['name']!r}: give each layer its own name",
                )
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

    def inverse_at(self, approach: np.ndarray) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        """`inverse` at one approach, as (position, seed) -> q (quirobot_kinematics.inverse.
        approach_inverse: the same numbers, the approach's wrist worked out once)."""
        return approach_inverse(approach, self.model)

    def line(
        self, start: np.ndarray, end: np.ndarray, limits: JointLimits, line: LineLimits, dt: float, name: str
    ) -> JointTrajectory:
        """planning.trajectory.plan_line from the joints `start` to tool0 at `end` with this FK and
        IK (its fixed approach's IK through `inverse_at`)."""
        return plan_line(
            start,
            end,
            limits,
            line,
            dt,
            forward=self.forward,
            inverse=self.inverse,
            inverse_at=self.inverse_at,
            name=name,
        )

    def tip(self, q6: np.ndarray) -> np.ndarray:
        """(3,) drill tip position (m) for q6 = arm joints + feed (axes_for("drill"))."""
        q6 = np.asarray(q6, dtype=float)
        feed = float(q6[DrillParameters.feed_index])
        if q6.shape != (len(JOINT_NAMES) + 1,):
            return forward_kinematics(q6[: len(JOINT_NAMES)], self.model, feed=feed)[:3, 3]
        # the closed form's numbers without its matrix (the executor asks every control period)
        return np.array(tool_axis_single(q6[: len(JOINT_NAMES)].tolist(), self.model, feed)[0])


def planning_kinematics(
    params: RobotParameters, limits: JointLimits, calibration: GeometricErrors | None = None
) -> Kinematics:
    """FK/IK with the arm joints' soft limits as the IK's ranges: the planner keeps every pose
    inside them, so a target outside is refused naming the soft limit (the true one), not the
    hard limit beyond it. `calibration`: the machine's identified geometric errors (a
    `quirobot calibrate` file, quirobot_description.geometric_errors.read_calibration): the plan
    is then that machine's (its FK and IK); None: the nominal model."""
    model = KinematicModel.from_parameters(params).calibrated(calibration)
    return Kinematics(
        replace(
            model,
            lower=limits.soft_lower[: len(JOINT_NAMES)].copy(),
            upper=limits.soft_upper[: len(JOINT_NAMES)].copy(),
        )
    )


def plan_incision(
    task: IncisionTask, params: RobotParameters, dt: float, calibration: GeometricErrors | None = None
) -> JointTrajectory:
    """The whole incision as one trajectory (phases approach, align, feed, dwell, retract, withdraw,
    park); `calibration`: see planning_kinematics."""
    feed_index = DrillParameters.feed_index  # the drill feed's column
    limits = JointLimits.from_parameters(params)
    park = task.park.copy()
    limits.check_position(park, "incision: park pose")
    # The drill tip is tool0 + feed * u: tool0 targets are the tip's minus the retracted feed.
    retracted = float(park[feed_index])
    # The stroke first: a standoff or depth beyond it is refused as such, not as a long task.
    feed_goal = retracted + task.standoff + task.depth
    if feed_goal > limits.soft_upper[feed_index]:
        goal, stroke = compared(feed_goal * 1000, limits.soft_upper[feed_index] * 1000)
        raise PlanningError(
            f"incision: retracted feed + standoff + depth = {goal} mm exceeds the drill feed stroke "
            f"{stroke} mm (soft limit)"
        )
    stroke = task.standoff + task.depth
    check_task_duration(
        {
            "feed": stroke / task.feed_rate,
            "dwell": task.dwell,
            "retract": stroke / min(task.retract_rate, limits.velocity[feed_index]),
            "align and withdraw": 2.0 * (task.approach_distance - task.standoff) / task.line.speed,
        },
        "incision",
    )
    kin = planning_kinematics(params, limits, calibration)
    u = task.direction
    above = task.entry - (task.approach_distance + retracted) * u
    standoff = task.entry - (task.standoff + retracted) * u
    try:
        q_above = kin.inverse(above, u, park[: len(JOINT_NAMES)])
    except ValueError as error:
        raise PlanningError(
            f"incision: cannot reach the approach point {above.round(4).tolist()}: {error}"
        ) from error
    q_above6 = np.append(q_above, retracted)
    trajectory = hold(park, 0.2, dt, "start")
    fixtures = task_fixtures(task, params)
    trajectory = trajectory.then(_joint_move(park, q_above6, limits, dt, "approach", fixtures))
    align = kin.line(q_above6, standoff, limits, task.line, dt, "align")
    trajectory = trajectory.then(align)
    trajectory = trajectory.then(hold(align.positions[-1], 0.2, dt, "settle"))
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
    retract_rate = min(task.retract_rate, limits.velocity[feed_index])
    trajectory = trajectory.then(
        plan_feed(feed.positions[-1], retracted, retract_rate, limits, dt, "retract")
    )
    withdraw = kin.line(trajectory.positions[-1], above, limits, task.line, dt, "withdraw")
    trajectory = trajectory.then(withdraw)
    trajectory = trajectory.then(_joint_move(withdraw.positions[-1], park, limits, dt, "park", fixtures))
    trajectory = trajectory.then(hold(park, 0.2, dt, "end"))
    check_plan(trajectory, fixtures, "incision")
    check_out_of_bone(trajectory, fixtures, task.entry, u)
    return trajectory


def _joint_move(
    start: np.ndarray, goal: np.ndarray, limits: JointLimits, dt: float, name: str, fixtures: VirtualFixtures
) -> JointTrajectory:
    """A joint-space move (plan_point_to_point), slowed uniformly while its drill tip would pass the
    tip-speed limit near the entry (a start near the entry: a DrillHole goal after a cancelled
    one): the joints' velocity, acceleration and jerk limits times f, f^2, f^3 give the same path
    in 1/f of the time, so the tip's speed scales by f. check_plan names anything left."""
    move = plan_point_to_point(start, goal, limits, dt, name)
    limit = fixtures.speed_limit
    for _ in range(5):
        if limit is None or len(move.positions) < 2:
            break
        tip = tip_positions(move.positions, fixtures.tool)
        distance = np.linalg.norm(tip - limit.entry, axis=1)
        near = np.minimum(distance[:-1], distance[1:]) <= limit.radius
        speed = np.linalg.norm(np.diff(tip, axis=0), axis=1) / dt
        fastest = float(speed[near].max()) if near.any() else 0.0
        if fastest <= limit.speed:
            break
        f = 0.98 * limit.speed / fastest
        limits = replace(
            limits,
            velocity=limits.velocity * f,
            acceleration=limits.acceleration * f**2,
            jerk=limits.jerk * f**3,
        )
        move = plan_point_to_point(start, goal, limits, dt, name)
    return move


def plan_line_task(task: LineTask, params: RobotParameters, dt: float) -> JointTrajectory:
    """Hold, the straight line of tool0, hold (phases start, line, end)."""
    limits = JointLimits.from_parameters(params)
    kin = planning_kinematics(params, limits)
    length = float(np.linalg.norm(task.end - kin.forward(task.start[: len(JOINT_NAMES)])[:3, 3]))
    check_task_duration({"line": length / task.line.speed, "settle": 2.0 * task.settle}, "line")
    line = kin.line(task.start, task.end, limits, task.line, dt, "line")
    trajectory = hold(task.start, task.settle, dt, "start").then(line)
    trajectory = trajectory.then(hold(line.positions[-1], task.settle, dt, "end"))
    check_plan(trajectory, task_fixtures(task, params), "line")
    return trajectory


def task_fixtures(task: IncisionTask | LineTask, params: RobotParameters) -> VirtualFixtures:
    """The task's virtual fixtures (no-go zones, tip-speed limit near the entry) on this robot's
    tool: what the plan is checked against and what the hardware component enforces per cycle
    (`QuirobotHardware.set_fixtures`)."""
    limit = task.entry_speed_limit
    return VirtualFixtures(
        zones=task.no_go_zones,
        tool=ToolGeometry.from_parameters(params),
        speed_limit=None
        if limit is None
        else EntrySpeedLimit(task.entry, limit.radius, limit.speed, feed_rate=task.feed_rate),
    )
