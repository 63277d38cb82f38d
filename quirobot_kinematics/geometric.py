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

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from quirobot_description.frames import rpy_matrix
from quirobot_description.geometric_errors import GeometricErrors
from quirobot_kinematics.model import TOOL0_RPY, KinematicModel, KinematicsError


def _homogeneous(rotation: np.ndarray, translation: tuple[float, float, float]) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = rotation
    T[:3, 3] = translation
    return T


@dataclass(frozen=True)
class _Chain:
    """The constants of one actual machine's chain (module doc), read-only arrays: what
    `actual_forward_kinematics` composes with the joint values."""

    axes: np.ndarray  # (3, 3) rows: world directions of +d1, +d2, +d3
    straightness: np.ndarray  # (3, 3) row i: the bow of axis i's travel, in world x, y, z (m)
    lower: np.ndarray  # (3,) m, the gantry axes' lower limits
    span: np.ndarray  # (3,) m, their travel (upper - lower)
    yaw: np.ndarray  # (4, 4) the yaw joint's origin in z_ram
    pitch: np.ndarray  # (4, 4) the pitch joint's origin in wrist_yaw_link
    tool: np.ndarray  # (4, 4) tool0 in wrist_pitch_link
    tcp_origin: np.ndarray  # (3,) m, the drill tip at feed 0 in wrist_pitch_link
    tool_z: np.ndarray  # (3,) tool z (the feed's direction) in wrist_pitch_link


def _chain(model: KinematicModel, errors: GeometricErrors) -> _Chain:
    """The chain of `model` with `errors`, memoised on the model (by the errors' identity: the plant
    evaluates the actual machine several times a physics step, and hashing GeometricErrors' fields
    each time would cost more than a lookup)."""
    memo = model.actual_chains
    entry = memo.get(id(errors))
    if entry is not None and entry[0] is errors:
        return entry[1]
    e = errors
    g = e.xy_squareness
    z = np.array([math.tan(e.z_tilt_x), math.tan(e.z_tilt_y), -1.0])
    axes = np.array([[1.0, 0.0, 0.0], [-math.sin(g), math.cos(g), 0.0], z / np.linalg.norm(z)])
    straightness = np.array(
        [
            [0.0, e.x_straightness_y, e.x_straightness_z],
            [e.y_straightness_x, 0.0, e.y_straightness_z],
            [e.z_straightness_x, e.z_straightness_y, 0.0],
        ]
    )
    lower = np.array(model.lower[:3], dtype=float)
    yaw = _homogeneous(
        rpy_matrix(e.wrist_yaw_tilt_x, e.wrist_yaw_tilt_y, 0.0),
        (e.wrist_yaw_offset_x, e.wrist_yaw_offset_y, 0.0),
    )
    pitch = _homogeneous(
        rpy_matrix(e.wrist_pitch_tilt_x, 0.0, e.wrist_pitch_tilt_z),
        (e.wrist_pitch_offset_x, 0.0, -(model.l4 + e.l4_error)),
    )
    tool = _homogeneous(rpy_matrix(*TOOL0_RPY), (model.l5 + e.l5_error, 0.0, 0.0))
    tcp = np.array([e.tcp_offset_x, e.tcp_offset_y, e.tcp_offset_z])
    chain = _Chain(
        axes=axes,
        straightness=straightness,
        lower=lower,
        span=np.array(model.upper[:3], dtype=float) - lower,
        yaw=yaw,
        pitch=pitch,
        tool=tool,
        tcp_origin=tool[:3, 3] + tool[:3, :3] @ tcp,
        tool_z=tool[:3, 2].copy(),
    )
    for array in vars(chain).values():
        array.setflags(write=False)
    memo[id(errors)] = (errors, chain)
    return chain


def _gantry_position(q: np.ndarray, chain: _Chain) -> np.ndarray:
    """(N, 3) world position of z_ram's frame for q (N, 5), m: each axis' travel along its
    direction, plus its straightness s_i(d) = 4 u (1 - u) * amplitudes (module doc)."""
    travel = q[:, :3]
    u = (travel - chain.lower) / chain.span
    return travel @ chain.axes + (4.0 * u * (1.0 - u)) @ chain.straightness


def _check_configurations(array: np.ndarray, q: object) -> None:
    if array.ndim != 2 or array.shape[1] != 5:
        raise KinematicsError(f"q must have shape (5,) or (N, 5), got shape {np.asarray(q).shape}")
    if not np.isfinite(array).all():
        raise KinematicsError("q must be finite")


