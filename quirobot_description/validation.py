"""Staged validation of a URDF (`quirobot check`): each stage names what it found wrong.

Stages, in order: xml, urdf (semantics: one root, a tree, unique names, existing links, unit
axes, limits), visual, collision, inertial (mass > 0, inertia physical and consistent with the
geometry, centre of mass inside the geometry), kinematics (tool0 equals the report's closed-form T
on many random q), engines (pinocchio and MuJoCo load it and agree on joints and mass),
ros2_control (interfaces match the joints). A stage that cannot run because an earlier one failed
is SKIP. Every problem is one line: the link or joint and the number.

The report's closed-form T is passed in (`reference_fk`, e.g. quirobot_kinematics'
forward_kinematics on the model of the same parameters): the description does not import the
kinematics, which is built on it. Without it the kinematics stage is SKIP.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from quirobot_description.data_files import DataFileNotFoundError
from quirobot_description.frames import rpy_matrix
from quirobot_description.inertia import box_inertia, cylinder_inertia, inertia_problems, sphere_inertia
from quirobot_description.parameters import JOINT_NAMES, RobotParameters
from quirobot_description.visual_meshes import resolve_mesh

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"
STAGES = ("xml", "urdf", "visual", "collision", "inertial", "kinematics", "engines", "ros2_control")
MOVABLE = ("revolute", "prismatic", "continuous", "planar", "floating")
JOINT_TYPES = (*MOVABLE, "fixed")
#: Relative tolerance when comparing an inertia with the formula of its geometry.
INERTIA_RTOL = 1e-6
#: Absolute tolerance (m) when testing that a centre of mass lies inside a shape.
INSIDE_TOL = 1e-9
#: Tolerance on |axis| - 1.
AXIS_TOL = 1e-9
#: Tolerance (m, rad) on tool0 against the report's closed form.
KINEMATICS_TOL = 1e-9


@dataclass
class StageResult:
    """Outcome of one stage: status PASS, FAIL or SKIP, and one line per problem."""

    name: str
    status: str
    problems: list[str] = field(default_factory=list)
    note: str = ""

    @property
    def passed(self) -> bool:
        return self.status != FAIL


@dataclass
class _Robot:
    """The parsed URDF: elements by name."""

    root: ET.Element
    links: dict[str, ET.Element]
    joints: dict[str, ET.Element]


# --- small parsing helpers -----------------------------------------------------------------------


def _numbers(text: str | None, count: int, what: str) -> np.ndarray:
    try:
        values = np.array([float(v) for v in (text or "").split()])
    except ValueError as error:
        raise ValueError(f"{what} is not numeric: {text!r}") from error
    if values.shape != (count,) or not np.all(np.isfinite(values)):
        raise ValueError(f"{what} needs {count} finite numbers, got {text!r}")
    return values


def _number(element: ET.Element, attribute: str, what: str, default: float | None = None) -> float:
    text = element.get(attribute)
    if text is None:
        if default is None:
            raise ValueError(f"{what} has no {attribute}")
        return default
    return float(_numbers(text, 1, f"{what} {attribute}")[0])


def origin_transform(element: ET.Element | None, what: str) -> np.ndarray:
    """(4, 4) transform of an element's <origin> child (identity when absent)."""
    transform = np.eye(4)
    origin = element.find("origin") if element is not None else None
    if origin is None:
        return transform
    transform[:3, :3] = rpy_matrix(*_numbers(origin.get("rpy", "0 0 0"), 3, f"{what} origin rpy"))
    transform[:3, 3] = _numbers(origin.get("xyz", "0 0 0"), 3, f"{what} origin xyz")
    return transform


