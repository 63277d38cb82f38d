"""A URDF's elements read as numbers: the parsed tree, origins, shapes, inertials, moving links.

The parsing half of the staged check (validation.py): each reader raises ValueError naming the
element and the bad text, which the stages turn into one-line problems. render.py draws with
the same readers, so what is drawn is what is checked.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np

from quirobot_description.frames import rpy_matrix
from quirobot_description.inertia import box_inertia, cylinder_inertia, sphere_inertia

MOVABLE = ("revolute", "prismatic", "continuous", "planar", "floating")
JOINT_TYPES = (*MOVABLE, "fixed")
#: Absolute tolerance (m) when testing that a centre of mass lies inside a shape.
INSIDE_TOL = 1e-9


@dataclass
class ParsedUrdf:
    """The parsed URDF: elements by name."""

    root: ET.Element
    links: dict[str, ET.Element]
    joints: dict[str, ET.Element]


def parse_urdf(text: str) -> ParsedUrdf:
    root = ET.fromstring(text)
    if root.tag != "robot":
        raise ValueError(f"root element is <{root.tag}>, not <robot>")
    if not root.get("name"):
        raise ValueError("<robot> has no name")
    return ParsedUrdf(root=root, links={}, joints={})


def parse_numbers(text: str | None, count: int, what: str) -> np.ndarray:
    try:
        values = np.array([float(v) for v in (text or "").split()])
    except ValueError as error:
        raise ValueError(f"{what} is not numeric: {text!r}") from error
    if values.shape != (count,) or not np.all(np.isfinite(values)):
        raise ValueError(f"{what} needs {count} finite numbers, got {text!r}")
    return values


def parse_number(element: ET.Element, attribute: str, what: str, default: float | None = None) -> float:
    text = element.get(attribute)
    if text is None:
        if default is None:
            raise ValueError(f"{what} has no {attribute}")
        return default
    return float(parse_numbers(text, 1, f"{what} {attribute}")[0])


def origin_transform(element: ET.Element | None, what: str) -> np.ndarray:
    """(4, 4) transform of an element's <origin> child (identity when absent)."""
    transform = np.eye(4)
    origin = element.find("origin") if element is not None else None
    if origin is None:
        return transform
    transform[:3, :3] = rpy_matrix(*parse_numbers(origin.get("rpy", "0 0 0"), 3, f"{what} origin rpy"))
    transform[:3, 3] = parse_numbers(origin.get("xyz", "0 0 0"), 3, f"{what} origin xyz")
    return transform


def geometry_shape(element: ET.Element, what: str) -> tuple[str, dict[str, float | np.ndarray | str]]:
    """The single shape of a <visual>/<collision>: (kind, dimensions); raises ValueError if bad."""
    geometry = element.find("geometry")
    if geometry is None or len(list(geometry)) != 1:
        raise ValueError(f"{what} needs exactly one shape inside <geometry>")
    shape = list(geometry)[0]
    if shape.tag == "box":
        size = parse_numbers(shape.get("size"), 3, f"{what} box size")
        if np.any(size <= 0):
            raise ValueError(f"{what} box size must be > 0, got {shape.get('size')}")
        return "box", {"size": size}
    if shape.tag == "cylinder":
        radius, length = (
            parse_number(shape, "radius", f"{what} cylinder"),
            parse_number(shape, "length", f"{what} cylinder"),
        )
        if radius <= 0 or length <= 0:
            raise ValueError(f"{what} cylinder radius and length must be > 0, got {radius} and {length} m")
        return "cylinder", {"radius": radius, "length": length}
    if shape.tag == "sphere":
        radius = parse_number(shape, "radius", f"{what} sphere")
        if radius <= 0:
            raise ValueError(f"{what} sphere radius must be > 0, got {radius} m")
        return "sphere", {"radius": radius}
    if shape.tag == "mesh":
        if not shape.get("filename"):
            raise ValueError(f"{what} mesh has no filename")
        return "mesh", {"filename": shape.get("filename", "")}
    raise ValueError(f"{what} has an unknown shape <{shape.tag}>")


