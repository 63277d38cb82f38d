"""msg/DrillingContext <-> safety.hole_context.HoleContext (the nodes' one converter, both ways).

task_node publishes the hole the DrillHole executor decided (`to_message`); drive_node hands what
it receives to its bridge (`from_message`). A round trip gives the same HoleContext: the drive side
watches exactly what the plan decided (test/ros checks it over DDS). The message packages are
imported inside the functions only.
"""

from __future__ import annotations

import math

import numpy as np

from quirobot_control.axes.virtual_fixtures import NoGoZone
from quirobot_control.models.bone import BoneLayer, BoneParameters
from quirobot_control.safety.hole_context import HoleContext
from quirobot_description.geometric_errors import GeometricErrors
from quirobot_description.machine_identity import MachineIdentity
from quirobot_kinematics.rotations import matrix_from_quaternion, quaternion_from_matrix

__all__ = ["from_message", "to_message"]


def _or_nan(value: float | None) -> float:
    return math.nan if value is None else float(value)


def _or_none(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def _xyz(message) -> list[float]:
    return [float(message.x), float(message.y), float(message.z)]


def to_message(goal_id: str, context: HoleContext | None, stamp):
    """The DrillingContext of goal `goal_id`'s hole (None: its end), stamped `stamp`
    (builtin_interfaces/Time), frame world."""
    from geometry_msgs.msg import Point, Quaternion, Vector3
    from quirobot.msg import BoneLayer as LayerMsg
    from quirobot.msg import DrillingContext
    from quirobot.msg import NoGoZone as ZoneMsg

    message = DrillingContext(goal_id=goal_id, active=context is not None)
    message.header.stamp, message.header.frame_id = stamp, "world"
    nan = math.nan
    for name in (
        "depth",
        "feed_rate",
        "thrust_limit",
        "arm_depth",
        "exit_depth",
        "entry_speed_radius",
        "entry_speed",
    ):
        setattr(message, name, nan)
    if context is None:
        return message
    message.entry = Point(**dict(zip("xyz", (float(v) for v in context.entry), strict=True)))
    message.direction = Vector3(**dict(zip("xyz", (float(v) for v in context.direction), strict=True)))
    message.depth, message.feed_rate = float(context.depth), float(context.feed_rate)
    message.thrust_limit = float(context.thrust_limit)
    message.arm_depth, message.exit_depth = _or_nan(context.arm_depth), _or_nan(context.exit_depth)
    message.entry_speed_radius = _or_nan(context.entry_speed_radius)
    message.entry_speed = _or_nan(context.entry_speed)
    for zone in context.zones:
        x, y, z, w = quaternion_from_matrix(zone.rotation)
        message.no_go_zones.append(
            ZoneMsg(
                name=zone.name,
                shape=zone.shape,
                center=Point(**dict(zip("xyz", (float(v) for v in zone.center), strict=True))),
                size=Vector3(**dict(zip("xyz", (float(v) for v in zone.size), strict=True))),
                orientation=Quaternion(x=float(x), y=float(y), z=float(z), w=float(w)),
                start=Point(**dict(zip("xyz", (float(v) for v in zone.start), strict=True))),
                end=Point(**dict(zip("xyz", (float(v) for v in zone.end), strict=True))),
                radius=float(zone.radius),
            )
        )
    if context.calibration is not None:
        message.calibration_names = list(GeometricErrors.names())
        message.calibration_values = [float(v) for v in context.calibration.vector()]
        message.calibration_machine = context.calibration_machine.text()
    bone = context.bone
    message.bone_model = bone is not None
    if bone is not None:
        message.bone_layers = [
            LayerMsg(name=layer.name, thickness=layer.thickness, thrust_factor=layer.thrust_factor)
            for layer in bone.layers
        ]
        message.bone_reference_thrust = float(bone.reference_thrust)
        message.bone_reference_feed_rate = float(bone.reference_feed_rate)
        message.bone_feed_rate_exponent = float(bone.feed_rate_exponent)
        message.bone_point_length = float(bone.point_length)
        message.bone_time_constant = float(bone.time_constant)
    return message


def _zone(message) -> NoGoZone:
    if message.shape == "box":
        q = message.orientation
        rotation = matrix_from_quaternion(q.x, q.y, q.z, q.w)
        zone = NoGoZone.box(message.name, _xyz(message.center), _xyz(message.size))
        return NoGoZone(zone.name, zone.shape, center=zone.center, size=zone.size, rotation=rotation)
    if message.shape == "capsule":
        return NoGoZone.capsule(message.name, _xyz(message.start), _xyz(message.end), float(message.radius))
    raise ValueError(f"no-go zone {message.name!r}: shape must be box or capsule, got {message.shape!r}")


def from_message(message) -> tuple[str, HoleContext | None]:
    """(goal_id, its hole; None: its end) from a DrillingContext. ValueError (one line, naming the
    field) for a context that is not well formed: nothing is then changed on the drive side."""
    goal_id = str(message.goal_id)
    if not goal_id:
        raise ValueError("drilling context: goal_id is empty (a hole belongs to one goal)")
    if not message.active:
        return goal_id, None
    bone = None
    if message.bone_model:
        bone = BoneParameters(
            layers=tuple(
                BoneLayer(layer.name, float(layer.thickness), float(layer.thrust_factor))
                for layer in message.bone_layers
            ),
            reference_thrust=float(message.bone_reference_thrust),
            reference_feed_rate=float(message.bone_reference_feed_rate),
            feed_rate_exponent=float(message.bone_feed_rate_exponent),
            point_length=float(message.bone_point_length),
            time_constant=float(message.bone_time_constant),
        )
    calibration = None
    if message.calibration_names or message.calibration_values:
        values = dict(zip(message.calibration_names, message.calibration_values, strict=True))
        if set(values) != set(GeometricErrors.names()):
            missing = sorted(set(GeometricErrors.names()) ^ set(values))
            raise ValueError(
                f"drilling context: calibration names differ from the model's: {', '.join(missing)}"
            )
        calibration = GeometricErrors(**{name: float(value) for name, value in values.items()})
    machine = None
    if message.calibration_machine:
        machine = MachineIdentity.from_text(str(message.calibration_machine))
    context = HoleContext(
        goal_id=goal_id,
        entry=np.array(_xyz(message.entry)),
        direction=np.array(_xyz(message.direction)),
        depth=float(message.depth),
        feed_rate=float(message.feed_rate),
        thrust_limit=float(message.thrust_limit),
        arm_depth=_or_none(float(message.arm_depth)),
        exit_depth=_or_none(float(message.exit_depth)),
        zones=tuple(_zone(zone) for zone in message.no_go_zones),
        entry_speed_radius=_or_none(float(message.entry_speed_radius)),
        entry_speed=_or_none(float(message.entry_speed)),
        bone=bone,
        calibration=calibration,
        calibration_machine=machine,
    )
    return goal_id, context
