"""Each fact once (issue 35 item 3): the names of the robot's joints and links are spelled in
quirobot_description.joint_names only; every other module imports them."""

from __future__ import annotations

import ast
from pathlib import Path

from quirobot_description.joint_names import FEED_JOINT, JOINT_NAMES, LINK_NAMES

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("quirobot_description", "quirobot_kinematics", "quirobot_control", "quirobot_cli")
HOME = ROOT / "quirobot_description" / "joint_names.py"


def name_sequences(source: str) -> list[int]:
    """Line numbers of module- or class-level constants (declarations) whose tuple or list literal
    spells two or more joint or link names (a function picking a few links by name is a use)."""
    names = {*JOINT_NAMES, *LINK_NAMES, FEED_JOINT}
    tree = ast.parse(source)
    scopes = [tree, *(node for node in ast.walk(tree) if isinstance(node, ast.ClassDef))]
    lines = []
    for scope in scopes:
        for statement in scope.body:
            if not isinstance(statement, (ast.Assign, ast.AnnAssign)) or statement.value is None:
                continue
            for node in ast.walk(statement.value):
                if isinstance(node, (ast.Tuple, ast.List)):
                    spelled = [e for e in node.elts if isinstance(e, ast.Constant) and e.value in names]
                    if len(spelled) >= 2:
                        lines.append(node.lineno)
    return lines


def test_the_joint_names_are_spelled_in_one_module():
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if path != HOME
        for line in name_sequences(path.read_text(encoding="utf-8"))
    ]
    assert not found, f"joint or link names spelled outside joint_names.py: {', '.join(found)}"


def test_the_kinematics_revolute_indices_follow_the_joint_kinds():
    from quirobot_description.joint_names import REVOLUTE_JOINTS
    from quirobot_kinematics.model import REVOLUTE

    assert [JOINT_NAMES[i] for i in REVOLUTE] == list(REVOLUTE_JOINTS)
