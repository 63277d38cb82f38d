"""Picture of the robot drawn from its URDF (matplotlib 3D, off-screen Agg canvas).

Link placements come from pinocchio (the URDF's own kinematics), shapes and colours from the
URDF's <visual> elements (boxes, cylinders and STL meshes): what is drawn is what the URDF says.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from quirobot_description.joint_names import FEED_JOINT, JOINT_NAMES
from quirobot_description.stl import read_stl
from quirobot_description.urdf_elements import geometry_shape, origin_transform
from quirobot_description.visual_meshes import resolve_mesh

#: Light direction (world, unit) for face shading.
LIGHT = np.array([-0.35, -0.55, 0.76])
#: Longest tile edge (m): big faces are cut into tiles so matplotlib's depth sort works.
TILE = 0.12
CYLINDER_SIDES = 32
#: Half the edge (m) of the close-up cube around the wrist.
CLOSE_UP_HALF_SIZE = 0.3


def representative_pose(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """(5,) a working pose inside the limits: carriage off-centre, ram half down, drill tilted
    down toward a patient (theta5 = 50 deg), turned 30 deg about the vertical."""
    fraction = np.array([0.6, 0.4, 0.55, 0.0, 0.0])
    q = lower + fraction * (upper - lower)
    q[3] = math.radians(30.0)
    q[4] = math.radians(50.0)
    return np.clip(q, lower, upper)


def _box_faces(size: np.ndarray) -> list[np.ndarray]:
    """Six (4, 3) quads of a box centred at the origin."""
    h = size / 2
    faces = []
    for axis in range(3):
        u, v = (axis + 1) % 3, (axis + 2) % 3
        for sign in (-1, 1):
            corners = []
            for a, b in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
                point = np.zeros(3)
                point[axis], point[u], point[v] = sign * h[axis], a * h[u], b * h[v]
                corners.append(point)
            faces.append(np.array(corners))
    return faces


def _cylinder_faces(radius: float, length: float) -> list[np.ndarray]:
    """(4, 3) quads of a z-axis cylinder centred at the origin: sides, and caps as fans of
    triangles written as quads (last corner repeated). Every polygon has 4 corners: matplotlib
    pads ragged polygons with masked, uninitialised values that overflow in its projection."""
    angles = np.linspace(0.0, 2 * math.pi, CYLINDER_SIDES + 1)
    ring = np.stack([radius * np.cos(angles), radius * np.sin(angles)], axis=1)
    faces = []
    for i in range(CYLINDER_SIDES):
        (x0, y0), (x1, y1) = ring[i], ring[i + 1]
        faces.append(
            np.array(
                [[x0, y0, -length / 2], [x1, y1, -length / 2], [x1, y1, length / 2], [x0, y0, length / 2]]
            )
        )
    for z in (-length / 2, length / 2):
        for i in range(CYLINDER_SIDES):
            (x0, y0), (x1, y1) = ring[i], ring[i + 1]
            faces.append(np.array([[0.0, 0.0, z], [x0, y0, z], [x1, y1, z], [x1, y1, z]]))
    return faces


def _mesh_faces(filename: str) -> list[np.ndarray]:
    """(4, 3) polygons of an STL mesh: each triangle cut, from the corner facing its shortest
    edge, into pieces no longer than TILE (the last corner repeated where a piece is a triangle)."""
    faces = []
    for triangle in read_stl(resolve_mesh(filename))[0]:
        shortest = int(
            np.argmin([np.linalg.norm(triangle[(i + 2) % 3] - triangle[(i + 1) % 3]) for i in range(3)])
        )
        apex, b, c = triangle[shortest], triangle[(shortest + 1) % 3], triangle[(shortest + 2) % 3]
        pieces = max(1, math.ceil(max(np.linalg.norm(b - apex), np.linalg.norm(c - apex)) / TILE))
        for i in range(pieces):
            s0, s1 = i / pieces, (i + 1) / pieces
            near_b, far_b = apex + s0 * (b - apex), apex + s1 * (b - apex)
            near_c, far_c = apex + s0 * (c - apex), apex + s1 * (c - apex)
            faces.append(np.array([near_b, far_b, far_c, near_c if i else far_c]))
    return faces


def _tiles(face: np.ndarray) -> list[np.ndarray]:
    """Cut a quad into tiles no longer than TILE per side."""
    nu = max(1, math.ceil(np.linalg.norm(face[1] - face[0]) / TILE))
    nv = max(1, math.ceil(np.linalg.norm(face[3] - face[0]) / TILE))
    if nu == nv == 1:
        return [face]

    def at(s: float, t: float) -> np.ndarray:
        return (1 - s) * (1 - t) * face[0] + s * (1 - t) * face[1] + s * t * face[2] + (1 - s) * t * face[3]

    tiles = []
    for i in range(nu):
        for j in range(nv):
            s0, s1, t0, t1 = i / nu, (i + 1) / nu, j / nv, (j + 1) / nv
            tiles.append(np.array([at(s0, t0), at(s1, t0), at(s1, t1), at(s0, t1)]))
    return tiles


def _colour(visual: ET.Element, materials: dict[str, np.ndarray]) -> np.ndarray:
    material = visual.find("material")
    if material is not None:
        colour = material.find("color")
        if colour is not None:
            return np.array([float(v) for v in colour.get("rgba", "0.7 0.7 0.7 1").split()])
        if material.get("name") in materials:
            return materials[material.get("name")]
    return np.array([0.7, 0.7, 0.7, 1.0])


def link_placements(text: str, q: np.ndarray, feed: float | None = None) -> dict[str, np.ndarray]:
    """(4, 4) world placement of every link of URDF `text` at arm coordinates q (5,), via pinocchio."""
    import pinocchio as pin

    model = pin.buildModelFromXML(text)
    data = model.createData()
    configuration = pin.neutral(model)
    for name, value in zip(JOINT_NAMES, q, strict=True):
        configuration[model.joints[model.getJointId(name)].idx_q] = value
    if feed is not None and model.existJointName(FEED_JOINT):
        configuration[model.joints[model.getJointId(FEED_JOINT)].idx_q] = feed
    pin.framesForwardKinematics(model, data, configuration)
    return {
        frame.name: data.oMf[index].homogeneous.copy()
        for index, frame in enumerate(model.frames)
        if frame.type == pin.FrameType.BODY
    }


def render_png(
    text: str,
    output: str | Path,
    *,
    q: np.ndarray | list[float] | None = None,
    feed: float | None = None,
    dpi: int = 150,
    elevation: float = 24.0,
    azimuth: float = -58.0,
) -> Path:
    """Draw URDF `text` at arm pose q (default: representative_pose) into the PNG `output`."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    root = ET.fromstring(text)
    joints = {joint.get("name"): joint for joint in root.findall("joint")}
    lower = np.array([float(joints[n].find("limit").get("lower")) for n in JOINT_NAMES])
    upper = np.array([float(joints[n].find("limit").get("upper")) for n in JOINT_NAMES])
    q = representative_pose(lower, upper) if q is None else np.asarray(q, dtype=float)
    if q.shape != (5,) or not np.all(np.isfinite(q)):
        raise ValueError(f"q must be 5 finite numbers (d1, d2, d3, theta4, theta5), got {q!r}")
    if feed is None and FEED_JOINT in joints:
        limit = joints[FEED_JOINT].find("limit")
        feed = 0.5 * (float(limit.get("lower")) + float(limit.get("upper")))
    placements = link_placements(text, q, feed)
    materials = {}
    for material in root.findall("material"):
        colour = material.find("color")
        if colour is not None:
            materials[material.get("name")] = np.array([float(v) for v in colour.get("rgba").split()])

    polygons, colours = [], []
    for link in root.findall("link"):
        placement = placements.get(link.get("name"))
        if placement is None:
            continue
        for visual in link.findall("visual"):
            what = f"link {link.get('name')!r} visual"
            kind, dims = geometry_shape(visual, what)
            if kind == "box":
                faces = _box_faces(dims["size"])
            elif kind == "cylinder":
                faces = _cylinder_faces(dims["radius"], dims["length"])
            elif kind == "mesh":
                faces = _mesh_faces(str(dims["filename"]))
            else:
                continue  # spheres are not drawn
            transform = placement @ origin_transform(visual, what)
            rgba = _colour(visual, materials)
            for face in faces:
                world = face @ transform[:3, :3].T + transform[:3, 3]
                normal = np.cross(world[1] - world[0], world[2] - world[0])
                normal /= np.linalg.norm(normal) or 1.0
                shade = 0.45 + 0.55 * abs(float(normal @ LIGHT))
                for tile in _tiles(world):
                    polygons.append(tile)
                    colours.append((*np.clip(rgba[:3] * shade, 0, 1), rgba[3]))

    pose = ", ".join(f"{v:.2f}" for v in q)
    tool = "drill" if FEED_JOINT in joints else ("arthroscope" if "camera_link" in placements else "no tool")
    figure = Figure(figsize=(13, 6.5), dpi=dpi)
    FigureCanvasAgg(figure)
    figure.suptitle(f"QUIROBOT with {tool}, q = ({pose}) (m, m, m, rad, rad)", fontsize=12)
    points = np.concatenate(polygons)
    whole = figure.add_subplot(1, 2, 1, projection="3d")
    _draw(whole, polygons, colours, points.min(axis=0), points.max(axis=0), elevation, azimuth)
    whole.set_title("gantry (base_link fixed to the ceiling)", fontsize=10)
    tool0 = placements.get("tool0")
    wrist = placements.get("wrist_pitch_link")
    if tool0 is not None and wrist is not None:
        centre = 0.5 * (tool0[:3, 3] + wrist[:3, 3])
        half = CLOSE_UP_HALF_SIZE
        close = figure.add_subplot(1, 2, 2, projection="3d")
        inside = [i for i, polygon in enumerate(polygons) if np.all(np.abs(polygon - centre) <= half)]
        _draw(
            close,
            [polygons[i] for i in inside],
            [colours[i] for i in inside],
            centre - half,
            centre + half,
            elevation,
            azimuth,
        )
        _draw_frame(close, tool0, 0.12)
        close.set_title("wrist and tool; tool0 axes x red, y green, z = approach blue", fontsize=10)
    _draw_frame(whole, tool0, 0.25)
    figure.subplots_adjust(left=0.0, right=1.0, bottom=0.02, top=0.92, wspace=0.0)
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(output, dpi=dpi)
    return output


