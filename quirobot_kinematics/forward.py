"""Forward kinematics: tool0 (and the drill tip) in the world frame, single and batched.

The closed form is the report's (DH table, T = M A1 A2 A3 A4 A5 M). `link_frames` instead
composes the URDF's joint transforms one by one (world -> base_link -> x_carriage -> y_carriage
-> z_ram -> wrist_yaw_link -> wrist_pitch_link -> tool0 -> drill_tip), so the two agree only if
the closed form and the URDF do.
"""

from __future__ import annotations

import math

import numpy as np

from quirobot_description.frames import rpy_matrix
from quirobot_description.joint_names import LINK_NAMES
from quirobot_kinematics.model import TOOL0_RPY, KinematicModel, KinematicsError, as_feed, as_joint_vector

#: Every frame of `link_frames`, root first.
FRAME_NAMES = ("world", "base_link", *LINK_NAMES, "tool0", "drill_tip")


def forward_kinematics(q: object, model: KinematicModel, feed: float = 0.0) -> np.ndarray:
    """Pose of tool0 (or of the drill tip, `feed` m along tool z) in the world frame.

    q: (5,) joint values (d1, d2, d3 in m; theta4, theta5 in rad) -> (4, 4) homogeneous matrix;
    or (N, 5) -> (N, 4, 4). Joint limits are not enforced (the report's examples lie outside them).
    """
    try:
        array = np.asarray(q, dtype=float)
    except (TypeError, ValueError) as error:
        raise KinematicsError(f"q must be numbers, shape (5,) or (N, 5), got {q!r}") from error
    if array.ndim == 1:
        return forward_kinematics_single(array.tolist() if array.shape == (5,) else array, model, feed)
    if array.ndim == 2 and array.shape[1] == 5:
        return forward_kinematics_batch(array, model, feed)
    raise KinematicsError(f"q must have shape (5,) or (N, 5), got shape {array.shape}")


def forward_kinematics_single(q: object, model: KinematicModel, feed: float = 0.0) -> np.ndarray:
    """(4, 4) pose for one configuration q of 5 numbers, in scalar math (the fast path)."""
    if not isinstance(q, list) or len(q) != 5:
        q = as_joint_vector(q).tolist()
    if model.errors is not None:  # a calibrated model: the actual machine's chain
        from quirobot_kinematics.geometric import actual_forward_kinematics

        return actual_forward_kinematics(as_joint_vector(q), model, model.errors, as_feed(feed))
    s4, c4, s5, c5, origin, axis = _closed_form(q, model, feed)
    return np.array(
        (
            (s4, c4 * s5, axis[0], origin[0]),
            (c4, -s4 * s5, axis[1], origin[1]),
            (0.0, c5, axis[2], origin[2]),
            (0.0, 0.0, 0.0, 1.0),
        )
    )


def tool_axis_single(
    q: list[float], model: KinematicModel, feed: float = 0.0
) -> tuple[list[float], list[float]]:
    """The origin (3 floats, m) of tool0, or of the drill tip `feed` m along tool z, and the tool's z
    axis (3 floats, unit) in the world frame for one configuration q of 5 floats:
    `forward_kinematics_single`'s last two columns, the same numbers, without building the matrix
    (every control period takes several: the no-go zone check, the executor's tip)."""
    if model.errors is not None or not isinstance(q, list) or len(q) != 5:
        pose = forward_kinematics_single(q, model, feed)
        return pose[:3, 3].tolist(), pose[:3, 2].tolist()
    return _closed_form(q, model, feed)[4:]


def _closed_form(q: list[float], model: KinematicModel, feed: float):
    """The closed form's terms for q (5 floats, checked finite) and `feed` m: sin and cos of
    theta4 and theta5, the origin (3 floats, m) of tool0 moved `feed` along its z axis, that axis."""
    d1, d2, d3, t4, t5 = q
    if not math.isfinite(d1 + d2 + d3 + t4 + t5):
        as_joint_vector(q)  # raises, naming the joint
    if feed != 0.0:
        feed = as_feed(feed)
    s4 = math.sin(t4)
    c4 = math.cos(t4)
    s5 = math.sin(t5)
    c5 = math.cos(t5)
    ax = c4 * c5
    ay = -s4 * c5
    reach = model.l5 + feed
    origin = [d1 + reach * ax, d2 + reach * ay, -d3 - model.l4 - reach * s5]
    return s4, c4, s5, c5, origin, [ax, ay, -s5]


#: Poses computed per block in the batched FK: the block's output (block * 128 bytes) stays in cache
#: while its 16 entries are written, which halves the time per pose on 200k poses.
BATCH_BLOCK = 8192


