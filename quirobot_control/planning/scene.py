"""The surgical scene as plain marker data: what RViz draws around the robot (issue 22).

`scene_markers` turns the scene (the bone as imaged, the no-go zones, the planned axis, the drilled
path, the live drill tip, the arthroscope's view cone) into `SceneMarker`s: plain dataclasses with
the fields of a visualization_msgs/Marker (namespace, id, type, pose, scale, colour, points), in
the world frame, lengths in m. The nodes only copy them into a MarkerArray (task_node's
/quirobot/scene, scope_servo_node's view cone), so what is drawn is tested without ROS.

Shapes: the bone's layers as slabs across the drilling axis (SLAB_WIDTH wide, each its thickness
deep, starting at the entry point: the bone model's layers are depths below the entry along the
axis); a box zone as a CUBE turned by its rotation; a capsule zone as a CYLINDER and two SPHEREs;
the planned axis, the drilled path and the view cone's rim as LINE_STRIPs; the cone's surface as a
TRIANGLE_LIST; the tip as a SPHERE. Rejected: meshes of the bone (the model has layers, not a
surface) and per-message colour tables (the colours are fixed here, one per kind).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from quirobot_control.axes.virtual_fixtures import NoGoZone
from quirobot_control.models.bone import BoneParameters
from quirobot_kinematics.rotations import quaternion_from_matrix

__all__ = ["DrilledPath", "SLAB_WIDTH", "SceneMarker", "axis_rotation", "scene_markers", "view_cone_markers"]

#: m: the lateral extent drawn for each bone layer (the model has no lateral extent).
SLAB_WIDTH = 0.04
#: visualization_msgs/Marker type numbers (its constants), by the name used here.
MARKER_TYPES = {"arrow": 0, "cube": 1, "sphere": 2, "cylinder": 3, "line_strip": 4, "triangle_list": 11}
COLOURS = {
    "bone": (0.93, 0.89, 0.78, 0.55),
    "no_go": (0.9, 0.1, 0.1, 0.25),
    "planned_axis": (0.2, 0.4, 1.0, 1.0),
    "drilled_path": (1.0, 0.5, 0.0, 1.0),
    "tip": (1.0, 1.0, 0.0, 1.0),
    "view_cone": (0.2, 0.9, 0.9, 0.3),
}
CONE_SEGMENTS = 24  # facets of the view cone's surface


@dataclass(frozen=True)
class SceneMarker:
    """One visualization_msgs/Marker as plain data (world frame, m)."""

    namespace: str
    id: int
    type: str  # a key of MARKER_TYPES
    position: tuple[float, float, float] = (0.0, 0.0, 0.0)
    orientation: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)  # x, y, z, w
    scale: tuple[float, float, float] = (1.0, 1.0, 1.0)  # m; a line's width in x
    colour: tuple[float, float, float, float] = (1.0, 1.0, 1.0, 1.0)  # r, g, b, a in [0, 1]
    points: tuple[tuple[float, float, float], ...] = field(default=())

    @property
    def type_number(self) -> int:
        return MARKER_TYPES[self.type]


def axis_rotation(direction: np.ndarray) -> np.ndarray:
    """(3, 3) world_from_marker whose z axis is `direction` (3,) (a cylinder's, a slab's normal)."""
    z = np.asarray(direction, dtype=float)
    norm = float(np.linalg.norm(z))
    if not np.isfinite(norm) or norm < 1e-12:
        raise ValueError(f"a marker axis must be a nonzero finite vector, got {direction!r}")
    z = z / norm
    helper = np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = np.cross(helper, z)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])


def _point(v: np.ndarray) -> tuple[float, float, float]:
    return (float(v[0]), float(v[1]), float(v[2]))


def _quaternion(rotation: np.ndarray) -> tuple[float, float, float, float]:
    return tuple(float(c) for c in quaternion_from_matrix(rotation))


def bone_markers(entry: np.ndarray, direction: np.ndarray, bone: BoneParameters) -> list[SceneMarker]:
    """One slab per layer, from the entry point down the axis (module docstring)."""
    rotation, a = axis_rotation(direction), np.asarray(direction, dtype=float)
    a = a / np.linalg.norm(a)
    markers, depth = [], 0.0
    for index, layer in enumerate(bone.layers):
        centre = np.asarray(entry, dtype=float) + (depth + 0.5 * layer.thickness) * a
        shade = 1.0 if layer.thrust_factor >= 0.5 else 0.6  # cortex light, medulla darker
        r, g, b, alpha = COLOURS["bone"]
        markers.append(
            SceneMarker(
                "bone",
                index,
                "cube",
                _point(centre),
                _quaternion(rotation),
                (SLAB_WIDTH, SLAB_WIDTH, float(layer.thickness)),
                (r * shade, g * shade, b * shade, alpha),
            )
        )
        depth += layer.thickness
    return markers


def zone_markers(zones: Sequence[NoGoZone]) -> list[SceneMarker]:
    """A CUBE per box zone; a CYLINDER and two SPHEREs per capsule zone."""
    markers: list[SceneMarker] = []
    colour = COLOURS["no_go"]
    for zone in zones:
        if zone.shape == "box":
            markers.append(
                SceneMarker(
                    "no_go_zones",
                    len(markers),
                    "cube",
                    _point(zone.center),
                    _quaternion(zone.rotation),
                    _point(zone.size),
                    colour,
                )
            )
            continue
        axis = zone.end - zone.start
        length = float(np.linalg.norm(axis))
        diameter = 2.0 * zone.radius
        if length > 1e-12:
            markers.append(
                SceneMarker(
                    "no_go_zones",
                    len(markers),
                    "cylinder",
                    _point(0.5 * (zone.start + zone.end)),
                    _quaternion(axis_rotation(axis)),
                    (diameter, diameter, length),
                    colour,
                )
            )
        for end in (zone.start, zone.end):
            markers.append(
                SceneMarker(
                    "no_go_zones", len(markers), "sphere", _point(end), scale=(diameter,) * 3, colour=colour
                )
            )
    return markers


def _line(namespace: str, points: np.ndarray, width: float) -> SceneMarker:
    return SceneMarker(
        namespace,
        0,
        "line_strip",
        scale=(width, 0.0, 0.0),
        colour=COLOURS[namespace],
        points=tuple(_point(p) for p in np.asarray(points, dtype=float)),
    )


def view_cone_markers(
    apex: np.ndarray, axis: np.ndarray, half_angle: float, length: float
) -> list[SceneMarker]:
    """The arthroscope's view cone: apex at the scope tip (3,) m, `axis` (3,), half angle rad
    (field of view / 2), drawn `length` m deep: its surface (TRIANGLE_LIST) and rim (LINE_STRIP)."""
    if not (np.isfinite(half_angle) and 0.0 < half_angle < np.pi / 2):
        raise ValueError(f"view cone half angle must be in (0, pi/2) rad, got {half_angle!r}")
    if not (np.isfinite(length) and length > 0.0):
        raise ValueError(f"view cone length must be > 0 m, got {length!r}")
    rotation = axis_rotation(axis)
    apex = np.asarray(apex, dtype=float)
    radius = length * np.tan(half_angle)
    angles = np.linspace(0.0, 2.0 * np.pi, CONE_SEGMENTS + 1)
    rim = (
        apex
        + (
            rotation
            @ np.vstack([radius * np.cos(angles), radius * np.sin(angles), np.full_like(angles, length)])
        ).T
    )
    triangles = tuple(_point(p) for k in range(CONE_SEGMENTS) for p in (apex, rim[k], rim[k + 1]))
    colour = COLOURS["view_cone"]
    return [
        SceneMarker("view_cone", 0, "triangle_list", colour=colour, points=triangles),
        SceneMarker(
            "view_cone",
            1,
            "line_strip",
            scale=(0.001, 0.0, 0.0),
            colour=colour[:3] + (1.0,),
            points=tuple(_point(p) for p in rim),
        ),
    ]


def scene_markers(
    *,
    zones: Sequence[NoGoZone] = (),
    bone: tuple[np.ndarray, np.ndarray, BoneParameters] | None = None,
    planned_axis: tuple[np.ndarray, np.ndarray, float] | None = None,
    drilled_path: np.ndarray | None = None,
    tip: np.ndarray | None = None,
) -> list[SceneMarker]:
    """The scene's markers: `zones`; `bone` (entry (3,) m, direction (3,), bone model);
    `planned_axis` (entry (3,) m, direction (3,), depth m: drawn from 20 mm above the entry to
    the depth); `drilled_path` (N, 3) m, the tip's positions in bone so far (N >= 2 to draw);
    `tip` (3,) m, the live drill tip. What is None is not drawn."""
    markers = zone_markers(zones)
    if bone is not None:
        markers += bone_markers(*bone)
    if planned_axis is not None:
        entry, direction, depth = planned_axis
        entry, a = np.asarray(entry, dtype=float), np.asarray(direction, dtype=float)
        a = a / np.linalg.norm(a)
        markers.append(_line("planned_axis", np.array([entry - 0.02 * a, entry + depth * a]), 0.0015))
    if drilled_path is not None and len(drilled_path) >= 2:
        markers.append(_line("drilled_path", drilled_path, 0.002))
    if tip is not None:
        markers.append(
            SceneMarker("tip", 0, "sphere", _point(tip), scale=(0.004,) * 3, colour=COLOURS["tip"])
        )
    return markers


@dataclass
class DrilledPath:
    """The drill tip's positions in bone, as the node sees them: a point is kept once the tip is
    below the entry along the axis and at least `spacing` m from the last kept one (at most
    `max_points`, the oldest dropped), so a long run stays a light marker."""

    entry: np.ndarray  # (3,) m
    direction: np.ndarray  # (3,) unit
    spacing: float = 2e-4  # m
    max_points: int = 5000
    points: list[np.ndarray] = field(default_factory=list)

    def add(self, tip: np.ndarray) -> bool:
        """Keep `tip` (3,) m if it is in bone and far enough from the last point; True if kept."""
        tip = np.asarray(tip, dtype=float)
        if float((tip - self.entry) @ self.direction) <= 0.0:
            return False
        if self.points and float(np.linalg.norm(tip - self.points[-1])) < self.spacing:
            return False
        self.points.append(tip.copy())
        del self.points[: -self.max_points]
        return True

    def array(self) -> np.ndarray:
        """(N, 3) m, the kept points in order."""
        return np.array(self.points).reshape(-1, 3)