def geometry_shape(element: ET.Element, what: str) -> tuple[str, dict[str, float | np.ndarray | str]]:
    """The single shape of a <visual>/<collision>: (kind, dimensions); raises ValueError if bad."""
    geometry = element.find("geometry")
    if geometry is None or len(list(geometry)) != 1:
        raise ValueError(f"{what} needs exactly one shape inside <geometry>")
    shape = list(geometry)[0]
    if shape.tag == "box":
        size = _numbers(shape.get("size"), 3, f"{what} box size")
        if np.any(size <= 0):
            raise ValueError(f"{what} box size must be > 0, got {shape.get('size')}")
        return "box", {"size": size}
    if shape.tag == "cylinder":
        radius, length = (
            _number(shape, "radius", f"{what} cylinder"),
            _number(shape, "length", f"{what} cylinder"),
        )
        if radius <= 0 or length <= 0:
            raise ValueError(f"{what} cylinder radius and length must be > 0, got {radius} and {length} m")
        return "cylinder", {"radius": radius, "length": length}
    if shape.tag == "sphere":
        radius = _number(shape, "radius", f"{what} sphere")
        if radius <= 0:
            raise ValueError(f"{what} sphere radius must be > 0, got {radius} m")
        return "sphere", {"radius": radius}
    if shape.tag == "mesh":
        if not shape.get("filename"):
            raise ValueError(f"{what} mesh has no filename")
        return "mesh", {"filename": shape.get("filename", "")}
    raise ValueError(f"{what} has an unknown shape <{shape.tag}>")


def _inside(point: np.ndarray, kind: str, dims: dict) -> bool | None:
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


def _shape_inertia(kind: str, dims: dict, mass: float) -> np.ndarray | None:
    """(3, 3) inertia of a solid shape in its own axes (None for a mesh)."""
    if kind == "box":
        return box_inertia(mass, dims["size"])
    if kind == "cylinder":
        return cylinder_inertia(mass, dims["radius"], dims["length"], "z")
    if kind == "sphere":
        return sphere_inertia(mass, dims["radius"])
    return None


def _shape_volume(kind: str, dims: dict) -> float | None:
    """Volume in m^3 of a solid shape (None for a mesh)."""
    if kind == "box":
        return float(np.prod(dims["size"]))
    if kind == "cylinder":
        return math.pi * dims["radius"] ** 2 * dims["length"]
    if kind == "sphere":
        return 4.0 / 3.0 * math.pi * dims["radius"] ** 3
    return None


def _composite_problems(
    what: str, shapes: list, mass: float, com: np.ndarray, inertia: np.ndarray
) -> list[str]:
    """Why a link of several solid shapes (frame (4, 4), kind, dims) does not have their mass
    properties at one uniform density: centre of mass at their centroid, inertia their sum with
    the parallel-axis terms (a frame's centre of mass may lie in none of its parts)."""
    volumes = np.array([_shape_volume(kind, dims) for _, kind, dims in shapes])
    centres = np.array([frame[:3, 3] for frame, _, _ in shapes])
    centroid = volumes @ centres / volumes.sum()
    if not np.allclose(com, centroid, atol=INSIDE_TOL):
        return [
            f"{what}: centre of mass {np.round(com, 6).tolist()} m is not the centroid "
            f"{np.round(centroid, 6).tolist()} m of its {len(shapes)} shapes"
        ]
    expected = np.zeros((3, 3))
    for volume, (frame, kind, dims) in zip(volumes, shapes, strict=True):
        part = mass * volume / volumes.sum()
        offset = frame[:3, 3] - centroid
        rotation = frame[:3, :3]
        own = rotation @ _shape_inertia(kind, dims, part) @ rotation.T
        expected += own + part * (offset @ offset * np.eye(3) - np.outer(offset, offset))
    worst = np.unravel_index(np.argmax(np.abs(inertia - expected)), (3, 3))
    if np.abs(inertia - expected).max() > INERTIA_RTOL * float(np.max(np.abs(expected))):
        element = "i" + "xyz"[worst[0]] + "xyz"[worst[1]]
        return [
            f"{what}: inertia {element} = {inertia[worst]:.6g} kg*m^2 differs from its "
            f"{len(shapes)} shapes of uniform density: {expected[worst]:.6g}"
        ]
    return []


def _parse(text: str) -> _Robot:
    root = ET.fromstring(text)
    if root.tag != "robot":
        raise ValueError(f"root element is <{root.tag}>, not <robot>")
    if not root.get("name"):
        raise ValueError("<robot> has no name")
    return _Robot(root=root, links={}, joints={})


