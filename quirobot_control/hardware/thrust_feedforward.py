"""Feed-forward of the bone's known thrust, period by period (the realistic plant's compensation).

The imaged bone (models.bone, sent with the hole: safety.hole_context.HoleContext.bone) predicts
the thrust the bit meets at each period's commanded tip: depth below the entry point and feed
rate, the chip-formation lag included. Its reaction on the robot, J(q)^T f with f = -F d at the
drill tip (d the drilling direction), is added to the controller's feed-forward: the drives supply
the thrust as it builds, so the wrist gearboxes' windup and their crossing of the backlash happen
with the thrust instead of waiting for the integrators (measured: see test_realistic_plant,
docs/accuracy.md). The drive bridge runs it (bridge.drive_bridge: a hole with a bone model and
the bridge's thrust_feedforward); simulation.thrust_feedforward gives the same along a whole plan.
"""

from __future__ import annotations

import numpy as np

from quirobot_control.models.bone import BoneParameters, BoneThrust
from quirobot_description.geometric_errors import GeometricErrors
from quirobot_description.parameters import JOINT_NAMES, DrillParameters, RobotParameters
from quirobot_kinematics import KinematicModel, forward_kinematics
from quirobot_kinematics.forward import tool_axis_single

#: Finite-difference step of the tip Jacobian, m or rad (the tip is smooth: error ~1e-14 relative).
JACOBIAN_STEP = 1e-6


class ThrustFeedForward:
    """The same feed-forward cycle by cycle, from each period's commanded joints (what a drive
    bridge receives from the trajectory controllers) instead of the whole plan: the bone model's
    thrust at the commanded tip (depth below `entry` along `direction`, its rate by backward
    difference over `dt`), balanced by J(q)^T f. A drive bridge's compensation on the realistic
    plant, as simulation.thrust_feedforward is the closed-loop simulation's."""

    def __init__(
        self,
        params: RobotParameters,
        entry: np.ndarray,
        direction: np.ndarray,
        bone: BoneParameters,
        dt: float,
        calibration: GeometricErrors | None = None,
    ) -> None:
        self.kinematics = KinematicModel.from_parameters(params).calibrated(calibration)
        self.entry = np.asarray(entry, dtype=float)
        self.direction = np.asarray(direction, dtype=float)
        self.model = BoneThrust(bone)
        self.dt = dt
        self._depth: float | None = None

    def update(self, q: np.ndarray) -> np.ndarray:
        """(6,) joint efforts (N or N*m, axes_for("drill") order) for the commanded joints q (6,) of
        this period."""
        q = np.asarray(q, dtype=float)
        arm, feed = len(JOINT_NAMES), float(q[DrillParameters.feed_index])
        nominal = self.kinematics.errors is None
        # tips_and_axes of the one pose, in plain floats on the nominal chain (tool_axis_single: the
        # numbers of forward_kinematics' matrix without building it; the batch FK's numpy calls on
        # one row cost ~60 us of every period).
        joints = q[:arm].tolist()
        if nominal:
            origin, axis_list = tool_axis_single(joints, self.kinematics)
        else:
            pose = forward_kinematics(q[:arm], self.kinematics)
            origin, axis_list = pose[:3, 3].tolist(), pose[:3, 2].tolist()
        tip = np.array([o + a * feed for o, a in zip(origin, axis_list, strict=True)])
        depth = float((tip - self.entry) @ self.direction)
        rate = 0.0 if self._depth is None else (depth - self._depth) / self.dt
        self._depth = depth
        thrust = self.model.update(self.dt, depth, rate)
        if thrust == 0.0:  # out of the bone: no Jacobian to evaluate (most of a goal's periods)
            return np.zeros(q.shape[0])
        force = -thrust * self.direction[None, :]
        # balancing_efforts' Jacobian of the one pose: its five shifted poses by the scalar FK on
        # the nominal chain, in plain floats (the batch FK's numpy sin and cos may round
        # otherwise). The calibrated chain's FK is numpy either way: the five in one call (a third
        # of the time), each the numbers of its own call to the bit (test_thrust_feedforward).
        if nominal:
            shifted_tips = np.empty((arm, 3))
            for i in range(arm):
                row = joints.copy()
                row[i] = joints[i] + JACOBIAN_STEP
                shifted_origin, shifted_axis = tool_axis_single(row, self.kinematics)
                shifted_tips[i] = [o + a * feed for o, a in zip(shifted_origin, shifted_axis, strict=True)]
        else:
            shifted = np.repeat(q[None, :arm], arm, axis=0)  # (5, 5): joint i shifted in row i
            shifted[np.arange(arm), np.arange(arm)] += JACOBIAN_STEP
            poses = forward_kinematics(shifted, self.kinematics)
            shifted_tips = poses[:, :3, 3] + poses[:, :3, 2] * feed
        efforts = np.zeros(q.shape[0])
        efforts[:arm] = _arm_efforts(tip[None, :], force, shifted_tips[:, None, :])[0]
        # The feed's effort, axis . force, summed in its written order: what _balance's einsum
        # gives for a strided axis (a pose matrix's column, as this took it before the plain
        # floats); for a contiguous one it pairs the terms otherwise, one unit in the last place apart.
        (a0, a1, a2), (f0, f1, f2) = axis_list, force[0].tolist()
        efforts[DrillParameters.feed_index] = a0 * f0 + a1 * f1 + a2 * f2
        return efforts


