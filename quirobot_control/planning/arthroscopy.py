"""The arthroscopy task (config/tasks/arthroscopy.yaml) and the RCM servo docked as it starts.

Read by the simulated procedure (simulation.arthroscopy_procedure) and by the ROS servo
(procedures.scope_servo, scope_servo_node) alike: the portal, the scope's start, the servo's
limits and the scripted stream are the task file's, each number {value, unit, source}.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from quirobot_control.axes.limits import JointLimits
from quirobot_control.planning.remote_centre import RcmLimits, RcmServo
from quirobot_control.planning.tasks import TaskError, _Reader, planning_kinematics
from quirobot_description.file_schema import TASK_FILE, TEXT, Expect, FileSchema
from quirobot_description.parameters import RobotParameters, axes_for
from quirobot_description.sourced_yaml import read_yaml_mapping

__all__ = ["ARTHROSCOPY_FILE", "ArthroscopyTask", "ServoSegment", "load_arthroscopy", "servo_for"]

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


class _ArthroscopyReader(_Reader):
    def __init__(self, raw: dict[str, Any], path: Path) -> None:
        super(_Reader, self).__init__(raw, path.name, TaskError, ARTHROSCOPY_FILE)


def load_arthroscopy(path: Path) -> ArthroscopyTask:
    raw = read_yaml_mapping(path, TaskError, "task file")
    reader = _ArthroscopyReader(raw, path)
    direction = reader.unit_vector("direction")
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
        direction=direction,
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
    limits = JointLimits.from_parameters(params, axes_for("arthroscope"))  # the arm's joints
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
            joint_velocity=limits.velocity.copy(),
        ),
        model=kin.model,
        q=q0,
        zones=task.no_go_zones,
    )