# --- stages --------------------------------------------------------------------------------------


def _stage_urdf(robot: _Robot) -> list[str]:
    problems = []
    root = robot.root
    for element in root.findall("link"):
        name = element.get("name")
        if not name:
            problems.append("a <link> has no name")
        elif name in robot.links:
            problems.append(f"link {name!r} is defined twice")
        else:
            robot.links[name] = element
    parent_of: dict[str, str] = {}
    edges: dict[str, list[str]] = {}
    for element in root.findall("joint"):
        name = element.get("name")
        if not name:
            problems.append("a <joint> has no name")
            continue
        if name in robot.joints:
            problems.append(f"joint {name!r} is defined twice")
            continue
        robot.joints[name] = element
        kind = element.get("type")
        if kind not in JOINT_TYPES:
            problems.append(f"joint {name!r}: unknown type {kind!r}")
        parent, child = element.find("parent"), element.find("child")
        parent_name = parent.get("link") if parent is not None else None
        child_name = child.get("link") if child is not None else None
        for role, link in (("parent", parent_name), ("child", child_name)):
            if not link:
                problems.append(f"joint {name!r}: no {role} link")
            elif link not in robot.links:
                problems.append(f"joint {name!r}: {role} link {link!r} does not exist")
        if parent_name and child_name:
            if child_name in parent_of:
                problems.append(
                    f"link {child_name!r} has two parents (joints to it from {parent_of[child_name]!r} "
                    f"and {parent_name!r})"
                )
            else:
                parent_of[child_name] = parent_name
            edges.setdefault(parent_name, []).append(child_name)
        try:
            origin_transform(element, f"joint {name!r}")
        except ValueError as error:
            problems.append(str(error))
        if kind in ("revolute", "prismatic", "continuous", "planar"):
            problems.extend(_joint_axis_and_limits(name, kind, element))
    roots = [link for link in robot.links if link not in parent_of]
    if not roots and robot.links:
        problems.append("no root link: every link has a parent, the joints form a loop")
    elif len(roots) > 1:
        problems.append(f"the tree needs exactly one root link, found {len(roots)}: {', '.join(roots)}")
    # every link reachable from the root exactly once (no loop, nothing detached)
    if roots:
        seen, stack = set(), [roots[0]]
        while stack:
            link = stack.pop()
            if link in seen:
                problems.append(f"link {link!r} is reached twice: the joints form a loop")
                break
            seen.add(link)
            stack.extend(edges.get(link, []))
        unreached = [link for link in robot.links if link not in seen]
        if unreached:
            problems.append(
                f"links not connected to root {roots[0]!r} (a loop or a detached part): "
                f"{', '.join(unreached)}"
            )
    return problems


def _joint_axis_and_limits(name: str, kind: str, element: ET.Element) -> list[str]:
    problems = []
    axis_element = element.find("axis")
    try:
        axis = _numbers(
            axis_element.get("xyz") if axis_element is not None else "1 0 0", 3, f"joint {name!r} axis"
        )
        norm = float(np.linalg.norm(axis))
        if abs(norm - 1.0) > AXIS_TOL:
            problems.append(f"joint {name!r}: axis {axis.tolist()} is not a unit vector (norm {norm:.6g})")
    except ValueError as error:
        problems.append(str(error))
    if kind in ("revolute", "prismatic"):
        limit = element.find("limit")
        if limit is None:
            return [*problems, f"joint {name!r}: {kind} joint without <limit>"]
        try:
            lower = _number(limit, "lower", f"joint {name!r} limit", 0.0)
            upper = _number(limit, "upper", f"joint {name!r} limit", 0.0)
            effort = _number(limit, "effort", f"joint {name!r} limit")
            velocity = _number(limit, "velocity", f"joint {name!r} limit")
        except ValueError as error:
            return [*problems, str(error)]
        if not lower < upper:
            problems.append(f"joint {name!r}: lower limit {lower:g} is not below upper limit {upper:g}")
        if effort <= 0:
            problems.append(f"joint {name!r}: effort limit {effort:g} must be > 0")
        if velocity <= 0:
            problems.append(f"joint {name!r}: velocity limit {velocity:g} must be > 0")
        safety = element.find("safety_controller")
        if safety is not None:
            try:
                soft_lower = _number(safety, "soft_lower_limit", f"joint {name!r} safety_controller", lower)
                soft_upper = _number(safety, "soft_upper_limit", f"joint {name!r} safety_controller", upper)
                k_velocity = _number(safety, "k_velocity", f"joint {name!r} safety_controller")
            except ValueError as error:
                return [*problems, str(error)]
            if not lower <= soft_lower < soft_upper <= upper:
                problems.append(
                    f"joint {name!r}: soft limits [{soft_lower:g}, {soft_upper:g}] must lie inside "
                    f"[{lower:g}, {upper:g}] with lower < upper"
                )
            if k_velocity <= 0:
                problems.append(f"joint {name!r}: safety_controller k_velocity {k_velocity:g} must be > 0")
    dynamics = element.find("dynamics")
    if dynamics is not None:
        for attribute in ("damping", "friction"):
            try:
                value = _number(dynamics, attribute, f"joint {name!r} dynamics", 0.0)
            except ValueError as error:
                problems.append(str(error))
                continue
            if value < 0:
                problems.append(f"joint {name!r}: {attribute} {value:g} must be >= 0")
    return problems


