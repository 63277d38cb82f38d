"""The description verbs of `quirobot`: output, --help, and one-line errors with exit 2."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET

import pinocchio as pin
import pytest

from quirobot_cli.cli import main
from quirobot_description.parameters import DEFAULT_PARAMETER_FILE

pytestmark = pytest.mark.engines


@pytest.mark.parametrize("verb", ["urdf", "export", "check", "render"])
def test_every_verb_has_help(verb, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([verb, "--help"])
    assert exit_info.value.code == 0
    assert "--tool" in capsys.readouterr().out


def test_urdf_prints_the_expanded_description(capsys):
    assert main(["urdf", "--tool", "arthroscope", "--hardware", "real"]) == 0
    root = ET.fromstring(capsys.readouterr().out)
    names = {e.get("name") for e in root.findall("link")}
    assert {"camera_link", "camera_optical_frame"} <= names and "drill_bit" not in names
    assert root.find("ros2_control/hardware/plugin").text.strip().endswith("/JointStateTopicSystem")


def test_export_writes_a_loadable_file(tmp_path, capsys):
    assert main(["export", str(tmp_path / "out"), "--tool", "none"]) == 0
    path = tmp_path / "out" / "robot.urdf"
    assert capsys.readouterr().out.strip() == str(path)
    assert pin.buildModelFromUrdf(str(path)).nq == 5


def _one_line_error(capsys, argv, *words):
    assert main(argv) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.startswith(f"quirobot {argv[0]}: error:"), err
    assert "\n" not in err and "Traceback" not in err
    for word in words:
        assert word in err, err
    return err


@pytest.mark.parametrize("verb", ["urdf", "check", "render"])
def test_unknown_tool_is_one_line_exit_2(capsys, tmp_path, verb):
    argv = [verb, "--tool", "laser"] + ([str(tmp_path / "x.png")] if verb == "render" else [])
    _one_line_error(capsys, argv, "laser", "drill, arthroscope, none")


@pytest.mark.parametrize("verb", ["urdf", "export", "check"])
def test_unknown_hardware_is_one_line_exit_2(capsys, tmp_path, verb):
    argv = [verb, "--hardware", "sim"] + ([str(tmp_path)] if verb == "export" else [])
    _one_line_error(capsys, argv, "sim", "mock, gazebo, real")


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda t: t.replace("  l4:\n", "  l4: [\n", 1), ("not valid YAML",)),
        (lambda t: t.replace("value: 0.4\n", "value: -0.4\n", 1), ("kinematics.l4", "> 0")),
        (
            lambda t: t.replace("transmission: gantry_y_screw", "transmission: nowhere_screw"),
            ("nowhere_screw",),
        ),
    ],
    ids=["yaml-syntax", "negative-length", "missing-transmission"],
)
def test_malformed_parameter_file_is_one_line_exit_2(capsys, tmp_path, edit, words):
    path = tmp_path / "params.yaml"
    path.write_text(edit(DEFAULT_PARAMETER_FILE.read_text()))
    for verb in (
        ["urdf"],
        ["check", "--tool", "drill", "--hardware", "mock"],
        ["export", str(tmp_path / "o")],
    ):
        _one_line_error(capsys, [*verb, "--parameter-file", str(path)], *words)


def test_missing_parameter_file_is_one_line_exit_2(capsys, tmp_path):
    _one_line_error(capsys, ["urdf", "--parameter-file", str(tmp_path / "none.yaml")], "none.yaml")


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["check", "--samples", "many"], ("--samples", "invalid int value: 'many'")),
        (["render", "out.png", "--q", "1", "2"], ("--q", "expected 5 arguments")),
        (["urdf", "--tool"], ("--tool", "expected one argument")),
        (["export", "out", "--bogus"], ("unrecognized arguments: --bogus",)),
    ],
)
def test_argparse_errors_are_one_line_exit_2(capsys, argv, words):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"quirobot {argv[0]}: error:"), err
    for word in words:
        assert word in err, err


def test_negative_joint_values_are_numbers_not_options(tmp_path, capsys):
    output = tmp_path / "pose.png"
    assert (
        main(["render", str(output), "--tool", "none", "--q", "1", "1", "1", "0.5", "-1e-1", "--dpi", "20"])
        == 0
    )
    assert output.read_bytes()[:4] == b"\x89PNG"


def test_console_entry_point_prints_no_traceback():
    # a real process, as a user runs it
    result = subprocess.run(
        [sys.executable, "-m", "quirobot_cli.cli", "urdf", "--tool", "bogus"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and "bogus" in result.stderr


def test_check_exit_1_prints_stage_names(tmp_path, capsys):
    path = tmp_path / "broken.urdf"
    assert main(["export", str(tmp_path)]) == 0
    text = (tmp_path / "robot.urdf").read_text().replace('<axis xyz="1 0 0"/>', '<axis xyz="0.5 0 0"/>', 1)
    path.write_text(text)
    capsys.readouterr()
    assert main(["check", "--urdf", str(path)]) == 1
    out = capsys.readouterr().out
    assert "urdf          FAIL" in out and "gantry_x" in out and "norm 0.5" in out
