"""Each fact once (issue 35 item 3): the names of the robot's joints and links are spelled in
quirobot_description.joint_names only; every other module imports them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from quirobot_description import robot_parameters
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


def test_every_file_schema_is_declared_in_file_schema():
    """One schema home: no package declares a FileSchema of its own (the arthroscopy and pin task
    files' tables lived in quirobot_control, so docs/parameter_files.md left them out)."""
    from quirobot_description import file_schema

    home = ROOT / "quirobot_description" / "file_schema.py"
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if path != home
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "FileSchema"
    ]
    assert not found, f"FileSchema declared outside file_schema.py: {', '.join(found)}"
    declared = [v for v in vars(file_schema).values() if isinstance(v, file_schema.FileSchema)]
    assert sorted(s.kind for s in declared) == sorted(s.kind for s in file_schema.USER_FILES)


def test_the_registration_and_calibration_files_refuse_an_unknown_key(tmp_path):
    """Both files the user hands in are read through their schema: a stray key is named, not ignored."""
    import numpy as np
    import yaml

    from quirobot_description.geometric_errors import (
        CalibrationFileError,
        GeometricErrors,
        calibration_document,
        read_calibration,
    )
    from quirobot_description.machine_identity import simulated_machine
    from quirobot_kinematics.registration import (
        RegistrationFileError,
        read_registration,
        registration_document,
    )

    registration = registration_document(np.eye(4), "test")
    registration["transform"]["scale"] = {"value": 1.0, "unit": "1", "source": "test"}
    path = tmp_path / "registration.yaml"
    path.write_text(yaml.safe_dump(registration))
    with pytest.raises(RegistrationFileError, match="unknown key transform.scale"):
        read_registration(path)
    calibration = calibration_document(
        GeometricErrors.zero(), "calibration campaign test", simulated_machine(None)
    )
    calibration["tcp_offset_x"] = {"value": 0.0, "unit": "m", "source": "test"}  # outside its section
    path = tmp_path / "calibration.yaml"
    path.write_text(yaml.safe_dump(calibration))
    with pytest.raises(CalibrationFileError, match="unknown key tcp_offset_x"):
        read_calibration(path, robot_parameters().geometric)