def _wrist_rotations(array: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(Rz(-theta4), Ry(theta5)), each (N, 3, 3), of q (N, 5)."""
    n = array.shape[0]
    cosines, sines = np.cos(array[:, 3:]), np.sin(array[:, 3:])  # (n, 2): theta4, theta5
    rz = np.zeros((n, 3, 3))  # Rz(-theta4)
    rz[:, 0, 0] = rz[:, 1, 1] = cosines[:, 0]
    rz[:, 0, 1], rz[:, 1, 0], rz[:, 2, 2] = sines[:, 0], -sines[:, 0], 1.0
    ry = np.zeros((n, 3, 3))  # Ry(theta5)
    ry[:, 0, 0] = ry[:, 2, 2] = cosines[:, 1]
    ry[:, 0, 2], ry[:, 2, 0], ry[:, 1, 1] = sines[:, 1], -sines[:, 1], 1.0
    return rz, ry


class ActualPositions:
    """Tip positions (N, 3) m of actual machines at one set of configurations q (N, 5): the
    numbers of `actual_forward_kinematics(q, model, errors, feed)[:, :3, 3]`, its terms shared
    between machines whose constants behind a term are bitwise the same (the calibration's finite
    differences change one error at a time: most terms of a perturbed machine are the base's)."""

    def __init__(self, q: np.ndarray, model: KinematicModel) -> None:
        array = np.asarray(q, dtype=float)
        _check_configurations(array, q)
        self.array, self.model = array, model
        self.rz, self.ry = _wrist_rotations(array)
        self.terms: dict[tuple[bytes, ...], np.ndarray] = {}  # key: the constants' bytes

    def _term(self, key: tuple[bytes, ...], compute: Callable[[], np.ndarray]) -> np.ndarray:
        term = self.terms.get(key)
        if term is None:
            term = self.terms[key] = compute()
        return term

    def __call__(self, errors: GeometricErrors, feed: float = 0.0) -> np.ndarray:
        chain = _chain(self.model, errors)
        yaw, pitch = chain.yaw, chain.pitch
        yaw_key, pitch_key = yaw[:3, :3].tobytes(), pitch[:3, :3].tobytes()
        tip = chain.tcp_origin + feed * chain.tool_z
        gantry = self._term(
            (b"g", chain.axes.tobytes(), chain.straightness.tobytes()),
            lambda: _gantry_position(self.array, chain),
        )
        r_a = self._term((b"a", yaw_key), lambda: yaw[:3, :3] @ self.rz)
        r_b = self._term((b"b", yaw_key, pitch_key), lambda: r_a @ pitch[:3, :3] @ self.ry)
        to_pitch = self._term((b"p", yaw_key, pitch[:3, 3].tobytes()), lambda: r_a @ pitch[:3, 3])
        to_tip = self._term((b"t", yaw_key, pitch_key, tip.tobytes()), lambda: r_b @ tip)
        return gantry + yaw[:3, 3] + to_pitch + to_tip  # as actual_forward_kinematics sums them


def actual_forward_kinematics(
    q: object, model: KinematicModel, errors: GeometricErrors, feed: float = 0.0
) -> np.ndarray:
    """Pose of the drill tip (`feed` m along tool z; tool0 + TCP offset at 0) of the actual machine.

    q: (5,) -> (4, 4), or (N, 5) -> (N, 4, 4); world frame, m.
    """
    array = np.asarray(q, dtype=float)
    single = array.ndim == 1
    if single:
        array = array[np.newaxis]
    _check_configurations(array, q)
    chain = _chain(model, errors)
    yaw, pitch = chain.yaw, chain.pitch
    n = array.shape[0]
    rz, ry = _wrist_rotations(array)
    # Rotation and translation of the tip in the world: R = Ryaw Rz Rpitch Ry Rtool;
    # p = gantry + o_yaw + Ryaw Rz o_pitch + (Ryaw Rz Rpitch Ry) tip, composed with 3x3 blocks.
    r_a = yaw[:3, :3] @ rz  # (n, 3, 3)
    r_b = r_a @ pitch[:3, :3] @ ry
    tip = chain.tcp_origin + feed * chain.tool_z
    out = np.zeros((n, 4, 4))
    out[:, :3, :3] = r_b @ chain.tool[:3, :3]
    out[:, :3, 3] = _gantry_position(array, chain) + yaw[:3, 3] + r_a @ pitch[:3, 3] + r_b @ tip
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
