"""The registration file: `quirobot register --output` writes it, task_node reads it (tf2's
world -> patient); the shipped config/registration.yaml (sim.launch.py's) reads back."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from quirobot_cli.cli import main
from quirobot_kinematics.registration import (
    RegistrationFileError,
    read_registration,
    registration_document,
)

SHIPPED = Path(__file__).resolve().parents[2] / "config" / "registration.yaml"


def transform(axis, angle: float, shift) -> np.ndarray:
    """(4, 4) from Rodrigues' formula, written here (independent of the code under test)."""
    k = np.asarray(axis, float) / np.linalg.norm(axis)
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    T = np.eye(4)
    T[:3, :3] = np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * K @ K
    T[:3, 3] = shift
    return T


def test_a_written_transform_reads_back(tmp_path):
    T = transform([1.0, -2.0, 0.5], 2.5, [0.9, 1.1, -1.3])
    path = tmp_path / "registration.yaml"
    path.write_text(yaml.safe_dump(registration_document(T, "test: a known transform")))
    frame = read_registration(path)
    assert (frame.parent, frame.child) == ("world", "patient")
    np.testing.assert_allclose(frame.transform, T, atol=1e-12)


def test_the_quaternion_is_tf2s_x_y_z_w():
    half = 0.5 * 0.4  # a turn of 0.4 rad about z: (0, 0, sin(a/2), cos(a/2))
    document = registration_document(transform([0, 0, 1], 0.4, [0, 0, 0]), "test")
    np.testing.assert_allclose(
        document["transform"]["rotation"]["value"], [0, 0, math.sin(half), math.cos(half)], atol=1e-15
    )


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda d: d["transform"]["translation"].update(unit="mm"), "transform.translation"),
        (lambda d: d["transform"]["rotation"].update(value=[0, 0, 0, 0]), "norm is 0"),
        (lambda d: d["transform"]["rotation"].pop("source"), "transform.rotation"),
        (lambda d: d["transform"]["translation"].update(value=[1.0, 2.0]), "transform.translation"),
        (lambda d: d.update(child_frame="world"), "child_frame"),
        (lambda d: d.update(parent_frame=""), "parent_frame"),
        (lambda d: d.update(schema_version=7), "schema_version"),
    ],
)
def test_a_bad_file_is_refused_naming_the_key(tmp_path, change, named):
    document = registration_document(np.eye(4), "test")
    change(document)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(RegistrationFileError, match=named) as error:
        read_registration(path)
    assert str(path) in str(error.value) and "\n" not in str(error.value)


def test_register_output_writes_the_printed_transform(tmp_path, capsys):
    import json

    path = tmp_path / "out" / "registration.yaml"
    assert main(["register", "--seed", "1", "--json", "--output", str(path)]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["output"] == str(path)
    np.testing.assert_allclose(read_registration(path).transform, document["transform"], atol=1e-12)
    assert "quirobot register --seed 1" in path.read_text()


def test_the_shipped_registration_is_register_seed_1(tmp_path, capsys):
    """sim.launch.py's patient frame: what `quirobot register --seed 1` gives (its source says so)."""
    assert main(["register", "--seed", "1", "--json"]) == 0
    expected = np.array(yaml.safe_load(capsys.readouterr().out)["transform"])
    np.testing.assert_allclose(read_registration(SHIPPED).transform, expected, atol=1e-12)
