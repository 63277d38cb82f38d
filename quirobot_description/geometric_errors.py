"""The machine's geometric errors: what the real gantry and wrist differ from the nominal model by.

Parameter file section `geometric_errors`: each leaf's `value` is the design tolerance (the
+/- band of its machine-tool or gantry class, >= 0) and its `distribution` ({type: normal,
sigma}) the Monte-Carlo spread, drawn signed around zero (`GeometricErrors.sample`). The nominal
machine has none (`GeometricErrors.zero()`: `quirobot simulate`'s realistic plant); the accuracy
budget and the calibration campaign draw one machine each. Their meaning (quirobot_kinematics.
geometric, which composes them with the nominal chain):

* xy_squareness (rad): the y axis travels along (-sin g, cos g, 0), g from perpendicular to x.
* z_tilt_x, z_tilt_y (rad): the ram descends along (tan a, tan b, -1) / norm (slopes in x-z, y-z).
* <axis>_straightness_<direction> (m): the carriage's bow across its travel, largest at
  mid-travel (4 u (1 - u) of this amplitude, u the travel fraction), along the world direction.
* wrist_yaw_offset_x/y (m), wrist_yaw_tilt_x/y (rad): the yaw joint's origin in z_ram (URDF
  xyz, rpy = (tilt_x, tilt_y, 0)).
* wrist_pitch_offset_x (m), wrist_pitch_tilt_x/z (rad): the pitch joint's origin in
  wrist_yaw_link (xyz = (offset_x, 0, -(l4 + l4_error)), rpy = (tilt_x, 0, tilt_z)).
* l4_error, l5_error (m): link length errors (l5: wrist_pitch_link -> tool0 along x).
* tcp_offset_x/y/z (m): the drill tip at feed 0 in tool0 (bit runout and stick-out length).

A calibration file (`quirobot calibrate`) holds identified values of the same names, each with
its source "calibration campaign <date/seed>", and the machine they were identified on (its drives'
serial numbers, machine_identity); `read_calibration_file` loads both, `read_calibration` the values.
"""

from __future__ import annotations

import math
from dataclasses import astuple, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from quirobot_description.file_schema import CALIBRATION_FILE
from quirobot_description.machine_identity import MAX_SERIAL, SERIAL_NUMBER_OBJECT, MachineIdentity
from quirobot_description.shown_numbers import compared
from quirobot_description.sourced_yaml import SourcedReader, read_yaml_mapping

SECTION = "geometric_errors"
#: The calibration file's machine: its drives' serial numbers, by joint.
MACHINE_SECTION = "machine.drive_serial_numbers"
#: Version of the calibration file format.
CALIBRATION_VERSION = CALIBRATION_FILE.version


class CalibrationFileError(ValueError):
    """A calibration file that cannot be read (named with the key in the message)."""


@dataclass(frozen=True)
class GeometricErrors:
    """One machine's geometric errors (SI: m, rad; module docstring for each)."""

    xy_squareness: float = 0.0
    z_tilt_x: float = 0.0
    z_tilt_y: float = 0.0
    x_straightness_y: float = 0.0
    x_straightness_z: float = 0.0
    y_straightness_x: float = 0.0
    y_straightness_z: float = 0.0
    z_straightness_x: float = 0.0
    z_straightness_y: float = 0.0
    wrist_yaw_offset_x: float = 0.0
    wrist_yaw_offset_y: float = 0.0
    wrist_yaw_tilt_x: float = 0.0
    wrist_yaw_tilt_y: float = 0.0
    wrist_pitch_offset_x: float = 0.0
    wrist_pitch_tilt_x: float = 0.0
    wrist_pitch_tilt_z: float = 0.0
    l4_error: float = 0.0
    l5_error: float = 0.0
    tcp_offset_x: float = 0.0
    tcp_offset_y: float = 0.0
    tcp_offset_z: float = 0.0

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(item.name for item in fields(cls))

    @classmethod
    def zero(cls) -> GeometricErrors:
        return cls()

    @classmethod
    def from_vector(cls, vector: np.ndarray) -> GeometricErrors:
        """From (21,) values in `names()` order."""
        values = np.asarray(vector, dtype=float)
        if values.shape != (len(fields(cls)),):
            raise ValueError(f"geometric errors need {len(fields(cls))} values, got shape {values.shape}")
        return cls(*values.tolist())

    def vector(self) -> np.ndarray:
        """(21,) values in `names()` order."""
        return np.array(astuple(self))

    def unit(self, name: str) -> str:
        return "rad" if ("tilt" in name or name == "xy_squareness") else "m"

    def is_zero(self) -> bool:
        return not any(astuple(self))


