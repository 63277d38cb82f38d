"""Forward kinematics of the actual machine: the nominal chain composed with its geometric errors.

The chain is `link_frames`' with each error where it physically sits (quirobot_description.
geometric_errors for the meaning of each):

    T(q) = Trans(d1 ex + s_x(d1) + d2 ey' + s_y(d2) + d3 ez' + s_z(d3))        gantry (no rotation)
           @ Trans(o_yaw) @ Rpy(tilt_x, tilt_y, 0) @ Rz(-theta4)                  wrist_yaw joint
           @ Trans(o_pitch_x, 0, -(l4 + dl4)) @ Rpy(tilt_x, 0, tilt_z) @ Ry(theta5) wrist_pitch joint
           @ Trans(l5 + dl5, 0, 0) @ Rpy(pi/2, 0, pi/2)                          tool0
           @ Trans(tcp + (0, 0, feed))                                           drill tip

with ey' = (-sin g, cos g, 0) (squareness g), ez' = (tan a, tan b, -1) / norm (the ram's tilt)
and s_i(d) = 4 u (1 - u) * (straightness amplitudes), u = (d - lower) / (upper - lower). The
joint-origin errors are exactly a URDF with perturbed <origin> and <axis> (a test builds one and
compares with pinocchio); straightness has no URDF form. Zero errors give the closed form to
rounding. Vectorised over poses: the calibration evaluates it thousands of times.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from quirobot_description.frames import rpy_matrix
from quirobot_description.geometric_errors import GeometricErrors
from quirobot_kinematics.model import TOOL0_RPY, KinematicModel, KinematicsError


def _homogeneous(rotation: np.ndarray, translation: tuple[float, float, float]) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = rotation
    T[:3, 3] = translation
    return T


@functools.lru_cache(maxsize=16)
def gantry_axes(errors: GeometricErrors) -> np.ndarray:
    """(3, 3) rows: the world direction of +d1, +d2 and +d3 (d3 descends). Read-only: cached per
    `errors` (the plant evaluates the actual machine every physics step)."""
    g = errors.xy_squareness
    z = np.array([math.tan(errors.z_tilt_x), math.tan(errors.z_tilt_y), -1.0])
    axes = np.array([[1.0, 0.0, 0.0], [-math.sin(g), math.cos(g), 0.0], z / np.linalg.norm(z)])
    axes.setflags(write=False)
    return axes


def _bow(d: np.ndarray, lower: float, upper: float) -> np.ndarray:
    u = (d - lower) / (upper - lower)
    return 4.0 * u * (1.0 - u)


def gantry_position(q: np.ndarray, model: KinematicModel, errors: GeometricErrors) -> np.ndarray:
    """(N, 3) world position of z_ram's frame for q (N, 5), m."""
    axes = gantry_axes(errors)
    e = errors
    position = q[:, :3] @ axes
    lower, upper = model.lower, model.upper
    bows = [_bow(q[:, i], lower[i], upper[i]) for i in range(3)]
    position[:, 1] += e.x_straightness_y * bows[0]
    position[:, 2] += e.x_straightness_z * bows[0]
    position[:, 0] += e.y_straightness_x * bows[1]
    position[:, 2] += e.y_straightness_z * bows[1]
    position[:, 0] += e.z_straightness_x * bows[2]
    position[:, 1] += e.z_straightness_y * bows[2]
    return position


def fixed_transforms(
    model: KinematicModel, errors: GeometricErrors, feed: float = 0.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(4, 4) each: the yaw joint's origin in z_ram, the pitch joint's in wrist_yaw_link, and the
    drill tip (at `feed`) in wrist_pitch_link (URDF joint origins of the actual machine)."""
    yaw, pitch, tool = _joint_origins(model.l4, model.l5, errors)
    e = errors
    tip = _homogeneous(np.eye(3), (e.tcp_offset_x, e.tcp_offset_y, e.tcp_offset_z + feed))
    return yaw, pitch, tool @ tip


@functools.lru_cache(maxsize=16)
def _joint_origins(
    l4: float, l5: float, errors: GeometricErrors
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """fixed_transforms' feed-independent part (read-only, cached: the plant evaluates the actual
    machine every physics step): the yaw and pitch joints' origins and tool0 in wrist_pitch_link."""
    e = errors
    yaw = _homogeneous(
        rpy_matrix(e.wrist_yaw_tilt_x, e.wrist_yaw_tilt_y, 0.0),
        (e.wrist_yaw_offset_x, e.wrist_yaw_offset_y, 0.0),
    )
    pitch = _homogeneous(
        rpy_matrix(e.wrist_pitch_tilt_x, 0.0, e.wrist_pitch_tilt_z),
        (e.wrist_pitch_offset_x, 0.0, -(l4 + e.l4_error)),
    )
    tool = _homogeneous(rpy_matrix(*TOOL0_RPY), (l5 + e.l5_error, 0.0, 0.0))
    for T in (yaw, pitch, tool):
        T.setflags(write=False)
    return yaw, pitch, tool


