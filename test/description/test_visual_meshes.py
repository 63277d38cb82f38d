"""The URDF's visual meshes (quirobot_description/meshes, made by visual_meshes.py).

The shipped STL files are read back with a plain binary-STL reader and checked as solids (closed,
outward), against the parameter file's dimensions written out here, and against the collision
primitive of the link that draws them; the files must be what the parameter file makes, byte for
byte; a parameter file whose mesh dimensions differ draws primitives instead.
"""

from __future__ import annotations

import math
import struct
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import yaml

from quirobot_description.parameters import DEFAULT_PARAMETER_FILE, ParameterError, load_parameters
from quirobot_description.stl import stl_bytes
from quirobot_description.urdf import TOOLS, robot_description
from quirobot_description.visual_meshes import BUILDERS, build_meshes, main

MESHES = Path(__file__).resolve().parents[2] / "quirobot_description" / "meshes"
NAMES = sorted(path.stem for path in MESHES.glob("*.stl"))


def _read(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(triangles (F, 3, 3), stored normals (F, 3)) of MESHES/NAME.stl, read field by field."""
    data = (MESHES / f"{name}.stl").read_bytes()
    (count,) = struct.unpack_from("<I", data, 80)
    assert len(data) == 84 + 50 * count
    rows = [struct.unpack_from("<12fH", data, 84 + 50 * i) for i in range(count)]
    values = np.array([row[:12] for row in rows], dtype=float)
    return values[:, 3:].reshape(-1, 3, 3), values[:, :3]


def _indexed(triangles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    vertices, index = np.unique(triangles.reshape(-1, 3), axis=0, return_inverse=True)
    return vertices, index.reshape(-1, 3)


def _components(faces: np.ndarray) -> list[np.ndarray]:
    """Face indices of each shell (faces joined through shared vertices)."""
    parent = list(range(faces.max() + 1))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b, c in faces:
        parent[root(b)] = root(a)
        parent[root(c)] = root(a)
    roots = np.array([root(int(face[0])) for face in faces])
    return [np.flatnonzero(roots == r) for r in np.unique(roots)]


def test_the_shipped_meshes_are_what_the_parameter_file_makes():
    assert sorted(BUILDERS) == NAMES
    for name, triangles in build_meshes().items():
        assert (MESHES / f"{name}.stl").read_bytes() == stl_bytes(triangles), (
            f"{name}.stl is stale: python -m quirobot_description.visual_meshes --write"
        )
    assert main([]) == 0


@pytest.mark.parametrize("name", NAMES)
def test_each_mesh_is_closed_with_outward_normals(name):
    triangles, normals = _read(name)
    vertices, faces = _indexed(triangles)
    directed = Counter(
        (int(f[i]), int(f[(i + 1) % 3])) for f in faces for i in range(3)
    )  # fmt: skip
    undirected = Counter(tuple(sorted(edge)) for edge in directed.elements())
    assert set(undirected.values()) == {2}, "an edge not shared by exactly two triangles"
    # each edge once in each direction: neighbouring triangles wind the same way
    assert all(count == 1 and (b, a) in directed for (a, b), count in directed.items())
    cross = np.cross(triangles[:, 1] - triangles[:, 0], triangles[:, 2] - triangles[:, 0])
    area = np.linalg.norm(cross, axis=1)
    assert area.min() > 1e-12, "a degenerate triangle"
    # the stored normal is the winding's (right-hand rule), and every shell encloses a positive
    # volume: the winding, hence the normal, points out
    assert np.all(np.einsum("ij,ij->i", normals, cross / area[:, None]) > 0.999)
    shells = _components(faces)
    for shell in shells:
        a, b, c = (triangles[shell, i] for i in range(3))
        assert np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0 > 0.0
    assert len(shells) == (2 if name == "arthroscope" else 1)  # the scope and its light post


def _box(low, high):
    return np.array(low, dtype=float), np.array(high, dtype=float)


def test_each_bounding_box_is_the_part_from_the_parameter_file(parameters):
    g = parameters.structure.guide_section
    margin = parameters.structure.guide_margin
    x, y = parameters.joint("gantry_x"), parameters.joint("gantry_y")
    lx = (x.upper + margin) - (x.lower - margin) + g  # the x guides run over the y beams' ends
    ly = (y.upper + margin) - (y.lower - margin) - g  # the y beams fit between the x guides
    h = parameters.structure.ceiling_height
    bridge = parameters.link("x_carriage")
    r4, l4 = parameters.link("wrist_yaw_link").radius, parameters.l4
    r5, l5 = parameters.link("wrist_pitch_link").radius, parameters.l5
    chuck, moving = parameters.drill.bit_radius, parameters.drill.bit_length
    scope, meshes = parameters.arthroscope, parameters.meshes
    expected = {
        "structure_guide_x": _box([-lx / 2, -g / 2, -g / 2], [lx / 2, g / 2, g / 2]),
        "structure_guide_y": _box([-g / 2, -ly / 2, -g / 2], [g / 2, ly / 2, g / 2]),
        "structure_leg": _box([-g / 2, -g / 2, -h / 2], [g / 2, g / 2, h / 2]),
        "x_carriage": _box(bridge.origin - bridge.size / 2, bridge.origin + bridge.size / 2),
        "wrist_yaw_link": _box([-r4, -r4, -l4], [r4, r4, 0.0]),
        "wrist_pitch_link": _box([0.0, -r5, -r5], [l5, r5, r5]),
        "drill_bit": _box([-chuck, -chuck, -moving], [chuck, chuck, 0.0]),
        "arthroscope": _box(
            [-meshes.scope_head_radius, -meshes.scope_head_radius, 0.0],
            [
                meshes.scope_head_radius + meshes.light_post_length,
                meshes.scope_head_radius,
                scope.scope_length,
            ],
        ),
    }
    assert sorted(expected) == NAMES
    for name, (low, high) in expected.items():
        points = _read(name)[0].reshape(-1, 3)
        # float32 in the file: within 1e-7 m of the part
        assert np.allclose(points.min(axis=0), low, atol=1e-7), name
        assert np.allclose(points.max(axis=0), high, atol=1e-7), name


def _transform(element) -> np.ndarray:
    """(4, 4) of an <origin> (rpy fixed axes x, y, z)."""
    origin = element.find("origin")
    xyz = [float(v) for v in origin.get("xyz", "0 0 0").split()]
    roll, pitch, yaw = (float(v) for v in origin.get("rpy", "0 0 0").split())
    cr, sr, cp, sp, cy, sy = (
        math.cos(roll),
        math.sin(roll),
        math.cos(pitch),
        math.sin(pitch),
        math.cos(yaw),
        math.sin(yaw),
    )
    rotation = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]]) @ np.array(
        [[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]]
    )
    rotation = rotation @ np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    transform = np.eye(4)
    transform[:3, :3], transform[:3, 3] = rotation, xyz
    return transform


def _in_collision_frame(visual, collision) -> tuple[np.ndarray, str]:
    """The visual mesh's vertices in its collision primitive's frame, and the mesh's name."""
    filename = visual.find("geometry/mesh").get("filename")
    name = filename.rsplit("/", 1)[1].removesuffix(".stl")
    points = _read(name)[0].reshape(-1, 3)
    to_link = _transform(visual)
    to_primitive = np.linalg.inv(_transform(collision)) @ to_link
    return points @ to_primitive[:3, :3].T + to_primitive[:3, 3], name


@pytest.mark.parametrize("tool", TOOLS)
def test_each_mesh_fits_its_collision_primitive(parameters, tool):
    """The collision primitives stay the part's envelope: each mesh lies within its link's
    primitive and fills its bounding box, except the arthroscope's coupler and light post, which
    stand out of the 4 mm rod (the collision rod is the sheath that enters the portal)."""
    root = ET.fromstring(robot_description(tool))
    drawn = set()
    for link in root.findall("link"):
        for visual, collision in zip(link.findall("visual"), link.findall("collision"), strict=True):
            if visual.find("geometry/mesh") is None:
                continue
            points, name = _in_collision_frame(visual, collision)
            drawn.add(name)
            shape = collision.find("geometry")[0]
            if shape.tag == "box":
                half = np.array([float(v) for v in shape.get("size").split()]) / 2
                assert np.all(np.abs(points) <= half + 1e-7), name
                assert np.allclose(np.abs(points).max(axis=0), half, atol=1e-7), name
                continue
            radius, length = float(shape.get("radius")), float(shape.get("length"))
            radial, axial = np.hypot(points[:, 0], points[:, 1]), points[:, 2]
            assert np.allclose([axial.min(), axial.max()], [-length / 2, length / 2], atol=1e-7), name
            if name == "arthroscope":
                head = parameters.meshes.scope_head_length
                sheath = axial > -length / 2 + head + 1e-6  # beyond the coupler: the rod itself
                # on the rod's surface, or its tip's centre on the axis
                assert np.all(np.isclose(radial[sheath], radius, atol=1e-7) | (radial[sheath] < 1e-9))
                assert radial.max() > radius
            else:
                assert radial.max() == pytest.approx(radius, abs=1e-7), name
    assert drawn == {"structure_guide_x", "structure_guide_y", "structure_leg", "x_carriage",
                     "wrist_yaw_link", "wrist_pitch_link"} | ({"drill_bit"} if tool == "drill" else set()) | (
        {"arthroscope"} if tool == "arthroscope" else set()
    )  # fmt: skip


def test_the_fork_clears_link5_and_the_bit_ends_at_the_tip(parameters):
    """Link 5 (radius r5) swings inside the fork's slot; the twist drill (realistic_plant's bit
    diameter) ends in a point at the drill_tip frame (the drill_bit link's origin)."""
    fork = _read("wrist_yaw_link")[0].reshape(-1, 3)
    r5, l4, meshes = parameters.link("wrist_pitch_link").radius, parameters.l4, parameters.meshes
    in_slot_height = fork[:, 2] < -(l4 - meshes.fork_length) - 1e-6  # float32 in the file
    assert np.abs(fork[in_slot_height, 1]).min() == pytest.approx(r5 + meshes.fork_clearance, abs=1e-7)
    housing = _read("wrist_pitch_link")[0].reshape(-1, 3)
    assert np.hypot(housing[:, 1], housing[:, 2]).max() <= r5 + 1e-7
    bit = _read("drill_bit")[0].reshape(-1, 3)
    free = bit[:, 2] > -parameters.plant.bit_free_length + 1e-6
    assert np.hypot(bit[free, 0], bit[free, 1]).max() == pytest.approx(
        parameters.plant.bit_diameter / 2, abs=1e-7
    )
    assert bit[:, 2].max() == 0.0 and np.all(bit[bit[:, 2] == 0.0][:, :2] == 0.0)  # one point, on the axis


def _edited(tmp_path, section, key, value) -> Path:
    raw = yaml.safe_load(DEFAULT_PARAMETER_FILE.read_text())
    raw[section][key]["value"] = value
    path = tmp_path / "edited.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def test_other_mesh_dimensions_draw_the_primitives(tmp_path):
    """The shipped files are the shipped parameter file's parts: a file that changes what they are
    made of draws every link with its primitive; one that changes something else keeps them."""
    shipped = robot_description("drill")
    assert shipped.count("<mesh ") == 16  # 12 beams, bridge, links 4 and 5, drill
    for section, key, value in (("meshes", "fork_length", 0.12), ("structure", "guide_section", 0.09)):
        text = robot_description("drill", parameter_file=_edited(tmp_path, section, key, value))
        root = ET.fromstring(text)
        assert "<mesh " not in text
        assert len(root.findall("link/visual")) == len(ET.fromstring(shipped).findall("link/visual"))
    raw = yaml.safe_load(DEFAULT_PARAMETER_FILE.read_text())
    raw["motors"]["gantry_motor"]["resistance"]["value"] *= 1.1
    other = tmp_path / "motor.yaml"
    other.write_text(yaml.safe_dump(raw, sort_keys=False))
    assert robot_description("drill", parameter_file=other).count("<mesh ") == 16


@pytest.mark.parametrize(("value", "message"), [(50, "multiple of 4"), (48.5, "whole number")])
def test_circle_segments_must_be_a_whole_multiple_of_four(tmp_path, value, message):
    with pytest.raises(ParameterError, match=rf"meshes\.circle_segments: .*{message}"):
        load_parameters(_edited(tmp_path, "meshes", "circle_segments", value))
