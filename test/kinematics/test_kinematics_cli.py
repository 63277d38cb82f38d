"""The fk / ik / workspace verbs: the JSON contract, one-line errors with exit 2."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from quirobot_cli.cli import main
from quirobot_description.parameters import JOINT_NAMES, load_parameters
from quirobot_kinematics.forward import forward_kinematics
from quirobot_kinematics.model import KinematicModel

WORKED_Q = [-1.5, -1.5, 0.5, math.pi / 4, math.pi / 4]  # report's worked example


@pytest.fixture(scope="module")
def model() -> KinematicModel:
    return KinematicModel.from_parameters(load_parameters())


def texts(values) -> list[str]:
    """Numbers as command-line words, exactly (repr of a Python float round-trips)."""
    return [repr(float(v)) for v in values]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_exit(capsys, *argv: str) -> tuple[int, str, str]:
    """For argparse-level errors, which exit through SystemExit."""
    try:
        code = main(list(argv))
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_fk_json_contract(capsys, model):
    code, out, err = run(capsys, "fk", *texts(WORKED_Q), "--json")
    assert code == 0 and err == ""
    data = json.loads(out)
    assert set(data) == {"T"}
    T = np.array(data["T"])
    assert T.shape == (4, 4)
    np.testing.assert_allclose(T[:3, 3], [-1.4, -1.6, -1.0414], atol=6e-5)  # report's numbers
    np.testing.assert_allclose(T, forward_kinematics(WORKED_Q, model), atol=0)


def test_fk_feed_and_text_output(capsys, model):
    code, out, _ = run(capsys, "fk", "1", "1", "1", "0.5", "0.5", "--feed", "0.05", "--json")
    assert code == 0
    np.testing.assert_allclose(
        json.loads(out)["T"], forward_kinematics([1, 1, 1, 0.5, 0.5], model, 0.05), atol=0
    )
    code, out, _ = run(capsys, "fk", "0", "0", "0", "0", "0")
    assert code == 0 and "0.200000" in out and "-0.400000" in out


def test_ik_json_contract_position_approach(capsys, model):
    q = np.array([0.7, 1.2, 0.9, 2.0, 0.6])
    T = forward_kinematics(q, model)
    argv = [
        "ik",
        "--position",
        *texts(T[:3, 3]),
        "--approach",
        *texts(T[:3, 2]),
        "--seed",
        *texts(q),
    ]
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0 and err == ""
    data = json.loads(out)
    assert set(data) == {"q", "joint_names"}
    assert data["joint_names"] == list(JOINT_NAMES)
    np.testing.assert_allclose(data["q"], q, atol=1e-12)
    code, out, _ = run(capsys, *argv, "--json", "--all")
    every = np.array(json.loads(out)["q"])
    assert every.shape == (2, 5)
    np.testing.assert_allclose(every[1, 3:], [2.0 + math.pi, math.pi - 0.6], atol=1e-12)


def test_ik_matrix_worked_example_needs_no_limits(capsys, model):
    matrix = texts(forward_kinematics(WORKED_Q, model).ravel())
    code, out, _ = run(capsys, "ik", "--matrix", *matrix, "--no-limits", "--json")
    assert code == 0
    np.testing.assert_allclose(json.loads(out)["q"], WORKED_Q, atol=1e-12)
    code, out, err = run(capsys, "ik", "--matrix", *matrix)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "gantry_x would be -1.5 m, 1.5 m below its lower limit" in err


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["fk", "1", "2", "3", "4"], "fk takes 5 joint values (d1 d2 d3 theta4 theta5), got 4"),
        (["fk", "1", "2", "3", "4", "5", "6"], "got 6"),
        (["fk", "1", "2", "x", "4", "5"], "'x' is not a number"),
        (["fk", "1", "2", "nan", "4", "5"], "finite; gantry_z"),
        (["fk", "1", "2", "3", "4", "5", "--feed", "inf"], "--feed must be finite"),
        (["ik", "--position", "1", "1", "-1"], "ik needs --position"),
        (["ik", "--position", "1", "1", "--approach", "0", "0", "-1"], "--position takes 3 numbers, got 2"),
        (["ik", "--matrix", *["0"] * 15], "--matrix takes 16 numbers, got 15"),
        (["ik", "--matrix", *["1"] * 16, "--position", "1", "1", "1"], "not both"),
        (
            ["ik", "--position", "1", "1", "-1", "--approach", "0", "0", "1"],
            "wrist_pitch would be -90 deg, 15 deg",
        ),
        (["ik", "--position", "nan", "1", "-1", "--approach", "0", "0", "-1"], "position must be finite"),
        (["ik", "--position", "1", "1", "-1", "--approach", "0", "0", "0"], "non-zero"),
        (["ik", "--position", "1", "1", "-1", "--approach", "0", "0", "-1", "--seed", "1"], "--seed takes 5"),
        (["ik", "--matrix", *["1"] * 16], "bottom row"),
        (["workspace", "--samples", "0"], "--samples must be a whole number from 1 to 1000000"),
        (["workspace", "--approach", "0", "0"], "--approach takes 3 numbers, got 2"),
    ],
)
def test_errors_are_one_line_with_exit_2(capsys, argv, fragment):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith(f"quirobot {argv[0]}: error: ")
    assert fragment in err


def test_argparse_errors_are_one_line_too(capsys):
    code, _, err = run_exit(capsys, "fk", "1", "2", "3", "4", "5", "--feed")
    assert code == 2
    assert err.count("\n") == 1 and "--feed" in err
    code, _, err = run_exit(capsys, "fk", "1", "2", "3", "4", "5", "--bogus")
    assert code == 2
    assert err.count("\n") == 1 and "unrecognized arguments: --bogus" in err


def test_negative_numbers_in_scientific_notation_are_numbers(capsys, model):
    q = [0.5, 1.0, 1.5, 1e-3, -1.5e-17]
    code, out, err = run(capsys, "fk", "0.5", "1", "1.5", "1e-3", "-1.5e-17", "--json")
    assert code == 0, err
    np.testing.assert_array_equal(json.loads(out)["T"], forward_kinematics(q, model))
    code, out, err = run(
        capsys, "ik", "--position", "1", "1", "-1", "--approach", "-1E-3", "-.5e-1", "-1", "--json"
    )
    assert code == 0, err
    code, _, err = run(capsys, "fk", "0", "0", "0", "-inf", "0")
    assert code == 2 and "wrist_yaw is [-inf]" in err


def test_workspace_json_and_plot(capsys, tmp_path):
    plot = tmp_path / "ws.png"
    code, out, _ = run(
        capsys, "workspace", "--approach", "1", "0", "-1", "--samples", "20000", "--plot", str(plot), "--json"
    )
    assert code == 0
    data = json.loads(out)
    assert data["exact_volume_m3"] == 8.0  # 2 m x 2 m x 2 m of prismatic travel (report's limits)
    assert abs(data["volume_m3"] - 8.0) < 4 * data["volume_standard_error_m3"]
    assert plot.read_bytes()[:4] == b"\x89PNG"
    code, out, _ = run(capsys, "workspace", "--samples", "1000")
    assert code == 0 and "m^3" in out


def test_help_of_every_verb(capsys):
    for verb in ("fk", "ik", "workspace"):
        code, out, _ = run_exit(capsys, verb, "--help")
        assert code == 0 and "usage: quirobot " + verb in out


def test_real_process_error_has_no_traceback():
    result = subprocess.run(
        [sys.executable, "-m", "quirobot_cli.cli", "ik", "--matrix", *["0"] * 15],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr == "quirobot ik: error: --matrix takes 16 numbers, got 15\n"