def actual_forward_kinematics(
    q: object, model: KinematicModel, errors: GeometricErrors, feed: float = 0.0
) -> np.ndarray:
    """Pose of the drill tip (`feed` m along tool z; tool0 + TCP offset at 0) of the actual machine.

    q: (5,) -> (4, 4), or (N, 5) -> (N, 4, 4); world frame, m.
    """
    array = np.asarray(q, dtype=float)
    single = array.ndim == 1
    array = np.atleast_2d(array)
    if array.ndim != 2 or array.shape[1] != 5:
        raise KinematicsError(f"q must have shape (5,) or (N, 5), got shape {np.asarray(q).shape}")
    if not np.all(np.isfinite(array)):
        raise KinematicsError("q must be finite")
    yaw, pitch, tip = fixed_transforms(model, errors, float(feed))
    n = array.shape[0]
    c4, s4 = np.cos(array[:, 3]), np.sin(array[:, 3])
    c5, s5 = np.cos(array[:, 4]), np.sin(array[:, 4])
    rz = np.zeros((n, 3, 3))  # Rz(-theta4)
    rz[:, 0, 0], rz[:, 0, 1], rz[:, 1, 0], rz[:, 1, 1], rz[:, 2, 2] = c4, s4, -s4, c4, 1.0
    ry = np.zeros((n, 3, 3))  # Ry(theta5)
    ry[:, 0, 0], ry[:, 0, 2], ry[:, 2, 0], ry[:, 2, 2], ry[:, 1, 1] = c5, s5, -s5, c5, 1.0
    # Rotation and translation of tip in the world: R = Ryaw Rz Rpitch Ry Rtip;
    # p = gantry + Ryaw (o_yaw-part) ... composed with 3x3 blocks for speed.
    r_a = yaw[:3, :3] @ rz  # (n, 3, 3)
    r_b = r_a @ pitch[:3, :3] @ ry
    position = gantry_position(array, model, errors) + yaw[:3, 3] + r_a @ pitch[:3, 3] + r_b @ tip[:3, 3]
    out = np.zeros((n, 4, 4))
    out[:, :3, :3] = r_b @ tip[:3, :3]
    out[:, :3, 3] = position
    out[:, 3, 3] = 1.0
    return out[0] if single else out


#: Gauss-Newton iterations of `refine_inverse_kinematics` (sub-millimetre errors converge in 2-3).
REFINE_ITERATIONS = 8
#: Finite-difference step of its Jacobian, m or rad.
REFINE_STEP = 1e-7


def refine_inverse_kinematics(
    q: np.ndarray,
    position: np.ndarray,
    approach: np.ndarray,
    model: KinematicModel,
    errors: GeometricErrors,
    feed: float = 0.0,
) -> np.ndarray:
    """q (5,) moved from the nominal solution `q` so that the actual machine's tip is at `position`
    (3,) m pointing along unit `approach` (3,): Gauss-Newton on [position; approach] residuals."""
    q = np.array(q, dtype=float)
    target = np.concatenate([position, approach / np.linalg.norm(approach)])

    def residual(values: np.ndarray) -> np.ndarray:
        T = actual_forward_kinematics(values, model, errors, feed)
        return np.concatenate([T[..., :3, 3], T[..., :3, 2]], axis=-1) - target

    for _ in range(REFINE_ITERATIONS):
        r = residual(q)
        if np.linalg.norm(r) < 1e-13:
            break
        shifted = q + REFINE_STEP * np.eye(5)
        jac = ((residual(shifted) - r) / REFINE_STEP).T  # (6, 5)
        q = q - np.linalg.lstsq(jac, r, rcond=None)[0]
    return q
