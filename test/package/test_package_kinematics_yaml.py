"""config/kinematics.yaml: sets exactly the parameters kinematics_node declares, with valid values."""

from __future__ import annotations

from pathlib import Path

import yaml

from quirobot_description.parameters import load_parameters
from quirobot_kinematics.inverse import DEFAULT_ORIENTATION_TOLERANCE
from quirobot_kinematics.kinematics_node_parameters import KINEMATICS_NODE
from quirobot_kinematics.model import KinematicModel
from quirobot_kinematics.nodes import kinematics_node
from quirobot_kinematics.service_translation import KinematicsService

ROOT = Path(__file__).resolve().parents[2]


def test_kinematics_yaml_sets_the_nodes_parameters_with_valid_values():
    config = yaml.safe_load((ROOT / "config" / "kinematics.yaml").read_text())
    (key,) = config
    assert key.endswith(kinematics_node.NODE_NAME)  # matches the node under any namespace
    parameters = config[key]["ros__parameters"]
    # The node declares its schema's parameters (test_node_parameter_declarations.py).
    assert (
        set(parameters)
        == set(KINEMATICS_NODE.names)
        == {
            "orientation_mode",
            "orientation_tolerance",
            "parameter_file",
        }
    )
    assert parameters == KINEMATICS_NODE.defaults()  # the file repeats the defaults, no other value
    assert parameters["orientation_tolerance"] == DEFAULT_ORIENTATION_TOLERANCE  # one value, not two
    for name, value in parameters.items():
        KINEMATICS_NODE[name].check(value)
    model = KinematicModel.from_parameters(load_parameters(parameters["parameter_file"] or None))
    service = KinematicsService(model, parameters["orientation_mode"], parameters["orientation_tolerance"])
    assert service.orientation_mode == "full"
