"""Jacobians and singularities.

- `geometric_jacobian`: 6x5, world frame, linear velocity of tool0 (or the drill tip) stacked
  over the angular velocity. It has rank 5 everywhere (the two wrist axes, -z and the horizontal
  n, are never parallel), so it is the one for resolved-rate control.
- `analytic_jacobian`: the report's 5x5 for (x, y, z, alpha, beta), alpha = acos(ax) and
  beta = acos(ay) the direction angles of the approach a, with the report's determinant
  |J| = s5 c5 / (sqrt(1 - s4^2 c5^2) sqrt(1 - c4^2 c5^2)).
- Singularities (report): theta5 = 90 or 270 deg (tool vertical: theta4 no longer turns the
  approach) at any theta4; theta5 = 0 or 180 deg unless theta4 is a multiple of 90 deg (a
  representation singularity of the direction angles only).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from quirobot_kinematics.model import KinematicModel, KinematicsError, as_feed, as_joint_vector

#: Default closeness (rad) to a singular angle for `singularities` to name it.
DEFAULT_SINGULARITY_TOLERANCE = 1e-6

TOOL_VERTICAL = "tool_vertical"
DIRECTION_ANGLES = "direction_angles"


def geometric_jacobian(q: object, model: KinematicModel, feed: float = 0.0) -> np.ndarray:
    """(6, 5) world-frame Jacobian: [v; omega] of tool0 (drill tip if feed > 0) = J @ qdot.

    Columns: d1 moves along +x, d2 along +y, d3 along -z; theta4 turns about -z through the
    wrist axis, theta5 about the horizontal n = (s4, c4, 0) through the pitch axis.
    """
    d1, d2, d3, t4, t5 = as_joint_vector(q).tolist()
    s4, c4, s5, c5 = math.sin(t4), math.cos(t4), math.sin(t5), math.cos(t5)
    reach = model.l5 + as_feed(feed)
    # Tool point relative to the pitch axis (and to the yaw axis, horizontally): reach * a.
    rx, ry, rz = reach * c4 * c5, -reach * s4 * c5, -reach * s5
    J = np.zeros((6, 5))
    J[0, 0] = 1.0
    J[1, 1] = 1.0
    J[2, 2] = -1.0
    # theta4: omega = (0, 0, -1); v = omega x r.
    J[0, 3] = ry
    J[1, 3] = -rx
    J[5, 3] = -1.0
    # theta5: omega = n = (s4, c4, 0); v = n x r.
    J[0, 4] = c4 * rz
    J[1, 4] = -s4 * rz
    J[2, 4] = s4 * ry - c4 * rx
    J[3, 4] = s4
    J[4, 4] = c4
    return J


def _direction_angle_guard(q: list[float]) -> tuple[float, float]:
    s4, c4, c5 = math.sin(q[3]), math.cos(q[3]), math.cos(q[4])
    root_alpha = math.sqrt(max(0.0, 1.0 - (c4 * c5) ** 2))
    root_beta = math.sqrt(max(0.0, 1.0 - (s4 * c5) ** 2))
    if root_alpha == 0.0 or root_beta == 0.0:
        which = "alpha (a along +-x)" if root_alpha == 0.0 else "beta (a along +-y)"
        raise KinematicsError(
            f"analytic Jacobian undefined at theta4 = {math.degrees(q[3]):.6g} deg, "
            f"theta5 = {math.degrees(q[4]):.6g} deg: direction angle {which} is 0 or 180 deg"
        )
    return root_alpha, root_beta


def analytic_jacobian(q: object, model: KinematicModel) -> np.ndarray:
    """(5, 5) Jacobian of (x, y, z, alpha, beta) of tool0 w.r.t. q, alpha = acos(ax), beta = acos(ay).

    Raises KinematicsError where alpha or beta is 0 or pi (derivative of acos undefined).
    """
    values = as_joint_vector(q).tolist()
    root_alpha, root_beta = _direction_angle_guard(values)
    J = geometric_jacobian(values, model)[:3]
    s4, c4, s5, c5 = math.sin(values[3]), math.cos(values[3]), math.sin(values[4]), math.cos(values[4])
    # d(ax)/dq = (0, 0, 0, -s4 c5, -c4 s5); d(ay)/dq = (0, 0, 0, -c4 c5, s4 s5);
    # d acos(u) = -du / sqrt(1 - u^2).
    alpha_row = [0.0, 0.0, 0.0, s4 * c5 / root_alpha, c4 * s5 / root_alpha]
    beta_row = [0.0, 0.0, 0.0, c4 * c5 / root_beta, -s4 * s5 / root_beta]
    return np.vstack([J, [alpha_row, beta_row]])


def analytic_jacobian_determinant(q: object) -> float:
    """The report's closed-form |J| = s5 c5 / (sqrt(1 - s4^2 c5^2) sqrt(1 - c4^2 c5^2))."""
    values = as_joint_vector(q).tolist()
    root_alpha, root_beta = _direction_angle_guard(values)
    return math.sin(values[4]) * math.cos(values[4]) / (root_alpha * root_beta)


def singularity_measure(q: object) -> float:
    """|cos theta5|: the smallest singular value of d(approach)/d(theta4, theta5), 0 with the tool vertical.

    The position block always has rank 3 and the approach's rate from theta5 has norm 1, so this
    is how much control over the approach direction is left (1 = full, 0 = one direction lost).
    """
    return abs(math.cos(as_joint_vector(q)[4]))


@dataclass(frozen=True)
class Singularity:
    """A named singular configuration found by `singularities`."""

    name: str  # TOOL_VERTICAL or DIRECTION_ANGLES
    description: str


def _near_multiple(angle: float, period: float, offset: float, tolerance: float) -> bool:
    """True if angle is within tolerance of offset + k * period."""
    remainder = math.remainder(angle - offset, period)
    return abs(remainder) <= tolerance


def singularities(q: object, tolerance: float = DEFAULT_SINGULARITY_TOLERANCE) -> list[Singularity]:
    """The report's singular configurations at q (5,), within `tolerance` rad: empty if none."""
    values = as_joint_vector(q).tolist()
    t4, t5 = values[3], values[4]
    found = []
    if _near_multiple(t5, math.pi, math.pi / 2, tolerance):
        found.append(
            Singularity(
                TOOL_VERTICAL,
                f"theta5 = {math.degrees(t5):.6g} deg: tool vertical, theta4 no longer changes the approach "
                "direction (analytic Jacobian determinant 0)",
            )
        )
    elif _near_multiple(t5, math.pi, 0.0, tolerance) and not _near_multiple(t4, math.pi / 2, 0.0, tolerance):
        found.append(
            Singularity(
                DIRECTION_ANGLES,
                f"theta5 = {math.degrees(t5):.6g} deg with theta4 = {math.degrees(t4):.6g} deg "
                "(not a multiple of 90 deg): the direction angles alpha, beta lose a degree of freedom "
                "(analytic Jacobian determinant 0; the geometric Jacobian is regular)",
            )
        )
    return found
