"""The launch files' calibration:= check (launch_description.calibration_path), without ROS: a good
file becomes its absolute path, empty stays the nominal model, a bad one is one line naming the
argument, the file and the problem (test/ros/test_task_node_files.py: `ros2 launch` itself)."""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from quirobot_description.geometric_errors import CalibrationFileError, GeometricErrors, calibration_document
from quirobot_description.launch_description import calibration_path
from quirobot_description.machine_identity import simulated_machine


def test_a_calibration_file_becomes_its_absolute_path(tmp_path, monkeypatch, parameters):
    errors = dataclasses.replace(
        GeometricErrors.zero(), tcp_offset_z=parameters.geometric.tolerance.tcp_offset_z
    )
    (tmp_path / "calibration.yaml").write_text(
        yaml.safe_dump(calibration_document(errors, "campaign test", simulated_machine(None)))
    )
    monkeypatch.chdir(tmp_path)
    assert calibration_path("calibration.yaml") == str(tmp_path / "calibration.yaml")
    assert calibration_path("") == ""


def test_a_calibration_outside_its_band_is_one_line_naming_the_argument_and_the_file(tmp_path):
    errors = dataclasses.replace(GeometricErrors.zero(), tcp_offset_x=0.02)  # the band is +/-0.3 mm
    path = tmp_path / "calibration.yaml"
    path.write_text(yaml.safe_dump(calibration_document(errors, "campaign test", simulated_machine(None))))
    with pytest.raises(CalibrationFileError) as raised:
        calibration_path(str(path))
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"launch argument calibration: calibration file {path}: "), message
    assert "tcp_offset_x 0.02 m is outside its tolerance band +/-0.0003 m" in message