def _massless(link: ET.Element) -> bool:
    """Whether the link's <inertial> is all zero: mass 0 and inertia 0 (export's frame links)."""
    try:
        mass, _, inertia = link_inertia(link, "link")
    except ValueError:
        return False  # malformed: the inertial stage names it
    return mass == 0.0 and not inertia.any()


def moving_links(robot: _Robot) -> list[str]:
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
            element.find("inertial") is not None and not _massless(element)
        )
        if is_child_of_movable or has_body:
            result.append(name)
    return result


def _stage_geometry(robot: _Robot, tag: str) -> list[str]:
    problems = []
    moving = set(moving_links(robot))
    materials = {m.get("name"): m for m in robot.root.findall("material")}
    for name, link in robot.links.items():
        elements = link.findall(tag)
        if name in moving and not elements:
            problems.append(f"link {name!r}: moved by a joint but has no <{tag}>")
        for index, element in enumerate(elements):
            what = f"link {name!r} {tag} {index}"
            try:
                origin_transform(element, what)
                kind, dims = geometry_shape(element, what)
            except ValueError as error:
                problems.append(str(error))
                continue
            filename = str(dims.get("filename", ""))
            if (
                kind == "mesh"
                and not filename.startswith(("package://", "file://", "/"))
                and (".." in filename.split("/") or "://" in filename)
            ):
                # relative paths name files in the URDF's folder (quirobot export's meshes/NAME.stl)
                problems.append(
                    f"{what}: mesh filename {filename!r} is neither package://, absolute "
                    "nor inside the URDF's folder"
                )
            if kind == "mesh" and filename.startswith("package://quirobot/"):
                try:
                    resolve_mesh(filename)
                except (DataFileNotFoundError, ValueError):
                    problems.append(f"{what}: mesh {filename!r} is not among the package's files")
            if tag == "visual":
                problems.extend(_material_problems(element.find("material"), materials, what))
    return problems


def _material_problems(material: ET.Element | None, materials: dict, what: str) -> list[str]:
    if material is None:
        return []
    colour = material.find("color")
    if colour is None:
        if material.get("name") not in materials:
            return [f"{what}: material {material.get('name')!r} is not defined"]
        colour = materials[material.get("name")].find("color")
        if colour is None:
            return []
    try:
        rgba = _numbers(colour.get("rgba"), 4, f"{what} material colour")
    except ValueError as error:
        return [str(error)]
    if np.any(rgba < 0) or np.any(rgba > 1):
        return [f"{what}: colour {rgba.tolist()} must lie in [0, 1]"]
    return []


