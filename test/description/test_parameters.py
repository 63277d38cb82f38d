"""The parameter file: every number has a source, bad files are refused by name."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from quirobot_description.parameters import (
    DEFAULT_PARAMETER_FILE,
    JOINT_NAMES,
    ParameterError,
    load_parameters,
)


@pytest.fixture
def raw() -> dict:
    return yaml.safe_load(DEFAULT_PARAMETER_FILE.read_text())


def write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def numeric_leaves(node, key=""):
    """Yield (dotted key, leaf) for every {value, ...} leaf and every bare number in the YAML."""
    if isinstance(node, dict):
        if "value" in node:
            yield key, node
            return
        for child_key, child in node.items():
            yield from numeric_leaves(child, f"{key}.{child_key}" if key else child_key)
    elif isinstance(node, (int, float)) and not isinstance(node, bool) and key not in ("schema_version",):
        yield key, node


def test_every_number_in_the_file_has_a_unit_and_a_source(raw):
    leaves = list(numeric_leaves(raw))
    assert len(leaves) > 100
    for key, leaf in leaves:
        if key.endswith("colour") or ".colour" in key:
            continue
        assert isinstance(leaf, dict), f"{key} is a bare number without unit and source"
        assert leaf.get("unit"), f"{key} has no unit"
        source = leaf.get("source", "")
        assert source.startswith(("report", "computed", "design assumption", "datasheet")) or "(" in source, (
            f"{key}: source {source!r} does not say report, computed, datasheet or design assumption"
        )


def test_loader_records_every_quantity_it_reads(raw):
    parameters = load_parameters()
    file_keys = {key for key, leaf in numeric_leaves(raw) if isinstance(leaf, dict)}
    assert set(parameters.quantities) == file_keys


def test_joint_order_and_limits_follow_the_report():
    parameters = load_parameters()
    assert tuple(j.name for j in parameters.joints) == JOINT_NAMES
    assert [j.report_symbol for j in parameters.joints] == ["d1", "d2", "d3", "theta4", "theta5"]
    np.testing.assert_allclose(parameters.lower_limits, [0, 0, 0, 0, math.radians(-75)])
    np.testing.assert_allclose(parameters.upper_limits, [2, 2, 2, 2 * math.pi, math.radians(225)])
    # Report ch.6: force = K_T * I_max * ratio = 360, 270, 570 N; 63 N*m for the wrist.
    np.testing.assert_allclose(parameters.effort_limits, [360, 270, 570, 63, 63], rtol=1e-3)
    np.testing.assert_allclose(parameters.velocity_limits, [1, 1, 1, 1.0472, 1.0472], rtol=1e-4)


def test_electrical_time_constants_match_the_report():
    parameters = load_parameters()
    # The issue quotes 1.7 ms (prismatic) and 0.19 ms (revolute) for L / R.
    assert parameters.motors["gantry_motor"].electrical_time_constant == pytest.approx(1.7e-3, rel=0.02)
    assert parameters.motors["wrist_motor"].electrical_time_constant == pytest.approx(0.19e-3, rel=0.03)


def test_link_lengths_agree_with_the_kinematic_lengths():
    parameters = load_parameters()
    assert parameters.link("wrist_yaw_link").length == parameters.l4
    assert parameters.link("wrist_pitch_link").length == parameters.l5


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["joints"]["gantry_x"]["lower"].update(value=3.0), "lower limit 3.0 must be below"),
        (
            lambda d: d["joints"]["gantry_y"]["velocity"].update(value=float("nan")),
            "joints.gantry_y.velocity",
        ),
        (lambda d: d["links"]["z_ram"]["mass"].update(value=-1.0), "links.z_ram.mass: must be > 0"),
        (lambda d: d["links"]["z_ram"]["mass"].update(source=""), "links.z_ram.mass: has no source"),
        (lambda d: d["links"]["z_ram"]["mass"].update(unit=None), "links.z_ram.mass: needs a unit"),
        (lambda d: d["kinematics"]["l4"].update(unit=" "), "kinematics.l4: needs a unit"),
        (lambda d: d["motors"]["gantry_motor"].pop("resistance"), "motors.gantry_motor.resistance: missing"),
        (lambda d: d["joints"]["wrist_yaw"].update(motor="no_such_motor"), "motors.no_such_motor: missing"),
        (lambda d: d["joints"]["wrist_yaw"].update(type="prismatic"), "must be revolute"),
        (lambda d: d["kinematics"]["l4"].update(value=0.5), "differs from kinematics.l4"),
        (
            lambda d: d["links"]["wrist_pitch_link"]["origin"].update(value=[0.2, 0.0, 0.0]),
            "links.wrist_pitch_link.origin: [0.2, 0.0, 0.0] m is not mid-link [0.1, 0.0, 0.0] m",
        ),
        (
            lambda d: d["links"]["wrist_yaw_link"]["origin"].update(value=[0.0, 0.0, 0.2]),
            "links.wrist_yaw_link.origin: [0.0, 0.0, 0.2] m is not mid-link",
        ),
        (lambda d: d["transmissions"]["gantry_x_screw"]["efficiency"].update(value=1.5), "must be in (0, 1]"),
        (
            lambda d: d["links"]["x_carriage"]["size"].update(value=[1.0, 2.0]),
            "must be a list of 3 finite numbers",
        ),
        (lambda d: d["links"]["x_carriage"].update(colour=[2, 0, 0, 1]), "RGBA"),
    ],
)
def test_invalid_values_are_refused_by_name(tmp_path, raw, edit, message):
    edit(raw)
    with pytest.raises(
        ParameterError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
    ):
        load_parameters(write(tmp_path, raw))


def test_malformed_and_missing_files_are_refused(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("joints: [unclosed\n")
    with pytest.raises(ParameterError, match="not valid YAML"):
        load_parameters(bad)
    with pytest.raises(ParameterError, match="cannot read"):
        load_parameters(tmp_path / "absent.yaml")
    bad.write_text("- just a list\n")
    with pytest.raises(ParameterError, match="mapping at the top level"):
        load_parameters(bad)


def test_parameter_error_is_a_value_error():
    assert issubclass(ParameterError, ValueError)
