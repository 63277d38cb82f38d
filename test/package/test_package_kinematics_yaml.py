"""config/kinematics.yaml: sets exactly the parameters kinematics_node declares, with valid values."""

from __future__ import annotations

import ast
from pathlib import Path

import yaml

from quirobot_description.parameters import load_parameters
from quirobot_kinematics.inverse import DEFAULT_ORIENTATION_TOLERANCE
from quirobot_kinematics.model import KinematicModel
from quirobot_kinematics.nodes import kinematics_node
from quirobot_kinematics.service_translation import KinematicsService

ROOT = Path(__file__).resolve().parents[2]


def _declared_parameters() -> set[str]:
    tree = ast.parse(Path(kinematics_node.__file__).read_text())
    return {
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and getattr(node.func, "attr", "") == "declare_parameter"
        and isinstance(node.args[0], ast.Constant)
    }


def test_kinematics_yaml_sets_the_nodes_parameters_with_valid_values():
    config = yaml.safe_load((ROOT / "config" / "kinematics.yaml").read_text())
    (key,) = config
    assert key.endswith(kinematics_node.NODE_NAME)  # matches the node under any namespace
    parameters = config[key]["ros__parameters"]
    assert (
        set(parameters)
        == _declared_parameters()
        == {
            "orientation_mode",
            "orientation_tolerance",
            "parameter_file",
        }
    )
    assert parameters["orientation_tolerance"] == DEFAULT_ORIENTATION_TOLERANCE  # one value, not two
    model = KinematicModel.from_parameters(load_parameters(parameters["parameter_file"] or None))
    service = KinematicsService(model, parameters["orientation_mode"], parameters["orientation_tolerance"])
    assert service.orientation_mode == "full"
