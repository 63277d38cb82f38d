"""A calibration file for a launch test: written to a temporary folder of its own, removed at exit."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

import yaml

from quirobot_description.geometric_errors import GeometricErrors, calibration_document
from quirobot_description.machine_identity import MachineIdentity


def write_calibration_file(errors: GeometricErrors, source: str, machine: MachineIdentity) -> Path:
    """The calibration file of `machine` with `errors` (each value's source `source`)."""
    folder = tempfile.mkdtemp(prefix="quirobot-calibration-")
    atexit.register(shutil.rmtree, folder, True)
    path = Path(folder) / "calibration.yaml"
    path.write_text(yaml.safe_dump(calibration_document(errors, source, machine), sort_keys=False))
    return path
