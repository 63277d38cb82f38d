"""The dependency rules (.importlinter) hold, and each contract breaks on the import it forbids.

import-linter reads every import of the four packages (function-level ones too) and checks the
contracts at the repository root. The tree must keep all of them; a copy of the tree with one
forbidden import added must break the contract that forbids it (else the contract checks
nothing: a misspelt module or an external package missing from the graph would pass quietly).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("importlinter")

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("quirobot_description", "quirobot_kinematics", "quirobot_control", "quirobot_cli")
LINT = "from importlinter.cli import lint_imports_command; lint_imports_command()"


def lint_imports(root: Path, *contracts: str) -> subprocess.CompletedProcess:
    """lint-imports on the packages under `root` (the contracts file there), without a cache."""
    options = [arg for contract in contracts for arg in ("--contract", contract)]
    return subprocess.run(
        [sys.executable, "-c", LINT, "--no-cache", "--no-logo", *options],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},  # the packages of `root`, not the installed ones
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_tree_keeps_every_contract():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "6 kept, 0 broken" in result.stdout, result.stdout


#: (contract id, file, code appended to it): one import each contract forbids.
VIOLATIONS = [
    ("packages", "quirobot_description/validation.py", "import quirobot_kinematics"),
    ("packages", "quirobot_control/models/bone.py", "import quirobot_cli"),
    (
        "control-layers",
        "quirobot_control/drives/interface.py",
        "from quirobot_control.safety import motion_monitor",
    ),
    ("control-layers", "quirobot_control/axes/limits.py", "import quirobot_control.models.dynamics"),
    (
        "ros-adapters",
        "quirobot_control/hardware/component.py",
        "def _f():\n    import quirobot_control.nodes.drive_node",
    ),
    ("ros-adapters", "quirobot_kinematics/model.py", "from quirobot_kinematics.nodes import kinematics_node"),
    ("ros-only-in-adapters", "quirobot_control/models/dynamics.py", "import rclpy"),
    ("ros-only-in-adapters", "quirobot_description/urdf.py", "from launch.substitutions import Command"),
    ("real-drive-path", "quirobot_control/drives/pid.py", "import mujoco"),
    (
        "real-drive-path",
        "quirobot_control/bridge/canopen_backend.py",
        "import quirobot_control.planning.trajectory",
    ),
    (
        "real-drive-path",
        "quirobot_control/drives/drive_control.py",
        "def _f():\n    import matplotlib.pyplot",
    ),
    (
        "real-drive-path",
        "quirobot_control/nodes/drive_node.py",
        "def _f():\n    import quirobot_control.drive_simulators.simulated_drive",
    ),
    (
        "real-drive-path",
        "quirobot_control/bridge/canopen_backend.py",
        "from quirobot_control.drive_simulators import canopen_slave",
    ),
    ("real-drive-path", "quirobot_control/hardware/component.py", "import quirobot_control.drive_simulators"),
    (
        "cia402-sides",
        "quirobot_control/drive_simulators/canopen_slave/__init__.py",
        "from quirobot_control.drives import canopen_master",
    ),
]


@pytest.mark.parametrize(("contract", "path", "code"), VIOLATIONS, ids=[f"{v[0]}:{v[1]}" for v in VIOLATIONS])
def test_a_forbidden_import_breaks_its_contract(tmp_path, contract, path, code):
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / ".importlinter", tmp_path / ".importlinter")
    kept = lint_imports(tmp_path, contract)
    assert kept.returncode == 0, kept.stdout + kept.stderr
    with (tmp_path / path).open("a") as source:
        source.write(f"\n{code}\n")
    broken = lint_imports(tmp_path, contract)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "0 kept, 1 broken" in broken.stdout, broken.stdout
