"""Patient registration: the patient (image) frame in the world from tracked fiducials or surface.

* `paired_point_registration`: the rigid transform minimising the squared distances between
  paired points (Arun, Huang & Blostein 1987; Horn 1987 in closed form): the SVD of the
  centred cross-covariance, with the reflection case (det = -1, coplanar or noisy points)
  corrected by flipping the last singular vector (Umeyama 1991), so the result is always a rotation.
* `icp`: optional surface refinement, point-to-point iterative closest point (Besl & McKay 1992)
  on digitised bone-surface points against the image's surface points, from the fiducials' transform.
* `fiducial_registration_error` (FRE, RMS of the residuals) and `predicted_tre` at a target:
  Fitzpatrick, West & Maurer 1998, TRE^2(r) = FLE^2 / N (1 + 1/3 sum_k d_k^2 / f_k^2), with d_k
  the target's and f_k the fiducials' RMS distance from the fiducials' principal axis k, FLE the
  3D RMS fiducial localisation error. The same paper's FRE^2 = (1 - 2/N) FLE^2 on average.
* `map_entry_direction`: a DrillHole entry point and direction from the patient frame to the world.
* `registration_document` / `read_registration`: the registration file (`quirobot register
  --output`; config/registration.yaml for the simulation) task_node publishes as the tf2 frame
  world -> patient: translation (m) and rotation (unit quaternion x, y, z, w, tf2's order), each
  {value, unit, source}.

Every transform is a (4, 4) homogeneous matrix, world_from_patient (points in m).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from quirobot_description.geometric_errors import RegistrationParameters
from quirobot_description.sourced_yaml import SourcedReader, read_yaml_mapping
from quirobot_kinematics.model import KinematicsError
from quirobot_kinematics.rotations import matrix_from_quaternion, quaternion_from_matrix

#: ICP stops when the RMS distance changes by less than this between iterations (m).
ICP_TOLERANCE = 1e-12
ICP_ITERATIONS = 100
#: Version of the registration file format.
REGISTRATION_VERSION = 1


class RegistrationFileError(ValueError):
    """A registration file that cannot be read (named with the key in the message)."""


def _points(value: object, what: str) -> np.ndarray:
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as error:
        raise KinematicsError(f"{what} must be an (N, 3) array of points in m") from error
    if array.ndim != 2 or array.shape[1] != 3:
        raise KinematicsError(f"{what} must have shape (N, 3), got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise KinematicsError(f"{what} must be finite")
    return array


def paired_point_registration(patient: object, world: object) -> np.ndarray:
    """(4, 4) world_from_patient minimising sum |T p_i - w_i|^2 over paired points (N, 3) m.

    Refuses fewer than 3 pairs, mismatched counts and collinear points (the rotation about their
    line is undefined), naming the problem.
    """
    p, w = _points(patient, "patient points"), _points(world, "world points")
    if p.shape != w.shape:
        raise KinematicsError(f"paired points must match: {len(p)} patient points, {len(w)} world points")
    if len(p) < 3:
        raise KinematicsError(f"paired-point registration needs at least 3 fiducials, got {len(p)}")
    p_mean, w_mean = p.mean(axis=0), w.mean(axis=0)
    p_c, w_c = p - p_mean, w - w_mean
    singular_p = np.linalg.svd(p_c, compute_uv=False)
    if singular_p[1] <= 1e-9 * max(singular_p[0], 1e-300):
        raise KinematicsError("the fiducials are collinear: the rotation about their line is undefined")
    u, _, vt = np.linalg.svd(p_c.T @ w_c)  # H = sum p w^T = U S V^T; R = V U^T
    d = np.sign(np.linalg.det(vt.T @ u.T))
    rotation = vt.T @ np.diag([1.0, 1.0, d if d != 0.0 else 1.0]) @ u.T
    T = np.eye(4)
    T[:3, :3] = rotation
    T[:3, 3] = w_mean - rotation @ p_mean
    return T


def apply(T: np.ndarray, points: object) -> np.ndarray:
    """Points (N, 3) or (3,) mapped by the (4, 4) transform T."""
    array = np.asarray(points, dtype=float)
    return array @ T[:3, :3].T + T[:3, 3]


def fiducial_registration_error(T: np.ndarray, patient: object, world: object) -> float:
    """FRE: RMS distance (m) between the mapped patient points and their world pairs."""
    residual = apply(T, _points(patient, "patient points")) - _points(world, "world points")
    return float(np.sqrt(np.mean(np.sum(residual**2, axis=1))))


def predicted_tre(fiducials: object, target: object, fle: float) -> float:
    """Expected RMS target registration error (m) at `target` (3,) for fiducials (N, 3) in the same
    frame localised with 3D RMS error `fle` m (Fitzpatrick, West & Maurer 1998, eq. 46)."""
    f = _points(fiducials, "fiducials")
    if len(f) < 3:
        raise KinematicsError(f"the TRE needs at least 3 fiducials, got {len(f)}")
    centred = f - f.mean(axis=0)
    axes = np.linalg.svd(centred, full_matrices=False)[2]  # principal axes, rows
    r = np.asarray(target, dtype=float) - f.mean(axis=0)
    total = 0.0
    for axis in axes:
        d2 = float(r @ r - (r @ axis) ** 2)  # squared distance of the target from the axis
        f2 = float(np.mean(np.sum(centred**2, axis=1) - (centred @ axis) ** 2))
        total += d2 / f2
    return math.sqrt(fle**2 / len(f) * (1.0 + total / 3.0))


def icp(
    surface_world: object, surface_patient: object, initial: np.ndarray, iterations: int = ICP_ITERATIONS
) -> tuple[np.ndarray, float]:
    """Refine world_from_patient `initial` (4, 4) so that the digitised surface points (M, 3) in the
    world lie on the image's surface points (K, 3) in the patient frame: point-to-point ICP.
    Returns (T, RMS closest-point distance m)."""
    from scipy.spatial import cKDTree

    digitised = _points(surface_world, "digitised surface points")
    model = _points(surface_patient, "image surface points")
    tree = cKDTree(model)
    patient_from_world = np.linalg.inv(initial)
    previous = math.inf
    rms = math.inf
    for _ in range(iterations):
        mapped = apply(patient_from_world, digitised)
        distance, index = tree.query(mapped)
        rms = float(np.sqrt(np.mean(distance**2)))
        if abs(previous - rms) < ICP_TOLERANCE:
            break
        previous = rms
        patient_from_world = paired_point_registration(digitised, model[index])
    return np.linalg.inv(patient_from_world), rms


def map_entry_direction(T: np.ndarray, entry: object, direction: object) -> tuple[np.ndarray, np.ndarray]:
    """A drill hole's entry point (3,) m and direction (3,) from the patient frame to the world
    through world_from_patient T: (T entry, R direction)."""
    entry = np.asarray(entry, dtype=float)
    direction = np.asarray(direction, dtype=float)
    if entry.shape != (3,) or direction.shape != (3,):
        raise KinematicsError(
            f"entry and direction must be 3 numbers, got shapes {entry.shape}, {direction.shape}"
        )
    return apply(T, entry), T[:3, :3] @ direction


@dataclass(frozen=True)
class SimulatedRegistration:
    """One simulated registration: the truth, the estimate and its errors (m, rad)."""

    truth: np.ndarray  # (4, 4) world_from_patient
    estimate: np.ndarray  # (4, 4) from the fiducials (and the surface, with ICP)
    fre: float  # m
    tre_predicted: float  # m, at the target (FWM 1998)
    tre: float  # m, the actual error at the target
    rotation_error: float  # rad, angle of estimate^-1 truth's rotation


def random_rotation(rng: np.random.Generator, largest: float) -> np.ndarray:
    """(3, 3) rotation by an angle uniform in [0, largest] rad about a random axis."""
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    angle = rng.uniform(0.0, largest)
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + math.sin(angle) * K + (1.0 - math.cos(angle)) * K @ K


def simulate_registration(
    settings: RegistrationParameters,
    rng: np.random.Generator,
    target_world: np.ndarray,
    surface: bool = False,
) -> SimulatedRegistration:
    """A patient frame drawn (rotated up to settings.patient_rotation) with its target
    (settings.target, the planned entry) at `target_world` (3,) m, its fiducials localised with the
    FLE, registered (and refined by ICP on 200 digitised points of a 20 mm radius bone cylinder
    under the target, with the same localisation noise, if `surface`)."""
    truth = np.eye(4)
    truth[:3, :3] = random_rotation(rng, settings.patient_rotation)
    truth[:3, 3] = np.asarray(target_world, dtype=float) - truth[:3, :3] @ settings.target
    fiducials = settings.fiducial_pattern()
    sigma = settings.fiducial_localization_error / math.sqrt(3.0)
    measured = apply(truth, fiducials) + rng.normal(0.0, sigma, fiducials.shape)
    estimate = paired_point_registration(fiducials, measured)
    fre = fiducial_registration_error(estimate, fiducials, measured)
    if surface:
        angle, along = np.meshgrid(np.linspace(0.0, math.pi, 60), np.linspace(-0.05, 0.05, 40))
        bone = np.stack([along.ravel(), 0.02 * np.cos(angle.ravel()), 0.02 * np.sin(angle.ravel())], axis=1)
        bone += settings.target - np.array([0.0, 0.0, 0.02])  # the target on top of the bone
        picks = bone[rng.choice(len(bone), 200, replace=False)]
        digitised = apply(truth, picks) + rng.normal(0.0, sigma, picks.shape)
        estimate, _ = icp(digitised, bone, estimate)
    target = settings.target
    tre = float(np.linalg.norm(apply(estimate, target) - apply(truth, target)))
    delta = estimate[:3, :3].T @ truth[:3, :3]
    rotation_error = float(math.acos(max(-1.0, min(1.0, (np.trace(delta) - 1.0) / 2.0))))
    return SimulatedRegistration(
        truth,
        estimate,
        fre,
        predicted_tre(fiducials, target, settings.fiducial_localization_error),
        tre,
        rotation_error,
    )


@dataclass(frozen=True)
class RegisteredFrame:
    """A registration file's frame: `transform` (4, 4) parent_from_child, points in m."""

    parent: str  # e.g. "world"
    child: str  # e.g. "patient"
    transform: np.ndarray