def tips_and_axes(q: np.ndarray, kinematics: KinematicModel) -> tuple[np.ndarray, np.ndarray]:
    """((N, 3) m, (N, 3) unit) for joints q (N, 6): the drill tip (tool0 moved along its z axis by
    the feed) and that axis, in the world."""
    poses = forward_kinematics(q[:, : len(JOINT_NAMES)], kinematics)
    axis = poses[:, :3, 2]
    return poses[:, :3, 3] + axis * q[:, DrillParameters.feed_index, None], axis


def balancing_efforts(
    q: np.ndarray, tip: np.ndarray, axis: np.ndarray, force: np.ndarray, kinematics: KinematicModel
) -> np.ndarray:
    """(N, 6) joint efforts J(q)^T f balancing the world force f (N, 3) N at the tips (N, 3) of q
    (N, 6), whose tool axes are `axis` (N, 3): the arm's columns by finite differences
    (JACOBIAN_STEP, the shifted poses in one batch), the feed's along the tool axis."""
    n, arm = len(q), len(JOINT_NAMES)
    shifted = np.repeat(q[None, :, :], arm, axis=0)  # (5, N, 6): joint i shifted in [i]
    for i in range(arm):
        shifted[i, :, i] += JACOBIAN_STEP
    shifted_tips = tips_and_axes(shifted.reshape(-1, q.shape[1]), kinematics)[0].reshape(arm, n, 3)
    return _balance(q, tip, axis, force, shifted_tips)


def _balance(
    q: np.ndarray, tip: np.ndarray, axis: np.ndarray, force: np.ndarray, shifted_tips: np.ndarray
) -> np.ndarray:
    """`balancing_efforts` from the tips of the shifted poses (5, N, 3): joint i shifted in [i]."""
    efforts = np.zeros_like(q)
    efforts[:, : len(JOINT_NAMES)] = _arm_efforts(tip, force, shifted_tips)
    efforts[:, DrillParameters.feed_index] = np.einsum("nk,nk->n", axis, force)
    return efforts


def _arm_efforts(tip: np.ndarray, force: np.ndarray, shifted_tips: np.ndarray) -> np.ndarray:
    """(N, 5) the arm's columns of J(q)^T f: the tips (N, 3) and the force (N, 3) N with the tips
    of the shifted poses (5, N, 3), joint i shifted in [i]."""
    return np.einsum("ink,nk->ni", (shifted_tips - tip) / JACOBIAN_STEP, force)