def _draw(axes, polygons, colours, low, high, elevation: float, azimuth: float) -> None:
    """Shaded polygons in a 3D axes with equal scale on x, y, z between corners low and high."""
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    # autolim=False: the limits are set just below; matplotlib's own autoscaling of a fresh 3D axes
    # overflows (inf - -inf) from the second figure of a process on and can end in NaN limits.
    collection = Poly3DCollection(polygons, facecolors=colours, edgecolors="none", linewidths=0)
    axes.add_collection3d(collection, autolim=False)
    axes.set_xlim(low[0], high[0])
    axes.set_ylim(low[1], high[1])
    axes.set_zlim(low[2], high[2])
    axes.set_box_aspect(high - low)
    axes.view_init(elev=elevation, azim=azimuth)
    axes.set_xlabel("x (m)")
    axes.set_ylabel("y (m)")
    axes.set_zlabel("z (m)")
    axes.tick_params(labelsize=7)


def _draw_frame(axes, placement: np.ndarray | None, length: float) -> None:
    """tool0's axes as red (x), green (y), blue (z = approach) arrows."""
    if placement is None:
        return
    origin = placement[:3, 3]
    for column, colour in zip(range(3), ("#d62728", "#2ca02c", "#1f77b4"), strict=True):
        direction = placement[:3, column] * length
        axes.quiver(*origin, *direction, color=colour, linewidth=2, arrow_length_ratio=0.2)