@dataclass(frozen=True)
class GeometricTolerances:
    """The parameter file's section: tolerance (the +/- band) and sigma of each error, SI."""

    tolerance: GeometricErrors
    sigma: GeometricErrors

    def sample(self, rng: np.random.Generator) -> GeometricErrors:
        """One machine: each error drawn normal(0, sigma), clipped to its tolerance band."""
        sigma = self.sigma.vector()
        band = self.tolerance.vector()
        return GeometricErrors.from_vector(np.clip(rng.normal(0.0, 1.0, sigma.shape) * sigma, -band, band))

    def outside(self, errors: GeometricErrors) -> list[str]:
        """Each error of `errors` outside its tolerance band, as 'name value unit is outside its
        tolerance band +/-band unit' (the two numbers in digits that tell them apart); [] if none."""
        found = []
        for name in GeometricErrors.names():
            value, band = getattr(errors, name), getattr(self.tolerance, name)
            if not abs(value) <= band:  # also NaN
                size, edge = compared(abs(value), band)
                unit = errors.unit(name)
                found.append(
                    f"{name} {'-' if value < 0 else ''}{size} {unit} is outside its tolerance band "
                    f"+/-{edge} {unit}"
                )
        return found


def read_geometric_tolerances(reader: SourcedReader) -> GeometricTolerances:
    """The `geometric_errors` section: each leaf a tolerance >= 0 with {type: normal, sigma}."""
    tolerance, sigma = {}, {}
    for name in GeometricErrors.names():
        key = f"{SECTION}.{name}"
        tolerance[name] = reader.number(key, non_negative=True)
        spread = reader.node(key).get("distribution")
        value = spread.get("sigma") if isinstance(spread, dict) and spread.get("type") == "normal" else None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise reader.fail(
                f"{key}.distribution", f"must be {{type: normal, sigma}} (signed, mean 0), got {spread!r}"
            )
        if value < 0.0:
            raise reader.fail(f"{key}.distribution", f"sigma must be >= 0, got {value}")
        sigma[name] = float(value)
    return GeometricTolerances(GeometricErrors(**tolerance), GeometricErrors(**sigma))


def calibration_document(
    errors: GeometricErrors, source: str, machine: MachineIdentity, extra: dict[str, Any] | None = None
) -> dict:
    """The calibration file's mapping: every identified value {value, unit, source}, and the machine
    identified (its drives' serial numbers)."""
    document: dict[str, Any] = {"schema_version": CALIBRATION_VERSION}
    index, sub = SERIAL_NUMBER_OBJECT
    document["machine"] = {
        "drive_serial_numbers": {
            joint: {"value": serial, "unit": "1", "source": f"drive {joint}'s 0x{index:04X}:{sub:02X}"}
            for joint, serial in machine.serials
        }
    }
    document[SECTION] = {
        name: {"value": float(getattr(errors, name)), "unit": errors.unit(name), "source": source}
        for name in GeometricErrors.names()
    }
    if extra:
        document.update(extra)
    return document


@dataclass(frozen=True)
class Calibration:
    """A calibration file: the identified geometric errors and the machine they belong to."""

    errors: GeometricErrors
    machine: MachineIdentity


def read_calibration(path: str | Path, tolerances: GeometricTolerances) -> GeometricErrors:
    """The identified GeometricErrors of a calibration file (read_calibration_file)."""
    return read_calibration_file(path, tolerances).errors


def read_calibration_file(path: str | Path, tolerances: GeometricTolerances) -> Calibration:
    """A calibration file (`quirobot calibrate --output`): its identified GeometricErrors and its
    machine (the drives' serial numbers it was identified on).

    Every value must lie within its tolerance band, `tolerances` (the parameter file's
    `geometric_errors`, RobotParameters.geometric, given by the caller: this module is below the
    parameter file's loader, which imports it): a machine identified outside its bands is not the machine the
    model describes (a 20 mm TCP offset where the band is +/-1 mm is a wrong file or a wrong
    unit), and CalibrationFileError names the value and the band.
    """
    path = Path(path)
    raw = read_yaml_mapping(path, CalibrationFileError, "calibration file", as_xacro=True)
    label = f"calibration file {path}"
    if raw.get("schema_version") != CALIBRATION_VERSION:
        raise CalibrationFileError(
            f"{label}: schema_version must be {CALIBRATION_VERSION}, got {raw.get('schema_version')!r}"
            + (" (version 1 names no machine: calibrate again)" if raw.get("schema_version") == 1 else "")
        )
    section = raw.get(SECTION)
    if not isinstance(section, dict):
        raise CalibrationFileError(f"{label}: {SECTION}: missing (a mapping of identified errors)")
    unknown = sorted(set(section) - set(GeometricErrors.names()))
    if unknown:
        raise CalibrationFileError(f"{label}: {SECTION}: unknown key {', '.join(unknown)}")
    reader = SourcedReader(raw, label, CalibrationFileError, CALIBRATION_FILE)
    zero = GeometricErrors.zero()
    values = {}
    for name in GeometricErrors.names():
        key = f"{SECTION}.{name}"
        unit = reader.node(key).get("unit") if isinstance(reader.node(key), dict) else None
        if unit != zero.unit(name):
            raise reader.fail(key, f"unit must be {zero.unit(name)}, got {unit!r}")
        # the band check below is this value's range (tighter than the schema's, which it implies)
        values[name] = reader.number(key, check_range=False)
    errors = GeometricErrors(**values)
    outside = tolerances.outside(errors)
    if outside:
        more = f" (and {len(outside) - 1} more)" if len(outside) > 1 else ""
        raise CalibrationFileError(
            f"{label}: {SECTION}.{outside[0]}{more} (parameter file {SECTION}: the machine's tolerances)"
        )
    machine_section = raw.get("machine")
    drives = machine_section.get("drive_serial_numbers") if isinstance(machine_section, dict) else None
    if not isinstance(drives, dict) or not drives:
        raise CalibrationFileError(
            f"{label}: {MACHINE_SECTION}: missing (the serial numbers of the machine's drives, by joint)"
        )
    serials = {joint: reader.whole(f"{MACHINE_SECTION}.{joint}", 0, MAX_SERIAL) for joint in drives}
    try:
        machine = MachineIdentity.of(serials)
    except ValueError as error:
        raise CalibrationFileError(f"{label}: {MACHINE_SECTION}: {error}") from None
    return Calibration(errors, machine)


