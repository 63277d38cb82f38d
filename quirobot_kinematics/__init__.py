"""Closed-form kinematics of QUIROBOT (ROS-free): FK, IK, Jacobians, resolved rate, workspace.

A calibration file (`kinematic_model(calibration=...)`, written by `quirobot calibrate`) makes
FK and IK those of the actual machine (geometric: the nominal chain with its identified errors).

Model facts (report: Denavit-Hartenberg table and closed form), q = (d1, d2, d3, theta4, theta5):

    T(q) = [[s4,  c4*s5,  c4*c5,  d1 + l5*c4*c5],
            [c4, -s4*s5, -s4*c5,  d2 - l5*s4*c5],
            [0,   c5,    -s5,    -d3 - l4 - l5*s5],
            [0,   0,      0,      1]]

Tool z (the third column, a) is the approach / drilling direction; the drill tip is at
tool0 + feed * a.

`fk`, `ik` and `jacobian` are the same functions with the model of the shipped parameter file
by default (`kinematic_model()`); pass `model=kinematic_model("other.yaml")` for another file.

Modules: model, forward, inverse, jacobian, differential (resolved rate), rotations, workspace;
service_translation (MoveIt's FK/IK services, ROS-free); nodes (kinematics_node, the ROS adapter).
Built on quirobot_description only.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from quirobot_kinematics.forward import forward_kinematics, link_frames
from quirobot_kinematics.inverse import ApproachTarget, IKError, inverse_kinematics, inverse_kinematics_all
from quirobot_kinematics.jacobian import geometric_jacobian
from quirobot_kinematics.model import KinematicModel, KinematicsError

__all__ = [
    "ApproachTarget",
    "IKError",
    "KinematicModel",
    "KinematicsError",
    "fk",
    "forward_kinematics",
    "geometric_jacobian",
    "ik",
    "inverse_kinematics",
    "inverse_kinematics_all",
    "jacobian",
    "kinematic_model",
    "link_frames",
]


def kinematic_model(
    parameter_file: str | Path | None = None, calibration: str | Path | None = None
) -> KinematicModel:
    """The KinematicModel of `parameter_file` (default: the shipped parameter file), with the
    geometric errors identified in `calibration` (a `quirobot calibrate` file) if given: each
    within that parameter file's tolerance band, else CalibrationFileError naming it."""
    from quirobot_description import robot_parameters

    params = robot_parameters(parameter_file)
    model = KinematicModel.from_parameters(params)
    if calibration is None:
        return model
    from quirobot_description.geometric_errors import read_calibration

    return model.calibrated(read_calibration(calibration, params.geometric))


def fk(q: object, feed: float = 0.0, *, model: KinematicModel | None = None) -> np.ndarray:
    """(4, 4) pose of tool0 (the drill tip at feed `feed` m) for q (5,): `forward_kinematics`."""
    return forward_kinematics(q, model if model is not None else kinematic_model(), feed)


def ik(
    target: object,
    *,
    seed: object = None,
    feed: float = 0.0,
    respect_limits: bool = True,
    model: KinematicModel | None = None,
) -> np.ndarray:
    """q (5,) nearest `seed` reaching `target`, a (4, 4) pose or an ApproachTarget: `inverse_kinematics`."""
    return inverse_kinematics(
        target, model if model is not None else kinematic_model(), seed, respect_limits, feed
    )


def jacobian(q: object, feed: float = 0.0, *, model: KinematicModel | None = None) -> np.ndarray:
    """(6, 5) world-frame geometric Jacobian [v; omega] of tool0 (or the drill tip): `geometric_jacobian`."""
    return geometric_jacobian(q, model if model is not None else kinematic_model(), feed)
