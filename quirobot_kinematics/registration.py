"""Patient registration: the patient (image) frame in the world from tracked fiducials or surface.

* `paired_point_registration`: the rigid transform minimising the squared distances between
  paired points (Arun, Huang & Blostein 1987; Horn 1987 in closed form): the SVD of the
  centred cross-covariance. Its reflection case (det = -1) is corrected by flipping the last
  singular vector (Umeyama 1991) only where the points are coplanar (their mirror image is then a
  rotation of them: nothing is lost); with points in three dimensions the best fit being a
  reflection means the two sets are mirror images (left and right swapped), or too flat for their
  noise, and it is refused. Fewer than 3 points and (near-)collinear ones, whose spread across
  their line is below COLLINEAR_SPREAD of the spread along it, are refused too.
* `register_fiducials`: patient registration: the paired points, refused unless the predicted
  TRE at the target and the predicted rotation error are within the parameter file's bounds
  (`registration.max_predicted_tre`, `max_rotation_error`: the accuracy budget's registered
  stage, docs/accuracy.md). `simulate_registration` (`quirobot register`, the budget) uses it.
* `icp`: optional surface refinement, point-to-point iterative closest point (Besl & McKay 1992)
  on digitised bone-surface points against the image's surface points, from the fiducials' transform.
* `fiducial_registration_error` (FRE, RMS of the residuals) and `predicted_tre` at a target:
  Fitzpatrick, West & Maurer 1998, TRE^2(r) = FLE^2 / N (1 + 1/3 sum_k d_k^2 / f_k^2), with d_k
  the target's and f_k the fiducials' RMS distance from the fiducials' principal axis k, FLE the
  3D RMS fiducial localisation error. The same paper's FRE^2 = (1 - 2/N) FLE^2 on average. Its
  rotational part is a rotation about axis k of RMS FLE / sqrt(3 N f_k^2) rad:
  `predicted_rotation_error` is that of the least determined axis (the drill axis' tilt).
* `map_entry_direction`: a DrillHole entry point and direction from the patient frame to the world.
* `registration_document` / `read_registration`: the registration file (`quirobot register
  --output`; config/registration.yaml for the simulation) task_node publishes as the tf2 frame
  world -> patient: translation (m) and rotation (unit quaternion x, y, z, w, tf2's order), each
  {value, unit, source}. A quaternion whose norm is off 1 by more than QUATERNION_NORM_TOLERANCE
  is refused (normalising it silently turned a dropped digit into a rotation 15 mm off at the
  hole), and so is a child frame that is one of the robot's own (ROBOT_FRAMES: publishing it
  would give that link a second parent in tf2).

Every transform is a (4, 4) homogeneous matrix, world_from_patient (points in m).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from quirobot_description.file_schema import REGISTRATION_FILE
from quirobot_description.geometric_errors import RegistrationParameters
from quirobot_description.shown_numbers import compared, shown
from quirobot_description.sourced_yaml import SourcedReader, read_yaml_mapping
from quirobot_kinematics.forward import FRAME_NAMES
from quirobot_kinematics.model import KinematicsError
from quirobot_kinematics.rotations import matrix_from_quaternion, quaternion_from_matrix

#: ICP stops when the RMS distance changes by less than this between iterations (m).
ICP_TOLERANCE = 1e-12
ICP_ITERATIONS = 100
#: Version of the registration file format.
REGISTRATION_VERSION = REGISTRATION_FILE.version
#: How far a registration file's quaternion norm may be from 1. registration_document writes 17
#: significant digits (norm 1 within 1e-15); one written by hand to 6 decimals is within 1e-6 of
#: unit norm (each component within 5e-7). A dropped or wrong digit moves the norm by far more
#: (the shipped file's x 0.0852... written 0.052...: 4.5e-3; tf2's own check, 1e-2 on the squared
#: norm, lets that through). It is a typo then, not rounding: refused rather than normalised.
QUATERNION_NORM_TOLERANCE = 1e-6
#: Spread of paired points across their principal line below which they count as collinear, as a
#: fraction of their spread along it (RMS distances, the singular values of the centred points).
#: The rotation about the line rests on that spread alone; 1 % of it is 0.6 mm across for the
#: shipped 60 mm pattern, where the optical tracker's FLE is 0.25 mm. A numerical guard: the
#: rotation-error bound of `register_fiducials` is the registration's criterion.
COLLINEAR_SPREAD = 0.01
#: Every frame of the robot's own tf tree (the URDF's links, either tool): a registration must not
#: publish one of them as its child.
ROBOT_FRAMES = (*FRAME_NAMES, "drill_bit", "arthroscope", "camera_link", "camera_optical_frame")


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


#: Flatness below which paired points count as coplanar (third singular value of the centred
#: points over the first): their mirror image is then exactly a rotation of them.
_COPLANAR = 1e-9


def _spread(points: np.ndarray, what: str) -> np.ndarray:
    """(3,) singular values of the centred points (N, 3), after refusing a collinear set."""
    singular = np.linalg.svd(points - points.mean(axis=0), compute_uv=False)
    if singular[0] <= 0.0:
        raise KinematicsError(f"the {what} all coincide: no rotation can be registered")
    ratio = singular[1] / singular[0]
    if not ratio >= COLLINEAR_SPREAD:
        across, bound = compared(ratio, COLLINEAR_SPREAD)
        raise KinematicsError(
            f"the {what} are collinear: their spread across their line is {across} of the spread along "
            f"it, below {bound} (COLLINEAR_SPREAD): the rotation about the line is undetermined"
        )
    return singular


def paired_point_registration(patient: object, world: object, *, mirror: bool = False) -> np.ndarray:
    """(4, 4) world_from_patient minimising sum |T p_i - w_i|^2 over paired points (N, 3) m.

    Refuses fewer than 3 pairs, mismatched counts, collinear points (the rotation about their line
    is undefined: COLLINEAR_SPREAD) and, unless the points are coplanar, a best fit that is a
    reflection (mirrored sets), naming the problem. mirror=True rotates instead of refusing (ICP's
    closest-point pairs, which are no fiducials: Umeyama's correction).
    """
    p, w = _points(patient, "patient points"), _points(world, "world points")
    if p.shape != w.shape:
        raise KinematicsError(f"paired points must match: {len(p)} patient points, {len(w)} world points")
    if len(p) < 3:
        raise KinematicsError(f"paired-point registration needs at least 3 fiducials, got {len(p)}")
    singular_p = _spread(p, "patient points")
    p_mean, w_mean = p.mean(axis=0), w.mean(axis=0)
    p_c, w_c = p - p_mean, w - w_mean
    u, _, vt = np.linalg.svd(p_c.T @ w_c)  # H = sum p w^T = U S V^T; R = V U^T
    d = np.sign(np.linalg.det(vt.T @ u.T))
    if d < 0.0 and not mirror and singular_p[2] > _COPLANAR * singular_p[0]:
        raise KinematicsError(
            "the best fit of the points is a reflection (det -1): the world points are the patient "
            "points' mirror image (left and right swapped?) or too flat for their localisation error"
        )
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


def _principal_spreads(fiducials: object, what: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(fiducials (N, 3), principal axes (3, 3) rows, f_k^2 (3,) m^2: mean squared distance of
    the fiducials from each axis through their centroid); collinear sets refused."""
    f = _points(fiducials, "fiducials")
    if len(f) < 3:
        raise KinematicsError(f"{what} needs at least 3 fiducials, got {len(f)}")
    _spread(f, "fiducials")
    centred = f - f.mean(axis=0)
    axes = np.linalg.svd(centred, full_matrices=False)[2]  # principal axes, rows
    f2 = np.array([np.mean(np.sum(centred**2, axis=1) - (centred @ axis) ** 2) for axis in axes])
    return f, axes, f2


def predicted_tre(fiducials: object, target: object, fle: float) -> float:
    """Expected RMS target registration error (m) at `target` (3,) for fiducials (N, 3) in the same
    frame localised with 3D RMS error `fle` m (Fitzpatrick, West & Maurer 1998, eq. 46)."""
    f, axes, f2 = _principal_spreads(fiducials, "the TRE")
    r = np.asarray(target, dtype=float) - f.mean(axis=0)
    d2 = np.array([float(r @ r - (r @ axis) ** 2) for axis in axes])  # the target from each axis
    return math.sqrt(fle**2 / len(f) * (1.0 + float(np.sum(d2 / f2)) / 3.0))


def predicted_rotation_error(fiducials: object, fle: float) -> float:
    """Expected RMS rotation error (rad) about the fiducials' least determined principal axis,
    FLE / sqrt(3 N f_k^2) (the rotational part of Fitzpatrick, West & Maurer 1998's TRE): how far a
    drill axis mapped through the registration may tilt. fiducials (N, 3) m, fle m (3D RMS)."""
    f, _, f2 = _principal_spreads(fiducials, "the rotation error")
    return float(fle / math.sqrt(3.0 * len(f) * float(np.min(f2))))


@dataclass(frozen=True)
class FiducialRegistration:
    """A patient registration from fiducials (`register_fiducials`), with its predicted errors."""

    transform: np.ndarray  # (4, 4) world_from_patient
    fre: float  # m, RMS residual
    tre_predicted: float  # m, RMS at the target (FWM 1998)
    rotation_predicted: float  # rad, RMS about the least determined axis


def register_fiducials(
    patient: object, world: object, target: object, settings: RegistrationParameters
) -> FiducialRegistration:
    """world_from_patient from paired fiducials (N, 3) m (paired_point_registration's refusals),
    refused (KinematicsError, one line with both numbers) if the predicted TRE at `target` (3,) m,
    patient frame, exceeds settings.max_predicted_tre or the predicted rotation error exceeds
    settings.max_rotation_error, with settings.fiducial_localization_error as the FLE."""
    fle = settings.fiducial_localization_error
    transform = paired_point_registration(patient, world)
    fiducials = _points(patient, "patient points")
    tre = predicted_tre(fiducials, target, fle)
    if not tre <= settings.max_predicted_tre:
        value, bound = compared(tre * 1e3, settings.max_predicted_tre * 1e3)
        raise KinematicsError(
            f"registration refused: the predicted TRE at the target is {value} mm, above "
            f"registration.max_predicted_tre {bound} mm ({len(fiducials)} fiducials, FLE "
            f"{shown(fle * 1e3)} mm): spread the fiducials around the target"
        )
    rotation = predicted_rotation_error(fiducials, fle)
    if not rotation <= settings.max_rotation_error:
        value, bound = compared(math.degrees(rotation), math.degrees(settings.max_rotation_error))
        raise KinematicsError(
            f"registration refused: the predicted rotation error is {value} deg, above "
            f"registration.max_rotation_error {bound} deg: the fiducials lie too near a line"
        )
    return FiducialRegistration(
        transform, fiducial_registration_error(transform, fiducials, world), tre, rotation
    )


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
        patient_from_world = paired_point_registration(digitised, model[index], mirror=True)
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
    registered = register_fiducials(fiducials, measured, settings.target, settings)
    estimate = registered.transform
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
        truth, estimate, registered.fre, registered.tre_predicted, tre, rotation_error
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
    # Its schema (file_schema.REGISTRATION_FILE) refuses another schema_version and unknown keys.
    reader = SourcedReader(raw, label, RegistrationFileError, REGISTRATION_FILE)
    frames = []
    for key in ("parent_frame", "child_frame"):
        name = raw.get(key)
        if not isinstance(name, str) or not name.strip() or name.startswith("/"):
            raise RegistrationFileError(f"{label}: {key}: must be a tf2 frame name, got {name!r}")
        frames.append(name)
    if frames[0] == frames[1]:
        raise RegistrationFileError(f"{label}: child_frame must differ from parent_frame {frames[0]!r}")
    if frames[1] in ROBOT_FRAMES:
        raise RegistrationFileError(
            f"{label}: child_frame {frames[1]!r} is one of the robot's own frames (its URDF's links): "
            "published, it would move that link; name the registered frame, e.g. 'patient'"
        )
    for key, unit in (("transform.translation", "m"), ("transform.rotation", "1")):
        leaf = reader.node(key)
        if (given := leaf.get("unit") if isinstance(leaf, dict) else None) != unit:
            raise reader.fail(key, f"unit must be {unit!r}, got {given!r}")
    translation = reader.vector("transform.translation", 3)
    rotation = reader.vector("transform.rotation", 4)
    norm = float(np.linalg.norm(rotation))
    if not abs(norm - 1.0) <= QUATERNION_NORM_TOLERANCE:
        raise reader.fail(
            "transform.rotation",
            f"the quaternion's norm is {shown(norm, 10)}, more than {shown(QUATERNION_NORM_TOLERANCE)} "
            "from 1 (QUATERNION_NORM_TOLERANCE): a wrong or missing digit, not rounding; write the unit "
            "quaternion (x, y, z, w) with its digits",
        )
    try:
        matrix = matrix_from_quaternion(*rotation)
    except KinematicsError as error:
        raise reader.fail("transform.rotation", str(error)) from error
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = matrix, translation
    return RegisteredFrame(frames[0], frames[1], T)