@dataclass(frozen=True)
class CalibrationParameters:
    """The calibration campaign (parameter file section `calibration`; SI units)."""

    optical_tracker_noise: float  # m, 3D RMS of one reading
    laser_tracker_noise: float  # m, 3D RMS of one reading
    poses: int  # measured poses
    candidate_poses: int  # random configurations the poses are chosen from
    pivot_poses: int  # orientations of the TCP pivot
    pivot_tilt: float  # rad, the pivot's cone half-angle
    pivot_seating_noise: float  # m, 3D RMS of the tip's seating in the divot

    def tracker_noise(self, tracker: str) -> float:
        """3D RMS (m) of the tracker "optical" or "laser"."""
        if tracker not in TRACKERS:
            raise ValueError(f"tracker must be one of {', '.join(TRACKERS)}, got {tracker!r}")
        return self.optical_tracker_noise if tracker == "optical" else self.laser_tracker_noise


#: The simulated trackers of a campaign (CalibrationParameters.tracker_noise).
TRACKERS = ("optical", "laser")


def read_calibration_parameters(reader: SourcedReader) -> CalibrationParameters:
    """The `calibration` section."""
    key = "calibration"
    return CalibrationParameters(
        optical_tracker_noise=reader.number(f"{key}.optical_tracker_noise", positive=True),
        laser_tracker_noise=reader.number(f"{key}.laser_tracker_noise", positive=True),
        poses=reader.whole(f"{key}.poses", 6, 1000),
        candidate_poses=reader.whole(f"{key}.candidate_poses", 6, 100000),
        pivot_poses=reader.whole(f"{key}.pivot_poses", 3, 1000),
        pivot_tilt=reader.number(f"{key}.pivot_tilt", positive=True),
        pivot_seating_noise=reader.number(f"{key}.pivot_seating_noise", non_negative=True),
    )


@dataclass(frozen=True)
class RegistrationParameters:
    """Patient registration (parameter file section `registration`; SI units)."""

    fiducials: int
    fiducial_radius: float  # m, from the planned entry
    fiducial_height: float  # m, depth step between alternate fiducials
    target_depth: float  # m, the entry below the fiducials' centroid
    fiducial_localization_error: float  # m, 3D RMS (FLE)
    patient_rotation: float  # rad, largest angle of the simulated patient frame
    max_predicted_tre: float  # m, RMS at the target: a registration predicted worse is refused
    max_rotation_error: float  # rad, RMS about the least determined axis: likewise

    def fiducial_pattern(self) -> np.ndarray:
        """(N, 3) m: the fiducials in the patient frame, evenly around the z axis at the radius,
        alternate ones fiducial_height deeper; the target is at (0, 0, -target_depth)."""
        angles = 2.0 * np.pi * np.arange(self.fiducials) / self.fiducials
        depth = np.where(np.arange(self.fiducials) % 2 == 1, -self.fiducial_height, 0.0)
        return np.stack(
            [self.fiducial_radius * np.cos(angles), self.fiducial_radius * np.sin(angles), depth], axis=1
        )

    @property
    def target(self) -> np.ndarray:
        """(3,) m: the planned entry in the patient frame."""
        return np.array([0.0, 0.0, -self.target_depth])


def read_registration_parameters(reader: SourcedReader) -> RegistrationParameters:
    """The `registration` section."""
    key = "registration"
    return RegistrationParameters(
        fiducials=reader.whole(f"{key}.fiducials", 3, 100),
        fiducial_radius=reader.number(f"{key}.fiducial_radius", positive=True),
        fiducial_height=reader.number(f"{key}.fiducial_height", positive=True),
        target_depth=reader.number(f"{key}.target_depth", non_negative=True),
        fiducial_localization_error=reader.number(f"{key}.fiducial_localization_error", positive=True),
        patient_rotation=reader.number(f"{key}.patient_rotation", non_negative=True),
        max_predicted_tre=reader.number(f"{key}.max_predicted_tre", positive=True),
        max_rotation_error=reader.number(f"{key}.max_rotation_error", positive=True),
    )
