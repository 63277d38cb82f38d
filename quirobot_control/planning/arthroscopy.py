"""The arthroscopy task (config/tasks/arthroscopy.yaml) and the RCM servo docked as it starts.

Read by the simulated procedure (simulation.arthroscopy_procedure) and by the ROS servo
(procedures.scope_servo, scope_servo_node) alike: the portal, the scope's start, the servo's
limits and the scripted stream are the task file's, each number {value, unit, source}.

Refused in one line naming the file: a start depth outside the task's own depth range, a depth
range whose deepest end takes the camera coupler into the portal (`servo_for`: deeper than the
scope's sheath), and a task lasting longer than planning.tasks.MAX_TASK_DURATION (its settles and
segments added up; before, a 3,840 s stream was accepted and planned sample by sample).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from quirobot_control.axes.limits import JointLimits
from quirobot_control.planning.remote_centre import RcmLimits, RcmServo
from quirobot_control.planning.tasks import MAX_TASK_DURATION, TaskError, _Reader, planning_kinematics
from quirobot_description.file_schema import ARTHROSCOPY_FILE
from quirobot_description.parameters import RobotParameters, axes_for
from quirobot_description.sourced_yaml import read_yaml_mapping

__all__ = ["ARTHROSCOPY_FILE", "ArthroscopyTask", "ServoSegment", "load_arthroscopy", "servo_for"]


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
    cone_half_angle: float  # rad, the scope axis' largest angle from `direction`
    tip_speed: float  # m/s
    pivot_rate: float  # rad/s
    timeout: float  # s, dead-man
    joint_state_timeout: float  # s, the oldest joint states the servo moves on
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
    depth = reader.number("depth", positive=True)
    min_depth = reader.number("min_depth", non_negative=True)
    max_depth = reader.number("max_depth", positive=True)
    if not min_depth < max_depth:
        raise reader.fail(
            "max_depth", f"{max_depth * 1e3:.1f} mm must be deeper than min_depth {min_depth * 1e3:.1f} mm"
        )
    if not min_depth <= depth <= max_depth:
        raise reader.fail(
            "depth",
            f"{depth * 1e3:.1f} mm is outside the task's own depth range "
            f"{min_depth * 1e3:.1f}-{max_depth * 1e3:.1f} mm (min_depth, max_depth)",
        )
    settle = reader.number("settle", non_negative=True)
    duration = 2 * settle + sum(segment.duration for segment in segments)
    if not duration <= MAX_TASK_DURATION:
        raise reader.fail(
            "servo",
            f"the task would last {duration:.4g} s (two settles and {len(segments)} segments), more than "
            f"the {MAX_TASK_DURATION:g} s limit (MAX_TASK_DURATION)",
        )
    return ArthroscopyTask(
        portal=reader.vector("portal", 3),
        direction=direction,
        depth=depth,
        min_depth=min_depth,
        max_depth=max_depth,
        cone_half_angle=reader.number("cone_half_angle", positive=True),
        tip_speed=reader.number("tip_speed", positive=True),
        pivot_rate=reader.number("pivot_rate", positive=True),
        timeout=reader.number("timeout", positive=True),
        joint_state_timeout=reader.number("joint_state_timeout", positive=True),
        servo_rate=reader.number("servo_rate", positive=True),
        settle=settle,
        servo=tuple(segments),
        path=path,
        no_go_zones=reader.zones(),
    )


def servo_for(task: ArthroscopyTask, params: RobotParameters) -> RcmServo:
    """The RCM servo holding the scope docked as the task starts (tip `depth` past the portal);
    TaskError when the task's deepest insertion takes the camera coupler into the portal."""
    limits = JointLimits.from_parameters(params, axes_for("arthroscope"))  # the arm's joints
    kin = planning_kinematics(params, limits)
    scope = params.arthroscope
    sheath = scope.scope_length - params.meshes.scope_head_length  # the rod in front of the coupler
    if task.max_depth > sheath:
        raise TaskError(
            f"{task.path.name}: max_depth {task.max_depth * 1e3:.1f} mm is deeper than the scope's "
            f"{sheath * 1e3:.1f} mm sheath (tools.arthroscope.scope_length less meshes.scope_head_length): "
            f"the camera coupler would enter the portal"
        )
    tool0 = task.portal + (task.depth - scope.scope_length) * task.direction
    park = np.array([1.0, 1.0, 0.5, np.pi / 2, np.pi / 6])  # a seed only: the wrist family near it
    q0 = kin.inverse(tool0, task.direction, park)
    return RcmServo(
        portal=task.portal,
        entry=task.direction,
        scope_length=scope.scope_length,
        scope_radius=scope.scope_radius,
        body_radius=float(params.link("wrist_pitch_link").radius),  # as axes.virtual_fixtures
        limits=RcmLimits(
            tip_speed=task.tip_speed,
            pivot_rate=task.pivot_rate,
            min_depth=task.min_depth,
            max_depth=task.max_depth,
            cone_half_angle=task.cone_half_angle,
            timeout=task.timeout,
            joint_velocity=limits.velocity.copy(),
        ),
        model=kin.model,
        q=q0,
        zones=task.no_go_zones,
    )
