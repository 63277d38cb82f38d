"""Knee arthroscopy as a procedure (procedures.procedure): hold the scope through a portal.

The scripted servo stream of config/tasks/arthroscopy.yaml goes through the RCM servo
(planning.remote_centre) at the control rate; its joint commands are the plan the closed loop
tracks (ClosedLoopSimulation, no bone, the feed held retracted). metrics.rcm_error is the largest
distance of the portal from the scope axis of the plant's true joints over the whole run (m):
the servo keeps it zero at every command, so what it measures is the controller's tracking.
Simplification: the plant carries the drill's masses (the arthroscope's 4.5 g rod is not swapped
in), and the hardware component checks no tool fixtures (the servo checks the scope against the
no-go zones before every step).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from quirobot_control.axes.limits import JointLimits
from quirobot_control.axes.virtual_fixtures import VirtualFixtures
from quirobot_control.planning.remote_centre import RcmLimits, RcmServo, Twist, axis_distance
from quirobot_control.planning.tasks import TaskError, _Reader, planning_kinematics
from quirobot_control.planning.trajectory import JointTrajectory, Phase, hold
from quirobot_control.procedures.procedure import SummaryRow, register
from quirobot_control.simulation.closed_loop import ClosedLoopSimulation
from quirobot_control.simulation.incision import TARGETS, TaskResult, common_metrics
from quirobot_control.simulation.metrics import TaskMetrics
from quirobot_description.file_schema import TASK_FILE, TEXT, Expect, FileSchema
from quirobot_description.parameters import FEED_INDEX, RobotParameters
from quirobot_description.sourced_yaml import read_yaml_mapping

#: The arthroscopy task file's keys (its own schema: a new procedure leaves TASK_FILE alone).
ARTHROSCOPY_FILE = FileSchema(
    "arthroscopy task file",
    1,
    {
        "schema_version": TEXT,
        "task": TEXT,
        "portal": Expect("m", -5.0, 5.0),
        "direction": Expect("1", -10.0, 10.0),
        "depth": Expect("m", 0.0, 0.5),
        "min_depth": Expect("m", 0.0, 0.5),
        "max_depth": Expect("m", 0.0, 0.5),
        "tip_speed": Expect("m/s", 1e-4, 0.5),
        "pivot_rate": Expect("rad/s", 1e-3, 5.0),
        "timeout": Expect("s", 1e-3, 10.0),
        "servo_rate": Expect("1/s", 1.0, 1e4),
        "settle": Expect("s", 0.0, 60.0),
        "servo.*.duration": Expect("s", 0.0, 60.0),
        "servo.*.linear": Expect("m/s", -1.0, 1.0),
        "servo.*.angular": Expect("rad/s", -5.0, 5.0),
        "servo.*.send": TEXT,
        **{key: value for key, value in TASK_FILE.keys.items() if key.startswith("no_go_zones")},
    },
    leaf_extras=(),
    max_items={"servo": 64, "no_go_zones": 8},
    max_text=64,
)
#: The procedure's targets (m): the issue's portal drift bound.
RCM_TARGET = 0.5e-3


@dataclass(frozen=True)
class ServoSegment:
    duration: float  # s
    linear: np.ndarray  # (3,) m/s, world
    angular: np.ndarray  # (3,) rad/s, world
    send: bool  # False: no command during the segment (the dead-man must hold)


@dataclass(frozen=True)
class ArthroscopyTask:
    portal: np.ndarray  # (3,) m, world
    direction: np.ndarray  # (3,) unit, into the joint
    depth: float  # m, the tip past the portal at the start
    min_depth: float
    max_depth: float
    tip_speed: float  # m/s
    pivot_rate: float  # rad/s
    timeout: float  # s, dead-man
    servo_rate: float  # 1/s, command messages
    settle: float  # s
    servo: tuple[ServoSegment, ...]
    path: Path
    no_go_zones: tuple = ()


@dataclass(frozen=True)
class ArthroscopyMetrics:
    """An arthroscopy run (module docstring); lengths m."""

    rcm_error: float  # m, largest distance of the portal from the true scope axis, whole run
    rcm_error_commanded: float  # m, the same for the servo's commanded joints
    servo_commands: int  # TwistStamped messages received
    dead_man_holds: int  # control cycles held by the dead-man timeout
    limit_holds: int  # control cycles held by the workspace, a no-go zone or a speed limit
    final_depth: float  # m, the tip past the portal at the end (commanded)


class _ArthroscopyReader(_Reader):
    def __init__(self, raw: dict[str, Any], path: Path) -> None:
        super(_Reader, self).__init__(raw, path.name, TaskError, ARTHROSCOPY_FILE)


def load_arthroscopy(path: Path) -> ArthroscopyTask:
    raw = read_yaml_mapping(path, TaskError, "task file")
    reader = _ArthroscopyReader(raw, path)
    direction = reader.vector("direction", 3)
    norm = float(np.linalg.norm(direction))
    if abs(norm - 1.0) > 1e-6:
        raise TaskError(f"{path.name}: direction must be a unit vector, its length is {norm:.9g}")
    node = raw.get("servo")
    if not isinstance(node, list) or not node:
        raise reader.fail("servo", "must be a non-empty list of segments (duration, linear, angular)")
    segments = []
    for index, item in enumerate(node):
        key = f"servo.{index}"
        send = item.get("send", True) if isinstance(item, dict) else True
        if not isinstance(send, bool):
            raise reader.fail(f"{key}.send", f"must be true or false, got {send!r}")
        zero = np.zeros(3)
        segments.append(
            ServoSegment(
                duration=reader.number(f"{key}.duration", positive=True),
                linear=reader.vector(f"{key}.linear", 3) if send else zero,
                angular=reader.vector(f"{key}.angular", 3) if send else zero,
                send=send,
            )
        )
    return ArthroscopyTask(
        portal=reader.vector("portal", 3),
        direction=direction / norm,
        depth=reader.number("depth", positive=True),
        min_depth=reader.number("min_depth", non_negative=True),
        max_depth=reader.number("max_depth", positive=True),
        tip_speed=reader.number("tip_speed", positive=True),
        pivot_rate=reader.number("pivot_rate", positive=True),
        timeout=reader.number("timeout", positive=True),
        servo_rate=reader.number("servo_rate", positive=True),
        settle=reader.number("settle", non_negative=True),
        servo=tuple(segments),
        path=path,
        no_go_zones=reader.zones(),
    )


def servo_for(task: ArthroscopyTask, params: RobotParameters) -> RcmServo:
    """The RCM servo holding the scope docked as the task starts (tip `depth` past the portal)."""
    limits = JointLimits.from_parameters(params)
    kin = planning_kinematics(params, limits)
    scope = params.arthroscope
    tool0 = task.portal + (task.depth - scope.scope_length) * task.direction
    park = np.array([1.0, 1.0, 0.5, np.pi / 2, np.pi / 6])  # a seed only: the wrist family near it
    q0 = kin.inverse(tool0, task.direction, park)
    return RcmServo(
        portal=task.portal,
        scope_length=scope.scope_length,
        scope_radius=scope.scope_radius,
        limits=RcmLimits(
            tip_speed=task.tip_speed,
            pivot_rate=task.pivot_rate,
            min_depth=task.min_depth,
            max_depth=task.max_depth,
            timeout=task.timeout,
            joint_velocity=limits.velocity[:FEED_INDEX].copy(),
        ),
        model=kin.model,
        q=q0,
        zones=task.no_go_zones,
    )


def run_servo(task: ArthroscopyTask, servo: RcmServo, dt: float) -> JointTrajectory:
    """The scripted stream through the servo at the control period dt (s): the joints it commands
    (phases start, servo, end; the feed held at its park value, 4 mm: see incision.yaml)."""
    feed = 0.004
    t = 0.0
    positions, velocities = [np.append(servo.q, feed)], [np.zeros(6)]
    next_message = 0.0
    for segment in task.servo:
        end = t + segment.duration
        while t < end - 1e-12:
            if segment.send and t >= next_message - 1e-12:
                servo.receive(Twist(segment.linear, segment.angular, t))
                next_message = t + 1.0 / task.servo_rate
            step = servo.step(t, dt)
            positions.append(np.append(step.q, feed))
            velocities.append(np.append(step.qd, 0.0))
            t += dt
        if not segment.send:
            next_message = t
    q = np.array(positions)
    qd = np.array(velocities)
    qdd = np.vstack([np.zeros((1, 6)), np.diff(qd, axis=0) / dt])
    start = hold(q[0], task.settle, dt, "start")
    motion = JointTrajectory(dt, q, qd, qdd, phases=(Phase("servo", 0.0, (len(q) - 1) * dt),))
    return start.then(motion).then(hold(q[-1], task.settle, dt, "end"))


@dataclass(frozen=True)
class ArthroscopyProcedure:
    """Hold the arthroscope through a portal under servo commands (a remote centre of motion)."""

    name: str = "arthroscopy"
    tool: str = "arthroscope"
    phases: tuple[str, ...] = ("start", "servo", "end")
    options: frozenset[str] = frozenset()
    summary_rows: tuple[SummaryRow, ...] = (
        SummaryRow("portal drift (RCM error)", "rcm_error", 1e6, "um"),
        SummaryRow("RCM error of the commands", "rcm_error_commanded", 1e6, "um"),
        SummaryRow("servo commands", "servo_commands", 1.0, ""),
        SummaryRow("dead-man holds (cycles)", "dead_man_holds", 1.0, ""),
    )
    panels: tuple[str, ...] = ()  # the tracking and current panels only
    targets: dict[str, float] = field(
        default_factory=lambda: (
            {"rcm_error": RCM_TARGET} | {key: TARGETS[key] for key in ("controller_p99", "real_time_factor")}
        )
    )

    def load(self, path: Path) -> ArthroscopyTask:
        return load_arthroscopy(path)

    def plan(self, task: ArthroscopyTask, params: RobotParameters, dt: float) -> JointTrajectory:
        return run_servo(task, servo_for(task, params), dt)

    def fixtures(self, task: ArthroscopyTask, params: RobotParameters) -> VirtualFixtures:
        from quirobot_control.axes.virtual_fixtures import ToolGeometry

        return VirtualFixtures(zones=task.no_go_zones, tool=ToolGeometry.from_parameters(params))

    def simulate(self, task: ArthroscopyTask, params: RobotParameters, **options: Any) -> TaskResult:
        from quirobot_control.hardware.control_config import control_configuration

        control = options.get("control") or control_configuration(params)
        servo = servo_for(task, params)
        trajectory = run_servo(task, servo, control.dt)
        if options.get("on_plan") is not None:
            options["on_plan"](trajectory)
        simulation = ClosedLoopSimulation(
            params,
            control,
            trajectory,
            plant=options.get("plant", "ideal"),
            compensated=options.get("compensated", True),
        )
        log = simulation.run(progress=options.get("progress"))
        model = servo.model
        dead_man = sum(n for reason, n in servo.holds.items() if reason.startswith("dead-man"))
        metrics = ArthroscopyMetrics(
            rcm_error=float(axis_distance(log.position[:, :FEED_INDEX], task.portal, model).max()),
            rcm_error_commanded=float(
                axis_distance(trajectory.positions[:, :FEED_INDEX], task.portal, model).max()
            ),
            servo_commands=servo.commands,
            dead_man_holds=dead_man,
            limit_holds=sum(servo.holds.values()) - dead_man,
            final_depth=servo.depth,
        )
        run = common_metrics(log, trajectory)
        return TaskResult(task, trajectory, log, TaskMetrics(run, procedure=metrics))

    def document(self, result: TaskResult, base: dict[str, Any]) -> dict[str, Any]:
        task = result.task
        return {"arthroscopy": {"portal": task.portal.tolist(), "direction": task.direction.tolist()}, **base}


register(ArthroscopyProcedure())
