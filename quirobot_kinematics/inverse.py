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
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from quirobot_description.parameters import JOINT_NAMES
from quirobot_kinematics.model import (
    REVOLUTE,
    KinematicModel,
    KinematicsError,
    as_feed,
    as_joint_vector,
    describe_joint_value,
)

#: Largest angle (rad) by which tool x may leave the horizontal plane in a full-pose target.
DEFAULT_ORIENTATION_TOLERANCE = 1e-6
#: Largest deviation of R^T R from identity (and of the bottom row from 0 0 0 1) accepted.
ORTHONORMALITY_TOLERANCE = 1e-6
#: Horizontal component of a unit approach below which it counts as vertical (theta4 free).
VERTICAL_TOLERANCE = 1e-12
#: Slack (m or rad) on the joint limits for rounding; solutions are clipped back inside.
LIMIT_SLACK = 1e-12

_TWO_PI = 2.0 * math.pi


class IKError(KinematicsError):
    """The target cannot be reached, or it (or the seed) is malformed; the message says which joint or why.

    A ValueError (through KinematicsError), so the CLI reports it in one line with exit 2.
    """


@dataclass(frozen=True)
class ApproachTarget:
    """Tool position (3,) in m, world frame, and approach direction (3,) (tool z, any length > 0)."""

    position: tuple[float, float, float] | np.ndarray
    approach: tuple[float, float, float] | np.ndarray


