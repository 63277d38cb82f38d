"""Staged validation of a URDF (`quirobot check`): each stage names what it found wrong.

Stages, in order: xml, urdf (semantics: one root, a tree, unique names, existing links, unit
axes, limits), visual, collision, inertial (mass > 0, inertia physical and consistent with the
geometry, centre of mass inside the geometry), kinematics (tool0 equals the report's closed-form T
on many random q), engines (pinocchio and MuJoCo load it and agree on joints and mass),
ros2_control (interfaces match the joints). A stage that cannot run because an earlier one failed
is SKIP. Every problem is one line: the link or joint and the number. The stages live by concern:
urdf_elements (the parsed tree and its readers), validation_model (urdf, visual, collision,
inertial), validation_engines (kinematics, engines), validation_ros2_control; this module runs them.

The report's closed-form T is passed in (`reference_fk`, e.g. quirobot_kinematics'
forward_kinematics on the model of the same parameters): the description does not import the
kinematics, which is built on it. Without it the kinematics stage is SKIP.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field

from quirobot_description.parameters import RobotParameters
from quirobot_description.urdf_elements import (
    JOINT_TYPES,
    MOVABLE,
    ParsedUrdf,
    geometry_shape,
    link_inertia,
    moving_links,
    origin_transform,
    parse_urdf,
)
from quirobot_description.validation_engines import (
    KINEMATICS_TOL,
    ReferenceFK,
    mujoco_ready,
    stage_engines,
    stage_kinematics,
)
from quirobot_description.validation_model import INERTIA_RTOL, stage_geometry, stage_inertial, stage_urdf
from quirobot_description.validation_ros2_control import stage_ros2_control

__all__ = [
    "FAIL",
    "JOINT_TYPES",
    "KINEMATICS_TOL",
    "INERTIA_RTOL",
    "MOVABLE",
    "PASS",
    "SKIP",
    "STAGES",
    "ReferenceFK",
    "StageResult",
    "check_urdf",
    "format_results",
    "geometry_shape",
    "link_inertia",
    "moving_links",
    "mujoco_ready",
    "origin_transform",
]

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"
STAGES = ("xml", "urdf", "visual", "collision", "inertial", "kinematics", "engines", "ros2_control")


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

    robot: ParsedUrdf | None = None
    try:
        robot = parse_urdf(text)
        results.append(StageResult("xml", PASS))
    except (ET.ParseError, ValueError) as error:
        results.append(StageResult("xml", FAIL, [" ".join(str(error).split())]))
        for name in STAGES[1:]:
            results.append(StageResult(name, SKIP, note="xml failed"))
        return results
    run("urdf", lambda: stage_urdf(robot))
    tree_ok = results[-1].status == PASS
    run("visual", lambda: stage_geometry(robot, "visual"))
    run("collision", lambda: stage_geometry(robot, "collision"))
    run("inertial", lambda: stage_inertial(robot))
    needs_tree = "" if tree_ok else "urdf semantics failed"
    no_reference = "" if reference_fk is not None else "no reference FK given"
    run(
        "kinematics",
        lambda: stage_kinematics(text, parameters, reference_fk, samples, seed),
        needs_tree or no_reference,
    )
    run("engines", lambda: stage_engines(robot, text), needs_tree)
    run("ros2_control", lambda: stage_ros2_control(robot), needs_tree)
    return results


def format_results(results: list[StageResult], label: str = "") -> str:
    """One line per stage (`  xml ........ PASS`), then one indented line per problem."""
    lines = [label] if label else []
    for result in results:
        lines.append(f"  {result.name:<13} {result.status}" + (f" ({result.note})" if result.note else ""))
        lines.extend(f"    {result.name}: {problem}" for problem in result.problems)
    return "\n".join(lines)
