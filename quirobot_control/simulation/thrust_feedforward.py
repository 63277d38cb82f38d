"""Feed-forward of the bone's known thrust along a whole plan (the closed-loop simulation's).

The same model and balancing as the drive bridge's period-by-period compensation
(hardware.thrust_feedforward.ThrustFeedForward), evaluated on every planned sample at once.
"""

from __future__ import annotations

import numpy as np

from quirobot_control.hardware.thrust_feedforward import balancing_efforts, tips_and_axes
from quirobot_control.models.bone import BoneParameters, BoneThrust
from quirobot_control.planning.trajectory import JointTrajectory
from quirobot_description.parameters import RobotParameters
from quirobot_kinematics import KinematicModel


def planned_thrust(
    trajectory: JointTrajectory,
    tip: np.ndarray,
    entry: np.ndarray,
    direction: np.ndarray,
    bone: BoneParameters,
) -> np.ndarray:
    """(N,) thrust (N) the bone model predicts along the planned tip (N, 3) m, sampled at trajectory.dt."""
    depth = (tip - entry) @ direction
    rate = np.gradient(depth, trajectory.dt) if len(depth) > 1 else np.zeros_like(depth)
    model = BoneThrust(bone)
    return np.array([model.update(trajectory.dt, d, v) for d, v in zip(depth, rate, strict=True)])


def thrust_feedforward(
    params: RobotParameters,
    trajectory: JointTrajectory,
    entry: np.ndarray,
    direction: np.ndarray,
    bone: BoneParameters,
) -> np.ndarray:
    """(N, 6) joint efforts (N or N*m) that balance the predicted thrust along the plan."""
    kinematics = KinematicModel.from_parameters(params)
    q = trajectory.positions
    tip, axis = tips_and_axes(q, kinematics)
    force = -planned_thrust(trajectory, tip, entry, direction, bone)[:, None] * direction  # (N, 3)
    return balancing_efforts(q, tip, axis, force, kinematics)