def forward_kinematics_batch(
    q: np.ndarray, model: KinematicModel, feed: float = 0.0, out: np.ndarray | None = None
) -> np.ndarray:
    """(N, 4, 4) poses for q of shape (N, 5), vectorized with numpy; written into `out` if given."""
    q = np.asarray(q, dtype=float)
    if q.ndim != 2 or q.shape[1] != 5:
        raise KinematicsError(f"q must have shape (N, 5), got shape {q.shape}")
    if not np.all(np.isfinite(q)):
        rows = np.flatnonzero(~np.all(np.isfinite(q), axis=1))
        raise KinematicsError(f"q must be finite; row {rows[0]} is {q[rows[0]].tolist()}")
    feed = as_feed(feed)
    n = q.shape[0]
    if model.errors is not None:  # a calibrated model: the actual machine's chain
        from quirobot_kinematics.geometric import actual_forward_kinematics

        poses = actual_forward_kinematics(q, model, model.errors, feed) if n else np.empty((0, 4, 4))
        if out is None:
            return poses
        out[...] = poses
        return out
    if out is None:
        out = np.empty((n, 4, 4))
    elif out.shape != (n, 4, 4) or out.dtype != np.float64:
        raise KinematicsError(
            f"out must be a float64 array of shape ({n}, 4, 4), got {out.dtype} {out.shape}"
        )
    reach = model.l5 + feed
    for start in range(0, n, BATCH_BLOCK):
        qb = q[start : start + BATCH_BLOCK]
        T = out[start : start + BATCH_BLOCK]
        s4 = np.sin(qb[:, 3])
        c4 = np.cos(qb[:, 3])
        s5 = np.sin(qb[:, 4])
        c5 = np.cos(qb[:, 4])
        T[:, 0, 0] = s4
        T[:, 1, 0] = c4
        T[:, 2, 0] = 0.0
        np.multiply(c4, s5, out=T[:, 0, 1])
        np.multiply(s4, s5, out=T[:, 1, 1])
        np.negative(T[:, 1, 1], out=T[:, 1, 1])
        T[:, 2, 1] = c5
        np.multiply(c4, c5, out=T[:, 0, 2])
        np.multiply(s4, c5, out=T[:, 1, 2])
        np.negative(T[:, 1, 2], out=T[:, 1, 2])
        np.negative(s5, out=T[:, 2, 2])
        T[:, 0, 3] = qb[:, 0] + reach * T[:, 0, 2]
        T[:, 1, 3] = qb[:, 1] + reach * T[:, 1, 2]
        T[:, 2, 3] = -model.l4 - qb[:, 2] - reach * s5
        T[:, 3, :3] = 0.0
        T[:, 3, 3] = 1.0
    return out


def _translation(x: float, y: float, z: float) -> np.ndarray:
    T = np.eye(4)
    T[:3, 3] = (x, y, z)
    return T


def _homogeneous(rotation: np.ndarray) -> np.ndarray:
    """(4, 4) of a (3, 3) rotation."""
    T = np.eye(4)
    T[:3, :3] = rotation
    return T


def _rotation(axis: str, angle: float) -> np.ndarray:
    """Homogeneous rotation by `angle` rad about the unit axis x, y or z."""
    c, s = math.cos(angle), math.sin(angle)
    i, j = {"x": (1, 2), "y": (2, 0), "z": (0, 1)}[axis]
    T = np.eye(4)
    T[i, i] = c
    T[j, j] = c
    T[i, j] = -s
    T[j, i] = s
    return T


def link_frames(q: object, model: KinematicModel, feed: float = 0.0) -> dict[str, np.ndarray]:
    """Every link frame of the URDF in the world frame, as (4, 4) arrays keyed by FRAME_NAMES.

    Composes the URDF joints: x_carriage at (d1, 0, 0), y_carriage at (0, d2, 0) from it, z_ram
    at (0, 0, -d3) (gantry_z moves down), wrist_yaw_link turned theta4 about -z, wrist_pitch_link
    at (0, 0, -l4) turned theta5 about its y, tool0 at (l5, 0, 0) with rpy (pi/2, 0, pi/2), and
    drill_tip `feed` m along tool0's z.
    """
    d1, d2, d3, t4, t5 = as_joint_vector(q).tolist()
    feed = as_feed(feed)
    frames = {"world": np.eye(4)}
    frames["base_link"] = frames["world"].copy()
    frames["x_carriage"] = frames["base_link"] @ _translation(d1, 0.0, 0.0)
    frames["y_carriage"] = frames["x_carriage"] @ _translation(0.0, d2, 0.0)
    frames["z_ram"] = frames["y_carriage"] @ _translation(0.0, 0.0, -d3)
    frames["wrist_yaw_link"] = frames["z_ram"] @ _rotation("z", -t4)
    frames["wrist_pitch_link"] = (
        frames["wrist_yaw_link"] @ _translation(0.0, 0.0, -model.l4) @ _rotation("y", t5)
    )
    frames["tool0"] = (
        frames["wrist_pitch_link"] @ _translation(model.l5, 0.0, 0.0) @ _homogeneous(rpy_matrix(*TOOL0_RPY))
    )
    frames["drill_tip"] = frames["tool0"] @ _translation(0.0, 0.0, feed)
    return frames