def link_inertia(link: ET.Element, what: str) -> tuple[float, np.ndarray, np.ndarray]:
    """(mass kg, centre of mass (3,) m in link frame, inertia (3, 3) kg*m^2 about it, link axes)."""
    inertial = link.find("inertial")
    if inertial is None:
        raise ValueError(f"{what} has no <inertial>")
    mass_element, inertia_element = inertial.find("mass"), inertial.find("inertia")
    if mass_element is None or inertia_element is None:
        raise ValueError(f"{what} <inertial> needs <mass> and <inertia>")
    mass = _number(mass_element, "value", f"{what} mass")
    i = {
        key: _number(inertia_element, key, f"{what} inertia")
        for key in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
    }
    tensor = np.array(
        [[i["ixx"], i["ixy"], i["ixz"]], [i["ixy"], i["iyy"], i["iyz"]], [i["ixz"], i["iyz"], i["izz"]]]
    )
    frame = origin_transform(inertial, f"{what} inertial")
    rotation = frame[:3, :3]
    return mass, frame[:3, 3], rotation @ tensor @ rotation.T


def _stage_inertial(robot: _Robot) -> list[str]:
    problems = []
    moving = set(moving_links(robot))
    for name, link in robot.links.items():
        what = f"link {name!r}"
        if link.find("inertial") is None:
            if name in moving:
                problems.append(f"{what}: moved by a joint but has no <inertial>")
            continue
        try:
            mass, com, inertia = link_inertia(link, what)
        except ValueError as error:
            problems.append(str(error))
            continue
        if mass <= 0:
            if name in moving:
                problems.append(f"{what}: mass {mass:g} kg must be > 0")
            continue
        problems.extend(f"{what}: {problem}" for problem in inertia_problems(inertia))
        shapes = []
        for element in link.findall("collision") or link.findall("visual"):
            try:
                shapes.append((origin_transform(element, what), *geometry_shape(element, what)))
            except ValueError:
                continue  # reported by the visual/collision stages
        if not shapes:
            continue
        if len(shapes) > 1 and all(_shape_volume(kind, dims) is not None for _, kind, dims in shapes):
            if not inertia_problems(inertia):
                problems.extend(_composite_problems(what, shapes, mass, com, inertia))
            continue
        verdicts = [
            _inside(frame[:3, :3].T @ (com - frame[:3, 3]), kind, dims) for frame, kind, dims in shapes
        ]
        if None not in verdicts and not any(verdicts):
            problems.append(f"{what}: centre of mass {np.round(com, 6).tolist()} m lies outside its geometry")
        if len(shapes) == 1 and not inertia_problems(inertia):
            frame, kind, dims = shapes[0]
            expected = _shape_inertia(kind, dims, mass)
            if expected is not None and np.allclose(frame[:3, 3], com, atol=INSIDE_TOL):
                expected = frame[:3, :3] @ expected @ frame[:3, :3].T
                scale = float(np.max(np.abs(expected)))
                worst = np.unravel_index(np.argmax(np.abs(inertia - expected)), (3, 3))
                if np.abs(inertia - expected).max() > INERTIA_RTOL * scale:
                    element = "i" + "xyz"[worst[0]] + "xyz"[worst[1]]
                    problems.append(
                        f"{what}: inertia {element} = {inertia[worst]:.6g} kg*m^2 differs "
                        f"from the solid {kind} of {mass:g} kg: {expected[worst]:.6g}"
                    )
    return problems


#: The report's closed-form forward kinematics: q (5,) in JOINT_NAMES order (m, rad) -> tool0's
#: (4, 4) pose in the world.
ReferenceFK = Callable[[np.ndarray], np.ndarray]


