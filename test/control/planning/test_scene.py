"""The scene's markers (planning.scene), checked against the shipped task's geometry computed
here: zones where the task file puts them, the bone's slabs stacked down the axis, the view cone's
rim at the field of view's half angle, the drilled path only in bone."""

from __future__ import annotations

import math

import numpy as np
import pytest

from quirobot_control.axes.virtual_fixtures import NoGoZone
from quirobot_control.planning.scene import DrilledPath, scene_markers, view_cone_markers
from quirobot_control.planning.tasks import load_task


def _z_axis(quaternion) -> np.ndarray:
    """The marker's z axis in world from its quaternion (x, y, z, w), written out here."""
    x, y, z, w = quaternion
    return np.array([2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)])


def test_zones_bone_axis_and_tip_of_the_shipped_incision():
    task = load_task("incision")
    tip = task.entry + 0.01 * task.direction
    markers = scene_markers(
        zones=task.no_go_zones,
        bone=(task.entry, task.direction, task.bone),
        planned_axis=(task.entry, task.direction, task.depth),
        tip=tip,
    )
    by_namespace: dict[str, list] = {}
    for marker in markers:
        by_namespace.setdefault(marker.namespace, []).append(marker)
    assert set(by_namespace) == {"no_go_zones", "bone", "planned_axis", "tip"}
    # Every marker of a namespace has its own id (RViz replaces a marker of the same ns and id).
    for group in by_namespace.values():
        assert len({m.id for m in group}) == len(group)
    boxes = [zone for zone in task.no_go_zones if zone.shape == "box"]
    cubes = [m for m in by_namespace["no_go_zones"] if m.type == "cube"]
    assert [m.position for m in cubes] == [pytest.approx(tuple(z.center)) for z in boxes]
    assert [m.scale for m in cubes] == [pytest.approx(tuple(z.size)) for z in boxes]
    # The slabs: one per layer, normal along the axis, stacked from the entry without a gap.
    slabs = by_namespace["bone"]
    assert len(slabs) == len(task.bone.layers)
    depths = [float((np.array(m.position) - task.entry) @ task.direction) for m in slabs]
    thickness = [layer.thickness for layer in task.bone.layers]
    assert depths == pytest.approx([sum(thickness[:k]) + thickness[k] / 2 for k in range(len(thickness))])
    for slab in slabs:
        assert _z_axis(slab.orientation) == pytest.approx(task.direction, abs=1e-9)
    (axis,) = by_namespace["planned_axis"]
    assert axis.type_number == 4  # LINE_STRIP
    assert axis.points[-1] == pytest.approx(tuple(task.entry + task.depth * task.direction))
    (sphere,) = by_namespace["tip"]
    assert sphere.position == pytest.approx(tuple(tip))


def test_a_capsule_zone_is_a_cylinder_along_its_segment_with_round_ends():
    zone = NoGoZone.capsule("nerve", [0.0, 0.0, 0.0], [0.0, 0.3, 0.4], 0.01)
    cylinder, start, end = scene_markers(zones=[zone])
    assert cylinder.type == "cylinder" and cylinder.scale == pytest.approx((0.02, 0.02, 0.5))
    assert _z_axis(cylinder.orientation) == pytest.approx([0.0, 0.6, 0.8])
    assert cylinder.position == pytest.approx((0.0, 0.15, 0.2))
    assert (start.position, end.position) == ((0.0, 0.0, 0.0), pytest.approx((0.0, 0.3, 0.4)))


def test_the_view_cone_rim_is_at_half_the_field_of_view():
    apex, axis = np.array([1.0, 0.8, -1.3]), np.array([0.0, 0.5, -math.sqrt(3) / 2])
    field_of_view = math.radians(70.0)
    surface, rim = view_cone_markers(apex, axis, field_of_view / 2, 0.03)
    assert surface.type_number == 11 and len(surface.points) % 3 == 0  # TRIANGLE_LIST
    for point in rim.points:
        ray = np.array(point) - apex
        angle = math.acos(ray @ axis / np.linalg.norm(ray))
        assert angle == pytest.approx(field_of_view / 2)
        assert ray @ axis == pytest.approx(0.03)
    with pytest.raises(ValueError, match="view cone half angle must be in"):
        view_cone_markers(apex, axis, 2.0, 0.03)


def test_the_drilled_path_keeps_points_in_bone_only_and_spaced():
    path = DrilledPath(np.zeros(3), np.array([0.0, 0.0, -1.0]), spacing=1e-3)
    assert not path.add(np.array([0.0, 0.0, 0.001]))  # above the entry: not in bone
    kept = [path.add(np.array([0.0, 0.0, -z])) for z in np.arange(1, 21) * 0.25e-3]
    assert sum(kept) == 5  # every 1 mm of 5 mm
    (line,) = scene_markers(drilled_path=path.array())
    assert line.namespace == "drilled_path" and len(line.points) == 5
    assert scene_markers(drilled_path=path.array()[:1]) == []  # one point draws no line
