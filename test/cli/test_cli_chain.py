"""Each verb's output feeds the next: export -> check, fk -> ik --matrix (through a real shell)."""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

from quirobot_cli.cli import main
from quirobot_description.parameters import load_parameters
from quirobot_kinematics.forward import forward_kinematics
from quirobot_kinematics.model import KinematicModel

#: A pose inside the joint limits (d1 d2 d3 in m, theta4 theta5 in rad).
Q = [0.5, 0.7, 0.3, 0.2, 0.4]


@pytest.fixture(scope="module")
def model() -> KinematicModel:
    return KinematicModel.from_parameters(load_parameters())


@pytest.mark.parametrize("tool", ["drill", "arthroscope"])
def test_check_passes_what_export_writes(tool, tmp_path, capsys):
    # export gives the frame links (tool0, drill_tip, camera frames) an all-zero <inertial> for
    # PyBullet; they are frames, not bodies, and check must take them as such.
    assert main(["export", str(tmp_path), "--tool", tool]) == 0
    capsys.readouterr()
    code = main(["check", "--urdf", str(tmp_path / "robot.urdf"), "--samples", "50"])
    assert code == 0, capsys.readouterr().out


def _exported(tmp_path, capsys) -> str:
    assert main(["export", str(tmp_path)]) == 0
    capsys.readouterr()
    return (tmp_path / "robot.urdf").read_text()


def _check_inertial(text: str, tmp_path, capsys) -> str:
    path = tmp_path / "edited.urdf"
    path.write_text(text)
    assert main(["check", "--urdf", str(path), "--samples", "10"]) == 1
    return capsys.readouterr().out


def _link(text: str, name: str) -> tuple[int, int]:
    start = text.index(f'<link name="{name}"')
    return start, text.index("</link>", start)


def test_a_moving_link_without_mass_is_still_refused(tmp_path, capsys):
    text = _exported(tmp_path, capsys)
    start, end = _link(text, "x_carriage")
    body = text[start:end]
    mass = body[body.index("<mass") : body.index("/>", body.index("<mass")) + 2]
    text = text[:start] + body.replace(mass, '<mass value="0"/>') + text[end:]
    out = _check_inertial(text, tmp_path, capsys)
    assert "link 'x_carriage': mass 0 kg must be > 0" in out, out


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda body: body.replace('ixx="0"', 'ixx="1e-3"'), "link 'tool0': mass 0 kg must be > 0"),
        (
            lambda body: body.replace(
                "<inertial>", '<visual><geometry><sphere radius="0.01"/></geometry></visual><inertial>'
            ),
            "link 'tool0': mass 0 kg must be > 0",
        ),
    ],
    ids=["inertia-without-mass", "geometry-without-mass"],
)
def test_a_frame_link_with_a_body_but_no_mass_is_refused(edit, message, tmp_path, capsys):
    text = _exported(tmp_path, capsys)
    start, end = _link(text, "tool0")
    text = text[:start] + edit(text[start:end]) + text[end:]
    out = _check_inertial(text, tmp_path, capsys)
    assert message in out, out


def _shell(command: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120)


def test_the_matrix_fk_prints_is_what_ik_matrix_takes_through_a_shell():
    assert shutil.which("quirobot"), "the quirobot console script is not installed (pip install -e .)"
    joints = " ".join(map(repr, Q))
    result = _shell(f"set -o pipefail; quirobot ik --json --matrix $(quirobot fk {joints} | tail -n 4)")
    assert result.returncode == 0, result.stderr
    np.testing.assert_allclose(json.loads(result.stdout)["q"], Q, atol=1e-9)


def test_fk_text_round_trips_through_ik_everywhere_in_the_limits(model, capsys):
    rng = np.random.default_rng(5)
    lower, upper = np.array(model.lower), np.array(model.upper)
    for q in rng.uniform(lower, upper, size=(40, 5)):
        assert main(["fk", *(repr(float(v)) for v in q)]) == 0
        matrix = capsys.readouterr().out.split()[-16:]
        assert main(["ik", "--json", "--seed", *(repr(float(v)) for v in q), "--matrix", *matrix]) == 0
        np.testing.assert_allclose(json.loads(capsys.readouterr().out)["q"], q, atol=1e-9)


def _rounded(q, model, decimals: int) -> list[str]:
    return [f"{v:.{decimals}f}" for v in forward_kinematics(q, model).ravel()]


def test_a_rounded_rotation_is_solved_as_the_nearest_rotation(model, capsys):
    # 6 decimals (fk's earlier printout) and 4 decimals: R^T R is off by ~1e-6 and ~1e-4.
    for decimals, tolerance in ((6, 2e-6), (4, 2e-4)):
        assert main(["ik", "--json", "--matrix", *_rounded(Q, model, decimals)]) == 0, capsys.readouterr().err
        np.testing.assert_allclose(json.loads(capsys.readouterr().out)["q"], Q, atol=tolerance)


def test_a_clearly_non_orthonormal_rotation_is_refused(model, capsys):
    assert main(["ik", "--matrix", *_rounded(Q, model, 2)]) == 2
    err = capsys.readouterr().err
    assert "--matrix: the rotation is not orthonormal" in err and "accepted up to 0.001" in err, err
    reflection = forward_kinematics(Q, model)
    reflection[:3, 0] *= -1.0
    assert main(["ik", "--matrix", *(repr(float(v)) for v in reflection.ravel())]) == 2
    assert "reflection" in capsys.readouterr().err
