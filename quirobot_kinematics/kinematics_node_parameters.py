"""kinematics_node's ROS parameters, each declared once (`quirobot_description.node_parameters`).

kinematics_node declares them through `quirobot_description.ros_parameters.declare_parameters`;
docs/node_parameters.md's table and config/kinematics.yaml's keys and values are checked against
this one. orientation_mode and orientation_tolerance may change at run time (the node rebuilds its
service); parameter_file is read at start-up only.
"""

from __future__ import annotations

import math

from quirobot_description.node_parameters import NodeParameter, NodeSchema
from quirobot_kinematics.inverse import DEFAULT_ORIENTATION_TOLERANCE
from quirobot_kinematics.service_translation import ORIENTATION_MODES

__all__ = ["KINEMATICS_NODE"]

KINEMATICS_NODE = NodeSchema(
    "kinematics_node",
    (
        NodeParameter(
            "orientation_mode",
            "string",
            ORIENTATION_MODES[0],
            "full: an IK pose's roll about the tool axis must be reachable as given (tool x horizontal); "
            "approach: the roll is free, only the approach direction counts.",
            choices=ORIENTATION_MODES,
            read_only=False,
        ),
        NodeParameter(
            "orientation_tolerance",
            "double",
            DEFAULT_ORIENTATION_TOLERANCE,
            'How far tool x may leave the horizontal plane in "full" mode (a numerical tolerance, '
            "below pi/2).",
            unit="rad",
            low=0.0,
            high=math.pi / 2,
            read_only=False,
        ),
        NodeParameter(
            "parameter_file",
            "string",
            "",
            "The robot parameter file (YAML). Empty: the one installed with the package.",
        ),
    ),
)
