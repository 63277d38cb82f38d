"""Feed-forward of the bone's known thrust along the plan (the realistic plant's compensation).

The bone model (models.bone) predicts the thrust the bit meets at each planned sample: depth
below the entry point and feed rate from the planned tip, the chip-formation lag included. Its
reaction on the robot, J(q)^T f with f = -F d at the drill tip (d the drilling direction), is
added to the controller's feed-forward: the drives supply the thrust as it builds, so the wrist
gearboxes' windup and their crossing of the backlash happen with the thrust instead of waiting
for the integrators (measured: see test_realistic_plant, docs/accuracy.md).
"""

from __future__ import annotations

import numpy as np

from quirobot_control.models.bone import BoneParameters, BoneThrust
from quirobot_control.planning.trajectory import JointTrajectory
from quirobot_description.parameters import FEED_INDEX, RobotParameters
from quirobot_kinematics import KinematicModel, forward_kinematics

#: Finite-difference step of the tip Jacobian, m or rad (the tip is smooth: error ~1e-14 relative).
JACOBIAN_STEP = 1e-6


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
    arm, feed = q[:, :FEED_INDEX], q[:, FEED_INDEX]

    def tip_of(joints: np.ndarray) -> np.ndarray:
        poses = forward_kinematics(joints, kinematics)
        return poses[:, :3, 3] + poses[:, :3, 2] * feed[:, None]

    tip = tip_of(arm)
    force = -planned_thrust(trajectory, tip, entry, direction, bone)[:, None] * direction  # (N, 3)
    efforts = np.zeros_like(q)
    for i in range(FEED_INDEX):
        shifted = arm.copy()
        shifted[:, i] += JACOBIAN_STEP
        efforts[:, i] = np.einsum("nk,nk->n", (tip_of(shifted) - tip) / JACOBIAN_STEP, force)
    axis = forward_kinematics(arm, kinematics)[:, :3, 2]
    efforts[:, FEED_INDEX] = np.einsum("nk,nk->n", axis, force)
    return efforts