def registration_document(
    transform: np.ndarray, source: str, parent: str = "world", child: str = "patient"
) -> dict[str, Any]:
    """The registration file's mapping for `transform` (4, 4) parent_from_child."""
    T = np.asarray(transform, dtype=float)
    return {
        "schema_version": REGISTRATION_VERSION,
        "parent_frame": parent,
        "child_frame": child,
        "transform": {
            "translation": {"value": [float(v) for v in T[:3, 3]], "unit": "m", "source": source},
            "rotation": {
                "value": [float(v) for v in quaternion_from_matrix(T[:3, :3])],
                "unit": "1",
                "source": f"{source} (unit quaternion x, y, z, w)",
            },
        },
    }


def read_registration(path: str | Path) -> RegisteredFrame:
    """The frame of a registration file (`registration_document`'s form); anything else raises
    RegistrationFileError naming the file and the key."""
    path = Path(path)
    raw = read_yaml_mapping(path, RegistrationFileError, "registration file")
    label = f"registration file {path}"
    if raw.get("schema_version") != REGISTRATION_VERSION:
        raise RegistrationFileError(
            f"{label}: schema_version must be {REGISTRATION_VERSION}, got {raw.get('schema_version')!r}"
        )
    frames = []
    for key in ("parent_frame", "child_frame"):
        name = raw.get(key)
        if not isinstance(name, str) or not name.strip() or name.startswith("/"):
            raise RegistrationFileError(f"{label}: {key}: must be a tf2 frame name, got {name!r}")
        frames.append(name)
    if frames[0] == frames[1]:
        raise RegistrationFileError(f"{label}: child_frame must differ from parent_frame {frames[0]!r}")
    reader = SourcedReader(raw, label, RegistrationFileError)
    for key, unit in (("transform.translation", "m"), ("transform.rotation", "1")):
        if (given := reader.quantity(key).unit) != unit:
            raise reader.fail(key, f"unit must be {unit!r}, got {given!r}")
    translation = reader.vector("transform.translation", 3)
    rotation = reader.vector("transform.rotation", 4)
    try:
        matrix = matrix_from_quaternion(*rotation)
    except KinematicsError as error:
        raise reader.fail("transform.rotation", str(error)) from error
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = matrix, translation
    return RegisteredFrame(frames[0], frames[1], T)
