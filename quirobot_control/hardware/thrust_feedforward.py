"""Feed-forward of the bone's known thrust, period by period (the realistic plant's compensation).

The imaged bone (models.bone, sent with the hole: safety.hole_context.HoleContext.bone) predicts
the thrust the bit meets at each period's commanded tip: depth below the entry point and feed
rate, the chip-formation lag included. Its reaction on the robot, J(q)^T f with f = -F d at the
drill tip (d the drilling direction), is added to the controller's feed-forward: the drives supply
the thrust as it builds, so the wrist gearboxes' windup and their crossing of the backlash happen
with the thrust instead of waiting for the integrators (measured: see test_realistic_plant,
docs/accuracy.md). The drive bridge runs it (bridge.drive_bridge: a hole with a bone model and
the bridge's thrust_feedforward); simulation.thrust_feedforward gives the same along a whole plan.

Every control period's update on the nominal chain (six forward kinematics, the bone model, the
Jacobian's product) is a tenth of an accuracy sample interpreted. So it has a compiled twin in the
C extension `_feedforward_kernel` (feedforward_kernel.c): the same operations in the same order on
doubles, numpy's two sums taken as numpy takes them here (`_numpy_sums_as_the_kernel`), the same
numbers bit for bit (test_feedforward_kernel.py). A calibrated chain, a non-finite joint, a numpy
that sums otherwise or a machine where it was not built (no C compiler or Python headers) runs
`update_in_python`. `COMPILED` says whether it was built, `KERNEL_RUNS` whether update uses it.
The drive bridge's drilling monitor takes the tip's depth from the same kernel where it runs
(`compiled_tip_depth`, `tip_depth_constants`).
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


def _numpy_sums_as_the_kernel(kernel) -> bool:
    """Whether numpy here takes a 3-vector's dot and update_in_python's einsum sum as the kernel does
    (feedforward_kernel.c: OpenBLAS's x86-64 dot, fused multiply-adds in order; the einsum's two
    SIMD lanes), on vectors where other orders differ in the last bit."""
    rng = np.random.default_rng(36)
    for a, b in rng.normal(size=(256, 2, 3)) * 10.0 ** rng.integers(-6, 3, size=(256, 2, 3)):
        dot = float(a @ b)
        einsum = float(np.einsum("ink,nk->ni", a[None, None, :], b[None, :])[0, 0])
        if kernel.sums(a.tolist(), b.tolist()) != (dot, einsum):
            return False
    return True


try:
    # (From the package, not the module path: the import rules' graph knows no compiled module.)
    from quirobot_control.hardware import _feedforward_kernel

    #: Whether the compiled twin is built here.
    COMPILED = True
except ImportError:  # not built here: no C compiler or no Python headers at install
    _feedforward_kernel = None
    COMPILED = False

#: Whether update runs the compiled twin on the nominal chain: built, and numpy sums as it does
#: (False: update_in_python always).
KERNEL_RUNS = COMPILED and _numpy_sums_as_the_kernel(_feedforward_kernel)

#: (constants, q) -> the drill tip's depth (m) past the entry along the hole, bit for bit numpy's
#: (tip - entry) @ direction of virtual_fixtures.tool_points_one's tip, or None where the Python
#: must answer (q not a list of six floats, a non-finite joint or depth); constants from
#: `tip_depth_constants` only. None where the kernel does not run.
compiled_tip_depth = _feedforward_kernel.tip_depth if KERNEL_RUNS else None


def tip_depth_constants(model: KinematicModel, entry, direction) -> tuple[float, ...] | None:
    """`compiled_tip_depth`'s constants for the tip on `model` past `entry` (3,) m along
    `direction` (3,), or None where it does not apply: the kernel does not run, a calibrated chain,
    vectors numpy would not take as they are as (3,) float64 (the caller takes numpy's then)."""
    entry, direction = np.asarray(entry), np.asarray(direction)
    if compiled_tip_depth is None or model.errors is not None:
        return None
    if any(v.dtype != np.float64 or v.shape != (3,) for v in (entry, direction)):
        return None
    return (float(model.l4), float(model.l5), *entry.tolist(), *direction.tolist())


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
        # The compiled update's constants (feedforward_kernel.c), None where it does not apply. The
        # bone model's force and scale (a fault may change the scale) are read at each update.
        self._constants: tuple[float, ...] | None = None
        if KERNEL_RUNS and self.kinematics.errors is None:
            chain = self.kinematics
            constants = (
                chain.l4,
                chain.l5,
                *self.entry.tolist(),
                *self.direction.tolist(),
                dt,
                JACOBIAN_STEP,
            )
            self._constants = tuple(float(value) for value in constants)

    def update(self, q: np.ndarray) -> np.ndarray:
        """(6,) joint efforts (N or N*m, axes_for("drill") order) for the commanded joints q (6,) of
        this period: update_in_python's, compiled where it can be."""
        q = np.asarray(q, dtype=float)
        if self._constants is not None:
            bone = self.model
            result = _feedforward_kernel.update(
                self._constants, bone.law, q.tolist(), self._depth, bone.force, bone.scale
            )
            if result is not None:
                self._depth, bone.force, efforts = result
                return np.array(efforts)
        return self.update_in_python(q)

    def update_in_python(self, q: np.ndarray) -> np.ndarray:
        """`update` interpreted: the law the compiled twin follows."""
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
