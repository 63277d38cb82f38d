"""The xacro executable (as ROS's Command runs it) gives the same URDF as robot_description()."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

from quirobot_description.launch_description import xacro_argument_parts
from quirobot_description.urdf import XACRO_FILE, robot_description

XACRO = shutil.which("xacro")
pytestmark = [pytest.mark.skipif(XACRO is None, reason="xacro executable not on PATH"), pytest.mark.engines]


def _canonical(text: str) -> list[tuple[str, tuple, str]]:
    return [
        (e.tag, tuple(sorted(e.attrib.items())), (e.text or "").strip()) for e in ET.fromstring(text).iter()
    ]


@pytest.mark.parametrize(("tool", "hardware"), [("drill", "mock"), ("arthroscope", "real"), ("none", "mock")])
def test_xacro_command_line_matches_in_process_expansion(tmp_path, tool, hardware):
    # run from elsewhere: the xacro's relative paths must not depend on the working directory
    result = subprocess.run(
        [XACRO, str(XACRO_FILE), f"tool:={tool}", f"hardware:={hardware}"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert _canonical(result.stdout) == _canonical(robot_description(tool, hardware))


@pytest.mark.parametrize(("tool", "hardware"), [("arthroscope", "mock"), ("drill", "real")])
def test_launch_helper_command_line_matches_in_process_expansion(tmp_path, tool, hardware):
    # The launch files' Command joins its parts and splits the result like a shell (shlex).
    command = "".join([XACRO, " ", str(XACRO_FILE), *xacro_argument_parts(hardware=hardware, tool=tool)])
    result = subprocess.run(shlex.split(command), capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert _canonical(result.stdout) == _canonical(robot_description(tool, hardware))


@pytest.mark.parametrize("argument", ["tool:=laser", "hardware:=sim"])
def test_xacro_command_line_refuses_unknown_choices(tmp_path, argument):
    result = subprocess.run([XACRO, str(XACRO_FILE), argument], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert argument.split(":=")[1] in result.stderr


def test_launch_helper_passes_the_calibration_file_to_xacro(tmp_path, parameters):
    """bringup.launch.py's calibration:= reaches the xacro as calibration_file: the command line
    gives robot_description(calibration_file=...)'s URDF (joint origins moved); empty, the nominal."""
    import dataclasses

    import yaml

    from quirobot_description.geometric_errors import calibration_document
    from quirobot_description.machine_identity import simulated_machine

    band = parameters.geometric.tolerance  # every error at its band's edge: a plausible machine
    errors = dataclasses.replace(band, xy_squareness=-band.xy_squareness)
    path = tmp_path / "calibration.yaml"
    path.write_text(
        yaml.safe_dump(calibration_document(errors, "calibration campaign test", simulated_machine(None)))
    )

    def expanded(value: str) -> str:
        parts = xacro_argument_parts(tool="drill", hardware="real", calibration_file=_Substituted(value))
        command = "".join([XACRO, " ", str(XACRO_FILE), *(str(part) for part in parts)])
        result = subprocess.run(
            shlex.split(command), capture_output=True, text=True, timeout=60, cwd=tmp_path
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    calibrated = _canonical(expanded(str(path)))
    assert calibrated == _canonical(robot_description("drill", "real", calibration_file=path))
    assert calibrated != _canonical(robot_description("drill", "real"))
    assert _canonical(expanded("")) == _canonical(robot_description("drill", "real"))


class _Substituted:
    """Stands for a launch substitution (LaunchConfiguration("calibration")), which Command turns into
    its value: xacro_argument_parts checks literal strings only, and this one may be empty."""

    def __init__(self, value: str) -> None:
        self.value = value

    def __str__(self) -> str:
        return self.value