def _vector3(value: object, what: str) -> list[float]:
    if type(value) is tuple or type(value) is list:  # fast path
        if len(value) == 3 and all(type(v) is float or type(v) is int for v in value):
            if math.isfinite(value[0] + value[1] + value[2]):
                return [float(v) for v in value]
            raise IKError(f"{what} must be finite, got {list(value)}")
    elif type(value) is np.ndarray and value.shape == (3,) and value.dtype == np.float64:
        values = value.tolist()
        if math.isfinite(values[0] + values[1] + values[2]):
            return values
        raise IKError(f"{what} must be finite, got {values}")
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as error:
        raise IKError(f"{what} must be 3 numbers, got {value!r}") from error
    if array.shape != (3,):
        raise IKError(f"{what} must have 3 components, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise IKError(f"{what} must be finite, got {array.tolist()}")
    return array.tolist()


def _seed(seed: object, model: KinematicModel) -> list[float]:
    """The seed as 5 floats; default: the zero configuration clipped into the limits."""
    if seed is None:
        return model.default_seed
    if type(seed) is np.ndarray and seed.shape == (5,) and seed.dtype == np.float64:
        values = seed.tolist()
        if math.isfinite(values[0] + values[1] + values[2] + values[3] + values[4]):
            return values
    try:
        return as_joint_vector(seed, "seed").tolist()
    except KinematicsError as error:
        raise IKError(str(error)) from error


def _wrap_near(angle: float, reference: float) -> float:
    """angle + 2*pi*k closest to reference."""
    return angle + _TWO_PI * round((reference - angle) / _TWO_PI)


def _representatives(angle: float, lower: float, upper: float) -> list[float]:
    """Every angle + 2*pi*k inside [lower, upper] (with LIMIT_SLACK), clipped into the range."""
    candidate = angle - _TWO_PI * math.floor(
        (angle - lower + LIMIT_SLACK) / _TWO_PI
    )  # first >= lower - slack
    values = []
    while candidate <= upper + LIMIT_SLACK:
        values.append(lower if candidate < lower else upper if candidate > upper else candidate)
        candidate += _TWO_PI
    return values


def _pose_rows(target: object) -> list[list[float]]:
    """The 4 rows of a pose target as lists, refusing wrong shapes and non-numbers."""
    if type(target) is np.ndarray and target.shape == (4, 4) and target.dtype == np.float64:
        return target.tolist()
    try:
        T = np.asarray(target, dtype=float)
    except (TypeError, ValueError) as error:
        raise IKError(f"target must be a 4x4 pose or an ApproachTarget, got {target!r}") from error
    if T.shape != (4, 4):
        raise IKError(f"a pose target must be a 4x4 matrix, got shape {T.shape}")
    return T.tolist()


def _diagnose_pose(T: np.ndarray) -> None:
    """Raise the IKError that says what is wrong with a pose failing the fast checks."""
    if not np.all(np.isfinite(T)):
        rows, cols = np.nonzero(~np.isfinite(T))
        raise IKError(f"pose target must be finite; element [{rows[0]}, {cols[0]}] is {T[rows[0], cols[0]]}")
    if np.abs(T[3] - (0.0, 0.0, 0.0, 1.0)).max() > ORTHONORMALITY_TOLERANCE:
        raise IKError(f"pose target's bottom row must be [0, 0, 0, 1], got {T[3].tolist()}")
    R = T[:3, :3]
    deviation = np.abs(R.T @ R - np.eye(3)).max()
    if deviation <= ORTHONORMALITY_TOLERANCE and np.linalg.det(R) < 0.0:
        raise IKError("pose target's rotation is a reflection (det R = -1), not a rotation")
    raise IKError(
        f"pose target's rotation is not orthonormal: R^T R differs from identity by {deviation:.3g} "
        f"(tolerance {ORTHONORMALITY_TOLERANCE:g})"
    )


def _parse_pose(
    target: object, orientation_tolerance: float
) -> tuple[list[float], list[float], float, float]:
    """(p, a, theta4, theta5) of a consistent 4x4 pose target, else IKError naming the problem."""
    rows = _pose_rows(target)
    (nx, ox, ax, px), (ny, oy, ay, py), (nz, oz, az, pz), bottom = rows
    if bottom != [0.0, 0.0, 0.0, 1.0] or not math.isfinite(px + py + pz):
        T = np.array(rows)
        if not np.all(np.isfinite(T)) or np.abs(T[3] - (0.0, 0.0, 0.0, 1.0)).max() > ORTHONORMALITY_TOLERANCE:
            _diagnose_pose(T)
    # Proper rotation <=> n, o unit and orthogonal, a = n x o. Written so that NaN or inf fails.
    tol = ORTHONORMALITY_TOLERANCE
    if not (
        abs(nx * nx + ny * ny + nz * nz - 1.0) <= tol
        and abs(ox * ox + oy * oy + oz * oz - 1.0) <= tol
        and abs(nx * ox + ny * oy + nz * oz) <= tol
        and abs(ny * oz - nz * oy - ax) <= tol
        and abs(nz * ox - nx * oz - ay) <= tol
        and abs(nx * oy - ny * ox - az) <= tol
    ):
        _diagnose_pose(np.array(rows))
    if not 0.0 <= orientation_tolerance < math.pi / 2:
        raise IKError(f"orientation_tolerance must be an angle in [0, pi/2) rad, got {orientation_tolerance}")
    if abs(nz) > math.sin(orientation_tolerance):
        miss = math.asin(min(1.0, abs(nz)))
        raise IKError(
            f"pose unreachable by the 5-DOF arm: tool x axis n must be horizontal, it is "
            f"{math.degrees(miss):.6g} deg out of the horizontal plane (tolerance "
            f"{math.degrees(orientation_tolerance):.3g} deg); give position + approach to leave the roll free"
        )
    return [px, py, pz], [ax, ay, az], math.atan2(nx, ny), math.atan2(-az, oz)


def _parse_approach(target: ApproachTarget, seed4: float) -> tuple[list[float], list[float], list[tuple]]:
    """(p, unit a, wrist candidates) of a position + approach target."""
    position = _vector3(target.position, "target position")
    ax, ay, az = _vector3(target.approach, "approach direction")
    norm = math.sqrt(ax * ax + ay * ay + az * az)
    if norm < 1e-9:
        raise IKError(f"approach direction must be a non-zero vector, got {[ax, ay, az]}")
    if norm != 1.0:
        ax, ay, az = ax / norm, ay / norm, az / norm
    horizontal = math.sqrt(ax * ax + ay * ay)
    if horizontal <= VERTICAL_TOLERANCE:
        # Tool vertical: theta4 does not change the approach, keep the seed's.
        return position, [ax, ay, az], [(seed4, math.atan2(-az, 0.0))]
    theta4 = math.atan2(-ay, ax)
    theta5 = math.atan2(-az, horizontal)
    return position, [ax, ay, az], [(theta4, theta5), (theta4 + math.pi, math.pi - theta5)]


def _solve(
    target: object,
    model: KinematicModel,
    seed: object,
    respect_limits: bool,
    feed: float,
    orientation_tolerance: float,
) -> tuple[list[list[float]], list[float]]:
    """All solutions (each a list of 5 floats, sorted nearest the seed first) and the seed."""
    seed_q = _seed(seed, model)
    if feed != 0.0:
        try:
            feed = as_feed(feed)
        except KinematicsError as error:
            raise IKError(str(error)) from error
        if respect_limits and not model.feed_lower <= feed <= model.feed_upper:
            raise IKError(
                f"target outside the joint limits: drill_feed {feed:.6g} m is outside its travel "
                f"[{model.feed_lower:.6g}, {model.feed_upper:.6g}] m"
            )
    if isinstance(target, ApproachTarget):
        (px, py, pz), (ax, ay, az), wrists = _parse_approach(target, seed_q[3])
    else:
        (px, py, pz), (ax, ay, az), theta4, theta5 = _parse_pose(target, orientation_tolerance)
        wrists = [(theta4, theta5)]
    if feed != 0.0:  # the target is the drill tip, feed m beyond tool0 along a
        px, py, pz = px - feed * ax, py - feed * ay, pz - feed * az
    l5 = model.l5
    # Wrist centre = tool0 - l5 * a; it is the same for both wrist families.
    prismatic = [px - l5 * ax, py - l5 * ay, -pz - model.l4 + l5 * az]

    if not respect_limits:
        solutions = [
            prismatic + [_wrap_near(theta4, seed_q[3]), _wrap_near(theta5, seed_q[4])]
            for theta4, theta5 in wrists
        ]
    else:
        lower, upper = model.limit_lists
        problems: list[str] = []
        d1, d2, d3 = prismatic
        inside = lower[0] <= d1 <= upper[0] and lower[1] <= d2 <= upper[1] and lower[2] <= d3 <= upper[2]
        for i in () if inside else range(3):
            value = prismatic[i]
            if value < lower[i]:
                if value < lower[i] - LIMIT_SLACK:
                    problems.append(_limit_message(i, value, lower[i], upper[i]))
                prismatic[i] = lower[i]
            elif value > upper[i]:
                if value > upper[i] + LIMIT_SLACK:
                    problems.append(_limit_message(i, value, lower[i], upper[i]))
                prismatic[i] = upper[i]
        solutions = []
        wrist_problems: list[str] = []
        for theta4, theta5 in wrists:
            options4 = _representatives(theta4, lower[3], upper[3])
            options5 = _representatives(theta5, lower[4], upper[4])
            if not options4 or not options5:
                family = []
                if not options4:
                    family.append(_angle_message(3, theta4, lower[3], upper[3]))
                if not options5:
                    family.append(_angle_message(4, theta5, lower[4], upper[4]))
                wrist_problems.append(" and ".join(family))
            for t4 in options4:
                for t5 in options5:
                    solutions.append(prismatic + [t4, t5])
        if not solutions:
            problems.extend(_dedupe(wrist_problems))
        if problems:
            raise IKError("target outside the joint limits: " + "; ".join(problems))
    return solutions, seed_q


def _distance_to_seed(solution: list[float], seed: list[float]) -> float:
    """Wrist travel |d theta4| + |d theta5| (rad); the gantry values are the same in every solution."""
    return abs(solution[3] - seed[3]) + abs(solution[4] - seed[4])


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
    if model.errors is not None:  # a calibrated model: nominal solution, then the actual chain's
        return _calibrated_inverse(target, model, seed, respect_limits, feed, orientation_tolerance)
    solutions, seed_q = _solve(target, model, seed, respect_limits, feed, orientation_tolerance)
    return np.array(_nearest(solutions, seed_q))


def approach_inverse(approach: object, model: KinematicModel) -> Callable[[object, object], np.ndarray]:
    """`inverse_kinematics(ApproachTarget(position, approach), model, seed)` as a function of
    (position (3,) m, seed (5,)) for one `approach`: the same numbers and the same refusals.

    A line at a fixed orientation (planning.trajectory.plan_line) solves thousands of positions
    for one approach: its wrist solutions within limits are worked out once here, and the one
    nearest a seed's wrist is remembered per seed wrist (it depends on nothing else). A position
    whose gantry joints leave their limits, a calibrated model, a vertical or malformed approach
    (theta4 is then the seed's, or the refusal is the call's) go through inverse_kinematics.
    """

    def general(position: object, seed: object) -> np.ndarray:
        return inverse_kinematics(ApproachTarget(position, approach), model, seed)

    if model.errors is not None:
        return general
    try:
        _, (ax, ay, az), wrists = _parse_approach(ApproachTarget((0.0, 0.0, 0.0), approach), 0.0)
    except IKError:
        return general
    if len(wrists) == 1:  # vertical: theta4 is the seed's
        return general
    lower, upper = model.limit_lists
    candidates = [  # as _solve's solutions, the gantry left out (the seed's distance ignores it)
        [0.0, 0.0, 0.0, t4, t5]
        for theta4, theta5 in wrists
        for t4 in _representatives(theta4, lower[3], upper[3])
        for t5 in _representatives(theta5, lower[4], upper[4])
    ]
    if not candidates:
        return general
    l4, l5 = model.l4, model.l5
    nearest: dict[tuple[float, float], list[float]] = {}

    def solve(position: object, seed: object) -> np.ndarray:
        seed_q = _seed(seed, model)  # refused first, as inverse_kinematics does
        px, py, pz = _vector3(position, "target position")
        d1, d2, d3 = px - l5 * ax, py - l5 * ay, -pz - l4 + l5 * az  # _solve's prismatic
        if not (lower[0] <= d1 <= upper[0] and lower[1] <= d2 <= upper[1] and lower[2] <= d3 <= upper[2]):
            return general(position, seed)  # clipped within LIMIT_SLACK, or refused
        key = (seed_q[3], seed_q[4])
        wrist = nearest.get(key)
        if wrist is None:
            wrist = nearest[key] = _nearest(candidates, seed_q)[3:]
        return np.array([d1, d2, d3, *wrist])

    return solve


def _nearest(solutions: list[list[float]], seed_q: list[float]) -> list[float]:
    """The solution nearest the seed (_distance_to_seed), the first of equals."""
    best = solutions[0]
    if len(solutions) > 1:
        distance = _distance_to_seed(best, seed_q)
        for solution in solutions[1:]:
            other = _distance_to_seed(solution, seed_q)
            if other < distance:
                best, distance = solution, other
    return best


def _calibrated_inverse(
    target: object,
    model: KinematicModel,
    seed: object,
    respect_limits: bool,
    feed: float,
    orientation_tolerance: float,
) -> np.ndarray:
    """IK of a calibrated model: the nominal closed form's solution refined on the actual chain
    (quirobot_kinematics.geometric.refine_inverse_kinematics); its limits checked again."""
    from quirobot_kinematics.geometric import refine_inverse_kinematics

    nominal = model.calibrated(None)
    q = inverse_kinematics(target, nominal, seed, respect_limits, feed, orientation_tolerance)
    if isinstance(target, ApproachTarget):
        position = np.array(_vector3(target.position, "target position"))
        approach = np.array(_vector3(target.approach, "approach"))
    else:
        pose = np.asarray(target, dtype=float)
        position, approach = pose[:3, 3], pose[:3, 2]
    refined = refine_inverse_kinematics(q, position, approach, nominal, model.errors, feed)
    for index in REVOLUTE:  # the correction may cross 0 or 2 pi: the same angle inside the range
        lower, upper = model.lower[index], model.upper[index]
        for turn in (-2.0 * math.pi, 2.0 * math.pi):
            if not lower <= refined[index] <= upper and lower <= refined[index] + turn <= upper:
                refined[index] += turn
    if respect_limits and not model.within_limits(refined):
        index = int(np.argmax(np.maximum(model.lower - refined, refined - model.upper)))
        raise IKError(
            _limit_message(index, float(refined[index]), float(model.lower[index]), float(model.upper[index]))
            + " (after the calibration's correction)"
        )
    return refined


def inverse_kinematics_all(
    target: object,
    model: KinematicModel,
    seed: object = None,
    respect_limits: bool = True,
    feed: float = 0.0,
    orientation_tolerance: float = DEFAULT_ORIENTATION_TOLERANCE,
) -> np.ndarray:
    """Every solution, shape (K, 5), nearest the seed first (see `inverse_kinematics`)."""
    solutions, seed_q = _solve(target, model, seed, respect_limits, feed, orientation_tolerance)
    solutions.sort(key=lambda solution: _distance_to_seed(solution, seed_q))
    return np.array(solutions)


def approach_wrist_angles(
    approach: object, model: KinematicModel, theta4_if_vertical: float = 0.0
) -> np.ndarray:
    """Wrist angles (K, 2) = (theta4, theta5) within limits pointing tool z along `approach` (3,).

    Empty (0, 2) if no wrist configuration within limits does.
    """
    direction = _vector3(approach, "approach direction")
    _, _, wrists = _parse_approach(ApproachTarget((0.0, 0.0, 0.0), direction), theta4_if_vertical)
    lower, upper = model.limit_lists
    angles = [
        (t4, t5)
        for theta4, theta5 in wrists
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
