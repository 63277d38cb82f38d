"""The model stages of the URDF check: the tree (urdf), the shapes (visual, collision) and the
masses (inertial). Each returns one line per problem, naming the link or joint and the number.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np

from quirobot_description.data_files import DataFileNotFoundError
from quirobot_description.inertia import inertia_problems
from quirobot_description.urdf_elements import (
    INSIDE_TOL,
    JOINT_TYPES,
    ParsedUrdf,
    geometry_shape,
    link_inertia,
    moving_links,
    origin_transform,
    parse_number,
    parse_numbers,
    shape_contains,
    shape_inertia,
    shape_volume,
)
from quirobot_description.visual_meshes import resolve_mesh

#: Relative tolerance when comparing an inertia with the formula of its geometry.
INERTIA_RTOL = 1e-6
#: Tolerance on |axis| - 1.
AXIS_TOL = 1e-9


def stage_urdf(robot: ParsedUrdf) -> list[str]:
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
        axis = parse_numbers(
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
            lower = parse_number(limit, "lower", f"joint {name!r} limit", 0.0)
            upper = parse_number(limit, "upper", f"joint {name!r} limit", 0.0)
            effort = parse_number(limit, "effort", f"joint {name!r} limit")
            velocity = parse_number(limit, "velocity", f"joint {name!r} limit")
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
                soft_lower = parse_number(
                    safety, "soft_lower_limit", f"joint {name!r} safety_controller", lower
                )
                soft_upper = parse_number(
                    safety, "soft_upper_limit", f"joint {name!r} safety_controller", upper
                )
                k_velocity = parse_number(safety, "k_velocity", f"joint {name!r} safety_controller")
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
                value = parse_number(dynamics, attribute, f"joint {name!r} dynamics", 0.0)
            except ValueError as error:
                problems.append(str(error))
                continue
            if value < 0:
                problems.append(f"joint {name!r}: {attribute} {value:g} must be >= 0")
    return problems


def stage_geometry(robot: ParsedUrdf, tag: str) -> list[str]:
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
        rgba = parse_numbers(colour.get("rgba"), 4, f"{what} material colour")
    except ValueError as error:
        return [str(error)]
    if np.any(rgba < 0) or np.any(rgba > 1):
        return [f"{what}: colour {rgba.tolist()} must lie in [0, 1]"]
    return []


def stage_inertial(robot: ParsedUrdf) -> list[str]:
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
        if len(shapes) > 1 and all(shape_volume(kind, dims) is not None for _, kind, dims in shapes):
            if not inertia_problems(inertia):
                problems.extend(_composite_problems(what, shapes, mass, com, inertia))
            continue
        verdicts = [
            shape_contains(frame[:3, :3].T @ (com - frame[:3, 3]), kind, dims) for frame, kind, dims in shapes
        ]
        if None not in verdicts and not any(verdicts):
            problems.append(f"{what}: centre of mass {np.round(com, 6).tolist()} m lies outside its geometry")
        if len(shapes) == 1 and not inertia_problems(inertia):
            frame, kind, dims = shapes[0]
            expected = shape_inertia(kind, dims, mass)
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


def _composite_problems(
    what: str, shapes: list, mass: float, com: np.ndarray, inertia: np.ndarray
) -> list[str]:
    """Why a link of several solid shapes (frame (4, 4), kind, dims) does not have their mass
    properties at one uniform density: centre of mass at their centroid, inertia their sum with
    the parallel-axis terms (a frame's centre of mass may lie in none of its parts)."""
    volumes = np.array([shape_volume(kind, dims) for _, kind, dims in shapes])
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
        own = rotation @ shape_inertia(kind, dims, part) @ rotation.T
        expected += own + part * (offset @ offset * np.eye(3) - np.outer(offset, offset))
    worst = np.unravel_index(np.argmax(np.abs(inertia - expected)), (3, 3))
    if np.abs(inertia - expected).max() > INERTIA_RTOL * float(np.max(np.abs(expected))):
        element = "i" + "xyz"[worst[0]] + "xyz"[worst[1]]
        return [
            f"{what}: inertia {element} = {inertia[worst]:.6g} kg*m^2 differs from its "
            f"{len(shapes)} shapes of uniform density: {expected[worst]:.6g}"
        ]
    return []