def _stage_kinematics(
    text: str, parameters: RobotParameters, reference_fk: ReferenceFK, samples: int, seed: int
) -> list[str]:
    import pinocchio as pin

    model = pin.buildModelFromXML(text)
    problems = []
    for name in JOINT_NAMES:
        if not model.existJointName(name):
            problems.append(f"joint {name!r} missing (the report's joints are {', '.join(JOINT_NAMES)})")
    if not model.existFrame("tool0"):
        problems.append("link 'tool0' missing (the report's frame 5')")
    if problems:
        return problems
    # The report's closed-form T, as the caller gives it (quirobot_kinematics' implementation is
    # itself checked against the report's DH product and worked example).
    data = model.createData()
    frame = model.getFrameId("tool0")
    indices = [model.joints[model.getJointId(name)].idx_q for name in JOINT_NAMES]
    rng = np.random.default_rng(seed)
    worst_position, worst_angle, worst_q = 0.0, 0.0, None
    for _ in range(samples):
        q5 = rng.uniform(parameters.lower_limits, parameters.upper_limits)
        q = pin.neutral(model)
        q[indices] = q5
        pin.framesForwardKinematics(model, data, q)
        expected = np.asarray(reference_fk(q5), dtype=float)
        position = float(np.linalg.norm(data.oMf[frame].translation - expected[:3, 3]))
        # rotation angle between the two, from ||R1 - R2||_F = 2*sqrt(2)*sin(angle/2) (exact near 0)
        chord = np.linalg.norm(data.oMf[frame].rotation - expected[:3, :3]) / (2.0 * math.sqrt(2.0))
        angle = float(2.0 * np.arcsin(min(chord, 1.0)))
        if max(position, angle) > max(worst_position, worst_angle):
            worst_q = q5
        worst_position, worst_angle = max(worst_position, position), max(worst_angle, angle)
    if max(worst_position, worst_angle) > KINEMATICS_TOL:
        problems.append(
            f"link 'tool0' differs from the report's T by up to {worst_position:.6g} m in position and "
            f"{worst_angle:.6g} rad in orientation over {samples} random q (worst at q = "
            f"{np.round(worst_q, 6).tolist()})"
        )
    return problems


def mujoco_ready(text: str) -> str:
    """The URDF with the <mujoco><compiler/> element that keeps every link (see export.py), and
    without its mesh visuals: MuJoCo loads a string with no folder to find mesh files from (nor
    package:// URIs), and the checks need the joints, the masses and the collision primitives."""
    from quirobot_description.export import MUJOCO_COMPILER

    root = ET.fromstring(text)
    if root.find("mujoco") is None:
        mujoco = ET.Element("mujoco")
        ET.SubElement(mujoco, "compiler", MUJOCO_COMPILER)
        root.insert(0, mujoco)
    for link in root.findall("link"):
        for visual in link.findall("visual"):
            if visual.find("geometry/mesh") is not None:
                link.remove(visual)
    return ET.tostring(root, encoding="unicode")


def _stage_engines(robot: _Robot, text: str) -> list[str]:
    import mujoco
    import pinocchio as pin

    problems = []
    movable = [name for name, joint in robot.joints.items() if joint.get("type") in MOVABLE]
    total_mass = sum(
        link_inertia(link, name)[0] for name, link in robot.links.items() if link.find("inertial") is not None
    )
    try:
        model = pin.buildModelFromXML(text)
    except Exception as error:  # pinocchio raises plain exceptions
        return [f"pinocchio cannot load it: {' '.join(str(error).split())}"]
    pin_joints = sorted(model.names[1:])
    if pin_joints != sorted(movable):
        problems.append(f"pinocchio sees joints {pin_joints}, the URDF moves {sorted(movable)}")
    pin_mass = sum(inertia.mass for inertia in model.inertias)
    if not math.isclose(pin_mass, total_mass, rel_tol=1e-9, abs_tol=1e-12):
        problems.append(f"pinocchio total mass {pin_mass:.9g} kg, the URDF {total_mass:.9g} kg")
    try:
        mj = mujoco.MjModel.from_xml_string(mujoco_ready(text))
    except Exception as error:  # mujoco raises ValueError with its own message
        return [*problems, f"MuJoCo cannot load it: {' '.join(str(error).split())}"]
    mj_joints = sorted(mj.joint(i).name for i in range(mj.njnt))
    if mj_joints != sorted(movable):
        problems.append(f"MuJoCo sees joints {mj_joints}, the URDF moves {sorted(movable)}")
    mj_bodies = {mj.body(i).name for i in range(mj.nbody)}
    missing = [link for link in robot.links if link not in mj_bodies]
    if missing:
        problems.append(f"MuJoCo dropped links {', '.join(missing)}")
    if not math.isclose(float(mj.body_mass.sum()), total_mass, rel_tol=1e-9, abs_tol=1e-12):
        problems.append(f"MuJoCo total mass {float(mj.body_mass.sum()):.9g} kg, the URDF {total_mass:.9g} kg")
    for name in movable:
        if name not in mj_joints:
            continue
        joint = robot.joints[name]
        limit, index = joint.find("limit"), mj.joint(name).id
        if joint.get("type") in ("revolute", "prismatic") and limit is not None:
            expected = [float(limit.get("lower", 0)), float(limit.get("upper", 0))]
            if not mj.jnt_limited[index] or not np.allclose(mj.jnt_range[index], expected, atol=1e-12):
                problems.append(
                    f"joint {name!r}: MuJoCo range {mj.jnt_range[index].tolist()}, URDF {expected}"
                )
        dynamics = joint.find("dynamics")
        damping = float(dynamics.get("damping", 0)) if dynamics is not None else 0.0
        if not math.isclose(float(mj.dof_damping[mj.jnt_dofadr[index]]), damping, abs_tol=1e-12):
            problems.append(
                f"joint {name!r}: MuJoCo damping {mj.dof_damping[mj.jnt_dofadr[index]]:g}, URDF {damping:g}"
            )
    return problems


