"""Closed-form inverse kinematics (report: theta4 = atan2(nx, ny), theta5 = atan2(-az, oz), ...).

Two kinds of target:
- a full 4x4 pose T = [n o a p], reachable by the 5-DOF arm only if n (tool x) is horizontal;
- `ApproachTarget(position, approach)`: where tool0 (or the drill tip) goes and which way tool z
  points, the roll about it being whatever the arm gives. Two wrist families solve it,
  (theta4, theta5) and (theta4 + pi, pi - theta5); a vertical approach leaves theta4 free (the
  seed's theta4 is kept).

Every refusal raises `IKError` (a ValueError) naming the joint and amount, or the inconsistency.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from quirobot_kinematics.model import JOINT_NAMES, KinematicModel, as_joint_vector, describe_joint_value

#: Largest angle (rad) by which tool x may leave the horizontal plane in a full-pose target.
DEFAULT_ORIENTATION_TOLERANCE = 1e-6
#: Largest deviation of R^T R from identity (and of the bottom row from 0 0 0 1) accepted.
ORTHONORMALITY_TOLERANCE = 1e-6
#: Horizontal component of a unit approach below which it counts as vertical (theta4 free).
VERTICAL_TOLERANCE = 1e-12
#: Slack (m or rad) on the joint limits for rounding; solutions are clipped back inside.
LIMIT_SLACK = 1e-12

_TWO_PI = 2.0 * math.pi


class IKError(ValueError):
    """The target cannot be reached, or is malformed; the message says which joint or why."""


@dataclass(frozen=True)
class ApproachTarget:
    """Tool position (3,) in m, world frame, and approach direction (3,) (tool z, any length > 0)."""

    position: tuple[float, float, float] | np.ndarray
    approach: tuple[float, float, float] | np.ndarray


def _vector3(value: object, what: str) -> list[float]:
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as error:
        raise IKError(f"{what} must be 3 numbers, got {value!r}") from error
    if array.shape != (3,):
        raise IKError(f"{what} must have 3 components, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise IKError(f"{what} must be finite, got {array.tolist()}")
    return array.tolist()


def _wrap_near(angle: float, reference: float) -> float:
    """angle + 2*pi*k closest to reference."""
    return angle + _TWO_PI * round((reference - angle) / _TWO_PI)


def _representatives(angle: float, lower: float, upper: float) -> list[float]:
    """Every angle + 2*pi*k inside [lower, upper] (with LIMIT_SLACK), clipped into the range."""
    k = math.ceil((lower - LIMIT_SLACK - angle) / _TWO_PI)
    values = []
    candidate = angle + _TWO_PI * k
    while candidate <= upper + LIMIT_SLACK:
        values.append(min(max(candidate, lower), upper))
        k += 1
        candidate = angle + _TWO_PI * k
    return values


class _Problem:
    """A parsed target: tool0 position and the wrist-angle candidates (before limits)."""

    __slots__ = ("position", "approach", "wrists", "kind")

    def __init__(
        self, position: list[float], approach: list[float], wrists: list[tuple[float, float]], kind: str
    ):
        self.position = position
        self.approach = approach
        self.wrists = wrists
        self.kind = kind


def _parse_pose(
    target: object, orientation_tolerance: float
) -> tuple[list[float], list[float], float, float]:
    """(p, a, theta4, theta5) of a consistent 4x4 pose target, else IKError naming the problem."""
    try:
        T = np.asarray(target, dtype=float)
    except (TypeError, ValueError) as error:
        raise IKError(f"target must be a 4x4 pose or an ApproachTarget, got {target!r}") from error
    if T.shape != (4, 4):
        raise IKError(f"a pose target must be a 4x4 matrix, got shape {T.shape}")
    if not np.all(np.isfinite(T)):
        rows, cols = np.nonzero(~np.isfinite(T))
        raise IKError(f"pose target must be finite; element [{rows[0]}, {cols[0]}] is {T[rows[0], cols[0]]}")
    bottom = np.abs(T[3] - (0.0, 0.0, 0.0, 1.0)).max()
    if bottom > ORTHONORMALITY_TOLERANCE:
        raise IKError(f"pose target's bottom row must be [0, 0, 0, 1], got {T[3].tolist()}")
    R = T[:3, :3]
    deviation = np.abs(R.T @ R - np.eye(3)).max()
    if deviation > ORTHONORMALITY_TOLERANCE:
        raise IKError(
            f"pose target's rotation is not orthonormal: R^T R differs from identity by {deviation:.3g} "
            f"(tolerance {ORTHONORMALITY_TOLERANCE:g})"
        )
    if np.linalg.det(R) < 0.0:
        raise IKError("pose target's rotation is a reflection (det R = -1), not a rotation")
    (nx, ox, ax, px), (ny, oy, ay, py), (nz, oz, az, pz) = T[:3].tolist()
    miss = math.asin(min(1.0, abs(nz)))
    if miss > orientation_tolerance:
        raise IKError(
            f"pose unreachable by the 5-DOF arm: tool x axis n must be horizontal, it is "
            f"{math.degrees(miss):.6g} deg out of the horizontal plane (tolerance "
            f"{math.degrees(orientation_tolerance):.3g} deg); give position + approach to leave the roll free"
        )
    return [px, py, pz], [ax, ay, az], math.atan2(nx, ny), math.atan2(-az, oz)


def _parse(target: object, seed4: float, orientation_tolerance: float) -> _Problem:
    if isinstance(target, ApproachTarget):
        position = _vector3(target.position, "target position")
        approach = _vector3(target.approach, "approach direction")
        norm = math.sqrt(approach[0] ** 2 + approach[1] ** 2 + approach[2] ** 2)
        if norm < 1e-9:
            raise IKError(f"approach direction must be a non-zero vector, got {approach}")
        ax, ay, az = (component / norm for component in approach)
        horizontal = math.hypot(ax, ay)
        if horizontal <= VERTICAL_TOLERANCE:
            # Tool vertical: theta4 does not change the approach, keep the seed's.
            theta5 = math.atan2(-az, 0.0)
            wrists = [(seed4, theta5)]
        else:
            theta4 = math.atan2(-ay, ax)
            theta5 = math.atan2(-az, horizontal)
            wrists = [(theta4, theta5), (theta4 + math.pi, math.pi - theta5)]
        return _Problem(position, [ax, ay, az], wrists, "approach")
    position, approach, theta4, theta5 = _parse_pose(target, orientation_tolerance)
    return _Problem(position, approach, [(theta4, theta5)], "pose")


def _solve(
    target: object,
    model: KinematicModel,
    seed: object,
    respect_limits: bool,
    feed: float,
    orientation_tolerance: float,
) -> tuple[list[list[float]], list[float]]:
    """All solutions (each a list of 5 floats, sorted nearest the seed first) and the seed."""
    if seed is None:
        seed_q = np.clip(np.zeros(5), model.lower, model.upper).tolist()
    else:
        seed_q = as_joint_vector(seed, "seed").tolist()
    feed = float(feed)
    if not math.isfinite(feed):
        raise IKError(f"drill feed must be finite, got {feed}")
    problem = _parse(target, seed_q[3], orientation_tolerance)
    ax, ay, az = problem.approach
    px, py, pz = problem.position
    if feed != 0.0:  # the target is the drill tip, feed m beyond tool0 along a
        px, py, pz = px - feed * ax, py - feed * ay, pz - feed * az
    l5 = model.l5
    # Wrist centre = tool0 - l5 * a; it is the same for both wrist families.
    prismatic = [px - l5 * ax, py - l5 * ay, -pz - model.l4 + l5 * az]
    lower = model.lower.tolist()
    upper = model.upper.tolist()

    solutions: list[list[float]] = []
    if not respect_limits:
        for theta4, theta5 in problem.wrists:
            solutions.append(prismatic + [_wrap_near(theta4, seed_q[3]), _wrap_near(theta5, seed_q[4])])
    else:
        problems: list[str] = []
        for i in range(3):
            if not lower[i] - LIMIT_SLACK <= prismatic[i] <= upper[i] + LIMIT_SLACK:
                problems.append(_limit_message(i, prismatic[i], lower[i], upper[i]))
            prismatic[i] = min(max(prismatic[i], lower[i]), upper[i])
        wrist_problems: list[str] = []
        for theta4, theta5 in problem.wrists:
            options4 = _representatives(theta4, lower[3], upper[3])
            options5 = _representatives(theta5, lower[4], upper[4])
            family = []
            if not options4:
                family.append(_angle_message(3, theta4, lower[3], upper[3]))
            if not options5:
                family.append(_angle_message(4, theta5, lower[4], upper[4]))
            if family:
                wrist_problems.append(" and ".join(family))
            for t4 in options4:
                for t5 in options5:
                    solutions.append(prismatic + [t4, t5])
        if not solutions:
            problems.extend(_dedupe(wrist_problems))
        if problems:
            raise IKError("target outside the joint limits: " + "; ".join(problems))
    solutions.sort(key=lambda s: abs(s[3] - seed_q[3]) + abs(s[4] - seed_q[4]))
    return solutions, seed_q


def _dedupe(items: list[str]) -> list[str]:
    if len(items) == 2:
        return [f"{items[0]} (other wrist family: {items[1]})"]
    return items


def _limit_message(index: int, value: float, lower: float, upper: float) -> str:
    if value < lower:
        side, amount, bound = "below its lower limit", lower - value, lower
    else:
        side, amount, bound = "above its upper limit", value - upper, upper
    return (
        f"{JOINT_NAMES[index]} would be {describe_joint_value(index, value)}, "
        f"{describe_joint_value(index, amount)} {side} {describe_joint_value(index, bound)}"
    )


def _angle_message(index: int, angle: float, lower: float, upper: float) -> str:
    """How far an angle (any multiple of 2*pi) stays outside [lower, upper]."""
    centre = 0.5 * (lower + upper)
    value = _wrap_near(angle, centre)
    if value < lower:
        amount = min(lower - value, value + _TWO_PI - upper)
    else:
        amount = min(value - upper, lower - (value - _TWO_PI))
    return (
        f"{JOINT_NAMES[index]} would be {describe_joint_value(index, value)}, "
        f"{describe_joint_value(index, amount)} outside its range "
        f"[{describe_joint_value(index, lower)}, {describe_joint_value(index, upper)}]"
    )


def inverse_kinematics(
    target: object,
    model: KinematicModel,
    seed: object = None,
    respect_limits: bool = True,
    feed: float = 0.0,
    orientation_tolerance: float = DEFAULT_ORIENTATION_TOLERANCE,
) -> np.ndarray:
    """Joint values q (5,) placing tool0 (or the drill tip, `feed` m along tool z) on `target`.

    target: a (4, 4) pose in the world frame (its x axis must be horizontal within
    `orientation_tolerance` rad) or an `ApproachTarget`. Angles are taken inside the joint ranges
    (any multiple of 2*pi); among the solutions within limits the one nearest `seed` (5,) is
    returned (seed default: zero configuration). `respect_limits=False` solves regardless of limits,
    angles taken nearest the seed's. Raises IKError naming the cause.
    """
    solutions, _ = _solve(target, model, seed, respect_limits, feed, orientation_tolerance)
    return np.array(solutions[0])


def inverse_kinematics_all(
    target: object,
    model: KinematicModel,
    seed: object = None,
    respect_limits: bool = True,
    feed: float = 0.0,
    orientation_tolerance: float = DEFAULT_ORIENTATION_TOLERANCE,
) -> np.ndarray:
    """Every solution, shape (K, 5), nearest the seed first (see `inverse_kinematics`)."""
    solutions, _ = _solve(target, model, seed, respect_limits, feed, orientation_tolerance)
    return np.array(solutions)


def approach_wrist_angles(
    approach: object, model: KinematicModel, theta4_if_vertical: float = 0.0
) -> np.ndarray:
    """Wrist angles (K, 2) = (theta4, theta5) within limits pointing tool z along `approach` (3,).

    Empty (0, 2) if no wrist configuration within limits does.
    """
    direction = _vector3(approach, "approach direction")
    problem = _parse(
        ApproachTarget((0.0, 0.0, 0.0), direction), theta4_if_vertical, DEFAULT_ORIENTATION_TOLERANCE
    )
    lower = model.lower.tolist()
    upper = model.upper.tolist()
    angles = [
        (t4, t5)
        for theta4, theta5 in problem.wrists
        for t4 in _representatives(theta4, lower[3], upper[3])
        for t5 in _representatives(theta5, lower[4], upper[4])
    ]
    return np.array(angles).reshape(-1, 2)


def approach_inverse_kinematics_batch(
    positions: np.ndarray, approach: object, model: KinematicModel, theta4_if_vertical: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """Vectorized IK for many tool0 positions (N, 3) sharing one approach direction (3,).

    Returns q (N, 5) (first wrist family within limits) and reachable (N,) bool: True where the
    prismatic joints are within limits and some wrist configuration is. Not checked per row for NaN:
    a NaN row is simply unreachable.
    """
    positions = np.asarray(positions, dtype=float)
    if positions.ndim != 2 or positions.shape[1] != 3:
        raise IKError(f"positions must have shape (N, 3), got {positions.shape}")
    wrists = approach_wrist_angles(approach, model, theta4_if_vertical)
    direction = np.asarray(approach, dtype=float)
    a = direction / np.linalg.norm(direction)
    q = np.empty((positions.shape[0], 5))
    q[:, 0] = positions[:, 0] - model.l5 * a[0]
    q[:, 1] = positions[:, 1] - model.l5 * a[1]
    q[:, 2] = -positions[:, 2] - model.l4 + model.l5 * a[2]
    if wrists.shape[0] == 0:
        q[:, 3:] = np.nan
        return q, np.zeros(positions.shape[0], dtype=bool)
    q[:, 3:] = wrists[0]
    lower = model.lower[:3] - LIMIT_SLACK
    upper = model.upper[:3] + LIMIT_SLACK
    reachable = np.all((q[:, :3] >= lower) & (q[:, :3] <= upper), axis=1)
    return q, reachable
