"""Every number in the URDF traces to the parameter file: perturb the file, every number moves.

A tmp copy of the parameter file gets every number of the sections the description reads nudged
by a distinct amount; expanding with it must change every number of the URDF except structural
constants (0, +-1, +-pi/2, pi: unit axes, zero offsets, right-angle rotations, opaque alpha).
A literal hidden in the xacro would stay put and fail the test.
"""

from __future__ import annotations

import contextlib
import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import yaml

from quirobot_description.parameters import DEFAULT_PARAMETER_FILE, ParameterError, load_parameters
from quirobot_description.urdf import TOOLS, robot_description

SECTIONS = ("kinematics", "joints", "links", "structure", "motors", "transmissions", "tools")
STRUCTURAL = (0.0, 1.0, -1.0, math.pi / 2, -math.pi / 2, math.pi)


def _perturb(node, rng, key=""):
    """Nudge every number below `node` in place (quantity leaves and colour lists)."""
    if isinstance(node, dict):
        if {"value", "unit", "source"} <= set(node):
            node["value"] = _nudge(node["value"], rng, key)
            return
        for name, child in node.items():
            if name == "colour":
                node[name] = [min(1.0, 0.9 * c + 0.05 * rng.uniform(0.2, 1.0)) for c in child]
            else:
                _perturb(child, rng, f"{key}.{name}")


def _nudge(value, rng, key):
    if isinstance(value, list):
        return [_nudge(v, rng, key) for v in value]
    shrink = "efficiency" in key  # must stay <= 1
    u = rng.uniform(0.01, 0.03)
    if value == 0:
        return u * 0.01
    return value * (1 - u if shrink else 1 + u)


def _numbers(text: str) -> list[tuple[str, float]]:
    """(where, number) for every numeric token in attributes and texts of the URDF, in order."""
    found = []
    for element in ET.fromstring(text).iter():
        sources = [(f"{element.tag}@{k}", v) for k, v in sorted(element.attrib.items())]
        sources.append((f"{element.tag} text", element.text or ""))
        for where, value in sources:
            for token in value.split():
                with contextlib.suppress(ValueError):  # words are not numbers
                    found.append((where, float(token)))
    return found


@pytest.fixture(scope="module")
def perturbed_file(tmp_path_factory):
    raw = yaml.safe_load(DEFAULT_PARAMETER_FILE.read_text())
    rng = np.random.default_rng(7)
    for section in SECTIONS:
        _perturb(raw[section], rng, section)
    # the loader ties links 4 and 5 to l4 and l5 (report DH table, centre of mass at mid-link)
    l4, l5 = raw["kinematics"]["l4"]["value"], raw["kinematics"]["l5"]["value"]
    raw["links"]["wrist_yaw_link"]["length"]["value"] = l4
    raw["links"]["wrist_yaw_link"]["origin"]["value"] = [0.0, 0.0, -l4 / 2]
    raw["links"]["wrist_pitch_link"]["length"]["value"] = l5
    raw["links"]["wrist_pitch_link"]["origin"]["value"] = [l5 / 2, 0.0, 0.0]
    path = tmp_path_factory.mktemp("params") / "perturbed.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    load_parameters(path)  # still a valid file
    return path


@pytest.mark.parametrize("tool", TOOLS)
def test_every_number_in_the_urdf_moves_with_the_parameter_file(perturbed_file, tool):
    # primitives: the shipped visual meshes are files, drawn for the shipped mesh dimensions only
    # (test_visual_meshes checks them against the parameter file)
    shipped = _numbers(robot_description(tool, "gazebo", meshes=False))
    moved = _numbers(robot_description(tool, "gazebo", parameter_file=perturbed_file))
    assert [w for w, _ in shipped] == [w for w, _ in moved]
    assert len(shipped) > 300
    literal = [
        (where, a)
        for (where, a), (_, b) in zip(shipped, moved, strict=True)
        if a == b and not any(math.isclose(a, s, abs_tol=1e-12) for s in STRUCTURAL)
    ]
    assert literal == [], f"numbers that do not come from the parameter file: {literal}"


def test_one_value_changes_the_urdf(tmp_path):
    text = DEFAULT_PARAMETER_FILE.read_text()
    old = '    mass: {value: 5.0, unit: kg, source: "report ch.5: each carriage 5 kg, motor included"}'
    assert text.count(old) == 3
    path = tmp_path / "heavier.yaml"
    path.write_text(text.replace(old, old.replace("5.0", "6.5"), 1))  # the first: x_carriage
    root = ET.fromstring(robot_description(parameter_file=path))
    link = next(e for e in root.iter("link") if e.get("name") == "x_carriage")
    assert float(link.find("inertial/mass").get("value")) == 6.5


def test_malformed_parameter_file_is_a_parameter_error(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(DEFAULT_PARAMETER_FILE.read_text().replace("value: 0.4\n", "value: .nan\n", 1))
    with pytest.raises(ParameterError, match="kinematics.l4"):
        robot_description(parameter_file=path)