REQUIRED_COMMANDS = ("position", "velocity")
#: gz_ros2_control's write() (jazzy gz_system.cpp) applies a claimed velocity command as is and
#: ignores the position command then: in Gazebo a joint commands position only.
GAZEBO_PLUGIN = "gz_ros2_control/GazeboSimSystem"
REQUIRED_STATES = ("position", "velocity", "effort")
HARDWARE_PLUGINS = {
    "mock_components/GenericSystem": (),
    "gz_ros2_control/GazeboSimSystem": (),
    "joint_state_topic_hardware_interface/JointStateTopicSystem": (
        "joint_commands_topic",
        "joint_states_topic",
        "trigger_joint_command_threshold",
    ),
}


def _is_negative(text: str) -> bool:
    try:
        return float(text) < 0.0
    except ValueError:
        return False


def _stage_ros2_control(robot: _Robot) -> list[str]:
    systems = robot.root.findall("ros2_control")
    if len(systems) != 1:
        return [f"expected one <ros2_control> block, found {len(systems)}"]
    system = systems[0]
    problems = []
    plugin = system.find("hardware/plugin")
    plugin_name = (plugin.text or "").strip() if plugin is not None else ""
    if plugin_name not in HARDWARE_PLUGINS:
        problems.append(f"hardware plugin {plugin_name!r} is not one of {', '.join(HARDWARE_PLUGINS)}")
    else:
        params = {p.get("name"): (p.text or "").strip() for p in system.findall("hardware/param")}
        for required in HARDWARE_PLUGINS[plugin_name]:
            if not params.get(required):
                problems.append(f"hardware {plugin_name}: parameter {required!r} must be set explicitly")
        threshold = params.get("trigger_joint_command_threshold")
        if threshold and not _is_negative(threshold):
            # The plugin publishes only while sum |position state - command| > threshold: a robot
            # holding still would get no commands and drive_node's watchdog would stop it.
            problems.append(
                f"hardware {plugin_name}: trigger_joint_command_threshold {threshold!r} must be negative "
                f"(a command on every cycle)"
            )
        if plugin_name.startswith("gz_ros2_control"):
            gz = robot.root.findall("gazebo/plugin")
            if not any(
                p.get("filename") == "gz_ros2_control-system" and p.findtext("parameters") for p in gz
            ):
                problems.append(
                    "hardware gazebo: no <gazebo> gz_ros2_control-system plugin with <parameters>"
                )
    movable = {name for name, joint in robot.joints.items() if joint.get("type") in MOVABLE}
    declared = {}
    for joint in system.findall("joint"):
        name = joint.get("name", "")
        declared[name] = joint
        if name not in robot.joints:
            problems.append(f"ros2_control joint {name!r} does not exist in the URDF")
            continue
        if name not in movable:
            problems.append(f"ros2_control joint {name!r} is {robot.joints[name].get('type')}, not movable")
        commands = [c.get("name") for c in joint.findall("command_interface")]
        states = [s.get("name") for s in joint.findall("state_interface")]
        if plugin_name == GAZEBO_PLUGIN and "velocity" in commands:
            problems.append(
                f"ros2_control joint {name!r}: a velocity command makes gz_ros2_control track open loop"
            )
        for required in REQUIRED_COMMANDS if plugin_name != GAZEBO_PLUGIN else ("position",):
            if required not in commands:
                problems.append(f"ros2_control joint {name!r}: no {required} command interface")
        if "effort" in commands and "position" in commands:
            problems.append(
                f"ros2_control joint {name!r}: effort and position commands together break gz_ros2_control"
            )
        for required in REQUIRED_STATES:
            if required not in states:
                problems.append(f"ros2_control joint {name!r}: no {required} state interface")
        limit = robot.joints[name].find("limit")
        for command in joint.findall("command_interface"):
            bounds = {p.get("name"): p.text for p in command.findall("param")}
            if command.get("name") == "position" and limit is not None and {"min", "max"} <= set(bounds):
                low, high = float(bounds["min"]), float(bounds["max"])
                lower, upper = float(limit.get("lower", 0)), float(limit.get("upper", 0))
                if low < lower - 1e-12 or high > upper + 1e-12:
                    problems.append(
                        f"ros2_control joint {name!r}: position command range [{low:g}, {high:g}] "
                        f"exceeds the joint limits [{lower:g}, {upper:g}]"
                    )
    for name in sorted(movable - set(declared)):
        problems.append(f"joint {name!r} has no ros2_control interfaces")
    return problems


