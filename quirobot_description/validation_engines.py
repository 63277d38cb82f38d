"""The engine stages of the URDF check: kinematics (tool0 against the report's closed form, the
reference FK passed in) and engines (pinocchio and MuJoCo load it and agree on joints and mass).
pinocchio and MuJoCo are imported inside the stages: the description loads neither otherwise.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Callable

import numpy as np

from quirobot_description.joint_names import JOINT_NAMES
from quirobot_description.parameters import RobotParameters
from quirobot_description.urdf_elements import MOVABLE, ParsedUrdf, link_inertia

#: Tolerance (m, rad) on tool0 against the report's closed form.
KINEMATICS_TOL = 1e-9


#: The report's closed-form forward kinematics: q (5,) in JOINT_NAMES order (m, rad) -> tool0's
#: (4, 4) pose in the world.
ReferenceFK = Callable[[np.ndarray], np.ndarray]


def stage_kinematics(
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


def stage_engines(robot: ParsedUrdf, text: str) -> list[str]:
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