def shape_contains(point: np.ndarray, kind: str, dims: dict) -> bool | None:
    """Whether `point` (3,), in the shape's own frame, lies inside it (None: cannot tell, mesh)."""
    if kind == "box":
        return bool(np.all(np.abs(point) <= dims["size"] / 2 + INSIDE_TOL))
    if kind == "cylinder":
        return bool(
            math.hypot(point[0], point[1]) <= dims["radius"] + INSIDE_TOL
            and abs(point[2]) <= dims["length"] / 2 + INSIDE_TOL
        )
    if kind == "sphere":
        return bool(np.linalg.norm(point) <= dims["radius"] + INSIDE_TOL)
    return None


def shape_inertia(kind: str, dims: dict, mass: float) -> np.ndarray | None:
    """(3, 3) inertia of a solid shape in its own axes (None for a mesh)."""
    if kind == "box":
        return box_inertia(mass, dims["size"])
    if kind == "cylinder":
        return cylinder_inertia(mass, dims["radius"], dims["length"], "z")
    if kind == "sphere":
        return sphere_inertia(mass, dims["radius"])
    return None


def shape_volume(kind: str, dims: dict) -> float | None:
    """Volume in m^3 of a solid shape (None for a mesh)."""
    if kind == "box":
        return float(np.prod(dims["size"]))
    if kind == "cylinder":
        return math.pi * dims["radius"] ** 2 * dims["length"]
    if kind == "sphere":
        return 4.0 / 3.0 * math.pi * dims["radius"] ** 3
    return None


def is_massless(link: ET.Element) -> bool:
    """Whether the link's <inertial> is all zero: mass 0 and inertia 0 (export's frame links)."""
    try:
        mass, _, inertia = link_inertia(link, "link")
    except ValueError:
        return False  # malformed: the inertial stage names it
    return mass == 0.0 and not inertia.any()


def moving_links(robot: ParsedUrdf) -> list[str]:
    """Links a joint moves that carry a body: children of movable joints, and links with an
    <inertial> or geometry fixed to a moving link. Pure frames (child of a fixed joint, no visual,
    no collision, no <inertial> or an all-zero one, as export writes for PyBullet) such as tool0
    are excluded."""
    moving: set[str] = set()
    children: dict[str, list[tuple[str, str]]] = {}
    for joint in robot.joints.values():
        parent, child = joint.find("parent"), joint.find("child")
        if parent is not None and child is not None:
            children.setdefault(parent.get("link", ""), []).append(
                (child.get("link", ""), joint.get("type", ""))
            )

    def walk(link: str, moved: bool, depth: int = 0) -> None:
        if depth > len(robot.links):
            return
        for child, kind in children.get(link, []):
            child_moved = moved or kind in MOVABLE
            if child_moved:
                moving.add(child)
            walk(child, child_moved, depth + 1)

    roots = [name for name in robot.links if all(c != name for cs in children.values() for c, _ in cs)]
    for root in roots:
        walk(root, False)
    result = []
    for name in robot.links:
        if name not in moving:
            continue
        element = robot.links[name]
        is_child_of_movable = any(
            j.find("child") is not None and j.find("child").get("link") == name and j.get("type") in MOVABLE
            for j in robot.joints.values()
        )
        has_body = any(element.find(tag) is not None for tag in ("visual", "collision")) or (
            element.find("inertial") is not None and not is_massless(element)
        )
        if is_child_of_movable or has_body:
            result.append(name)
    return result


def link_inertia(link: ET.Element, what: str) -> tuple[float, np.ndarray, np.ndarray]:
    """(mass kg, centre of mass (3,) m in link frame, inertia (3, 3) kg*m^2 about it, link axes)."""
    inertial = link.find("inertial")
    if inertial is None:
        raise ValueError(f"{what} has no <inertial>")
    mass_element, inertia_element = inertial.find("mass"), inertial.find("inertia")
    if mass_element is None or inertia_element is None:
        raise ValueError(f"{what} <inertial> needs <mass> and <inertia>")
    mass = parse_number(mass_element, "value", f"{what} mass")
    i = {
        key: parse_number(inertia_element, key, f"{what} inertia")
        for key in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
    }
    tensor = np.array(
        [[i["ixx"], i["ixy"], i["ixz"]], [i["ixy"], i["iyy"], i["iyz"]], [i["ixz"], i["iyz"], i["izz"]]]
    )
    frame = origin_transform(inertial, f"{what} inertial")
    rotation = frame[:3, :3]
    return mass, frame[:3, 3], rotation @ tensor @ rotation.T