# --- driver --------------------------------------------------------------------------------------


def check_urdf(
    text: str,
    parameters: RobotParameters,
    *,
    reference_fk: ReferenceFK | None = None,
    samples: int = 1000,
    seed: int = 0,
) -> list[StageResult]:
    """Run every stage on URDF `text`; kinematics compares tool0 with `reference_fk` (the report's
    T of `parameters`) on `samples` random configurations in `parameters`' joint ranges, and is
    SKIP without it."""
    results: list[StageResult] = []

    def run(name: str, stage: Callable[[], list[str]], skip_reason: str = "") -> None:
        if skip_reason:
            results.append(StageResult(name, SKIP, note=skip_reason))
            return
        try:
            problems = stage()
        except Exception as error:  # a reader (pinocchio, MuJoCo) rejecting the file is a finding
            problems = [f"{type(error).__name__}: {' '.join(str(error).split())}"]
        results.append(StageResult(name, FAIL if problems else PASS, problems))

    robot: _Robot | None = None
    try:
        robot = _parse(text)
        results.append(StageResult("xml", PASS))
    except (ET.ParseError, ValueError) as error:
        results.append(StageResult("xml", FAIL, [" ".join(str(error).split())]))
        for name in STAGES[1:]:
            results.append(StageResult(name, SKIP, note="xml failed"))
        return results
    run("urdf", lambda: _stage_urdf(robot))
    tree_ok = results[-1].status == PASS
    run("visual", lambda: _stage_geometry(robot, "visual"))
    run("collision", lambda: _stage_geometry(robot, "collision"))
    run("inertial", lambda: _stage_inertial(robot))
    needs_tree = "" if tree_ok else "urdf semantics failed"
    no_reference = "" if reference_fk is not None else "no reference FK given"
    run(
        "kinematics",
        lambda: _stage_kinematics(text, parameters, reference_fk, samples, seed),
        needs_tree or no_reference,
    )
    run("engines", lambda: _stage_engines(robot, text), needs_tree)
    run("ros2_control", lambda: _stage_ros2_control(robot), needs_tree)
    return results


def format_results(results: list[StageResult], label: str = "") -> str:
    """One line per stage (`  xml ........ PASS`), then one indented line per problem."""
    lines = [label] if label else []
    for result in results:
        lines.append(f"  {result.name:<13} {result.status}" + (f" ({result.note})" if result.note else ""))
        lines.extend(f"    {result.name}: {problem}" for problem in result.problems)
    return "\n".join(lines)
