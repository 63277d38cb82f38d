"""Resolved-rate motion: joint velocities for a tool twist by damped least squares.

qdot = (J^T J + lambda^2 I)^-1 J^T v on the task Jacobian J, with the damping lambda raised only
near a singularity (Nakamura-Hanafusa / Chiaverini adaptive damping): lambda^2 =
max_damping^2 * (1 - (sigma_min / threshold)^2) while the smallest singular value sigma_min is
below `threshold`, 0 elsewhere. Every singular value s of the task maps to s / (s^2 + lambda^2),
so no joint speed exceeds |v| / (2 lambda) however close to the singularity.

Two tasks:
- "full": the 6-D twist (v, omega) in the world frame on the 6x5 geometric Jacobian (least
  squares: the roll the arm cannot make is dropped in the least-squares sense);
- "approach": tool velocity v and the rotation of the approach axis only, i.e. the 5 rows
  (v, n . omega, o . omega); the roll about a is free. Square, singular with the tool vertical.
"""

from __future__ import annotations

import math

import numpy as np

from quirobot_kinematics.forward import forward_kinematics
from quirobot_kinematics.jacobian import geometric_jacobian
from quirobot_kinematics.model import KinematicModel, KinematicsError, as_joint_vector

MODES = ("full", "approach")
#: Default largest damping lambda (same units as the task singular values: m/rad or 1).
DEFAULT_MAX_DAMPING = 0.05
#: Default smallest singular value below which damping starts.
DEFAULT_THRESHOLD = 0.1


def task_jacobian(q: object, model: KinematicModel, mode: str = "full", feed: float = 0.0) -> np.ndarray:
    """(6, 5) geometric Jacobian for mode "full"; (5, 5) rows (v, n . omega, o . omega) for "approach"."""
    J = geometric_jacobian(q, model, feed)
    if mode == "full":
        return J
    if mode == "approach":
        R = forward_kinematics(q, model)[:3, :3]
        return np.vstack([J[:3], R[:, :2].T @ J[3:]])
    raise KinematicsError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")


def task_velocity(q: object, twist: object, model: KinematicModel, mode: str = "full") -> np.ndarray:
    """The task-space velocity for `task_jacobian`: the twist (6,) itself, or (v, n . omega, o . omega)."""
    twist = _twist(twist)
    if mode == "full":
        return twist
    if mode == "approach":
        R = forward_kinematics(q, model)[:3, :3]
        return np.concatenate([twist[:3], R[:, :2].T @ twist[3:]])
    raise KinematicsError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")


def _twist(twist: object) -> np.ndarray:
    try:
        array = np.asarray(twist, dtype=float)
    except (TypeError, ValueError) as error:
        raise KinematicsError(f"twist must be 6 numbers (vx, vy, vz, wx, wy, wz), got {twist!r}") from error
    if array.shape != (6,):
        raise KinematicsError(f"twist must have shape (6,) (vx, vy, vz, wx, wy, wz), got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise KinematicsError(f"twist must be finite, got {array.tolist()}")
    return array


def adaptive_damping(sigma_min: float, max_damping: float, threshold: float) -> float:
    """lambda for the smallest singular value sigma_min: 0 above `threshold`, max_damping at 0."""
    if max_damping < 0.0 or not math.isfinite(max_damping):
        raise KinematicsError(f"max_damping must be finite and >= 0, got {max_damping}")
    if threshold <= 0.0 or not math.isfinite(threshold):
        raise KinematicsError(f"threshold must be finite and > 0, got {threshold}")
    if sigma_min >= threshold:
        return 0.0
    return max_damping * math.sqrt(1.0 - (sigma_min / threshold) ** 2)


def damped_least_squares(J: np.ndarray, velocity: np.ndarray, damping: float) -> np.ndarray:
    """qdot (n,) = (J^T J + damping^2 I)^-1 J^T velocity for J (m, n), velocity (m,)."""
    n = J.shape[1]
    return np.linalg.solve(J.T @ J + damping**2 * np.eye(n), J.T @ velocity)


def resolved_rate(
    q: object,
    twist: object,
    model: KinematicModel,
    mode: str = "full",
    feed: float = 0.0,
    max_damping: float = DEFAULT_MAX_DAMPING,
    threshold: float = DEFAULT_THRESHOLD,
) -> np.ndarray:
    """Joint velocities qdot (5,) (m/s, rad/s) for the tool twist (6,) = (v m/s, omega rad/s), world frame.

    The twist is that of tool0, or of the drill tip when feed > 0.
    """
    q = as_joint_vector(q)
    J = task_jacobian(q, model, mode, feed)
    velocity = task_velocity(q, twist, model, mode)
    sigma_min = float(np.linalg.svd(J, compute_uv=False).min())
    return damped_least_squares(J, velocity, adaptive_damping(sigma_min, max_damping, threshold))
