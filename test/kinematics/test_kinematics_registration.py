"""Registration: known transforms recovered, the reflection case, FRE's and TRE's statistics
against a Monte-Carlo of noisy fiducials (Fitzpatrick-West-Maurer within 25 %), ICP, goal mapping."""

from __future__ import annotations

import math

import numpy as np
import pytest

from quirobot_description.parameters import load_parameters
from quirobot_kinematics.model import KinematicsError
from quirobot_kinematics.registration import (
    apply,
    fiducial_registration_error,
    icp,
    map_entry_direction,
    paired_point_registration,
    predicted_tre,
)


def rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rodrigues' formula, written here (independent of the code under test)."""
    k = np.asarray(axis, float) / np.linalg.norm(axis)
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * K @ K


def transform(axis, angle, translation) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = rotation(np.array(axis), angle)
    T[:3, 3] = translation
    return T


@pytest.fixture(scope="module")
def registration():
    return load_parameters().registration


def test_a_known_transform_is_recovered_from_exact_fiducials(registration):
    truth = transform([0.3, -0.5, 0.8], 0.7, [1.0, 0.9, -1.2])
    fiducials = registration.fiducial_pattern()
    found = paired_point_registration(fiducials, fiducials @ truth[:3, :3].T + truth[:3, 3])
    np.testing.assert_allclose(found, truth, atol=1e-12)
    assert fiducial_registration_error(found, fiducials, apply(truth, fiducials)) < 1e-12


def test_the_reflection_case_still_gives_a_rotation():
    """Coplanar points matched to their mirror image: the unconstrained SVD answer is a reflection."""
    points = np.array([[0.0, 0.0, 0.0], [0.1, 0.0, 0.0], [0.0, 0.05, 0.0], [0.07, 0.08, 0.0]])
    mirrored = points * np.array([1.0, -1.0, 1.0]) + 0.3
    found = paired_point_registration(points, mirrored)
    assert np.linalg.det(found[:3, :3]) == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(found[:3, :3] @ found[:3, :3].T, np.eye(3), atol=1e-12)


def test_bad_fiducials_are_refused_by_name():
    with pytest.raises(KinematicsError, match="at least 3 fiducials"):
        paired_point_registration(np.zeros((2, 3)), np.zeros((2, 3)))
    line = np.array([[0.0, 0, 0], [0.1, 0, 0], [0.2, 0, 0]])
    with pytest.raises(KinematicsError, match="collinear"):
        paired_point_registration(line, line)
    with pytest.raises(KinematicsError, match="3 patient points, 4 world points"):
        paired_point_registration(line, np.zeros((4, 3)))


def test_fre_and_tre_match_a_monte_carlo_of_noisy_fiducials(registration):
    """FLE isotropic Gaussian of 3D RMS fle: the Monte-Carlo RMS TRE at the target within 25 % of
    Fitzpatrick-West-Maurer's prediction, and the mean FRE^2 near (1 - 2/N) FLE^2."""
    fle = registration.fiducial_localization_error
    fiducials = registration.fiducial_pattern()
    target = registration.target
    truth = transform([0.2, 1.0, -0.4], 0.4, [0.8, 1.1, -1.3])
    rng = np.random.default_rng(12)
    tre2, fre2 = [], []
    for _ in range(4000):
        measured = apply(truth, fiducials) + rng.normal(0.0, fle / math.sqrt(3.0), fiducials.shape)
        found = paired_point_registration(fiducials, measured)
        tre2.append(float(np.sum((apply(found, target) - apply(truth, target)) ** 2)))
        fre2.append(fiducial_registration_error(found, fiducials, measured) ** 2)
    predicted = predicted_tre(fiducials, target, fle)
    assert math.sqrt(np.mean(tre2)) == pytest.approx(predicted, rel=0.25)
    n = len(fiducials)
    assert np.mean(fre2) == pytest.approx((1.0 - 2.0 / n) * fle**2, rel=0.1)
    far = target + np.array([0.0, 0.0, -0.3])  # TRE grows away from the fiducials
    assert predicted_tre(fiducials, far, fle) > 2.0 * predicted


def test_icp_refines_a_rough_registration_onto_the_surface():
    rng = np.random.default_rng(3)
    # An asymmetric bone-like surface in the patient frame: a bumpy ellipsoid patch.
    u, v = rng.uniform(0, math.pi, 3000), rng.uniform(0, 2 * math.pi, 3000)
    surface = np.stack([0.05 * np.sin(u) * np.cos(v), 0.03 * np.sin(u) * np.sin(v), 0.08 * np.cos(u)], axis=1)
    surface[:, 0] += 0.01 * np.sin(8 * surface[:, 2])
    truth = transform([0.1, 0.2, 1.0], 0.3, [1.0, 1.0, -1.0])
    digitised = apply(truth, surface[::15])
    rough = truth @ transform([1.0, 0.0, 0.3], 0.03, [0.002, -0.001, 0.002])
    refined, rms = icp(digitised, surface, rough)
    assert rms < 1e-9
    np.testing.assert_allclose(refined, truth, atol=1e-7)


def test_a_drill_hole_is_mapped_from_the_patient_frame():
    truth = transform([0.0, 0.0, 1.0], math.pi / 2, [1.0, 2.0, 3.0])
    entry, direction = map_entry_direction(truth, [0.1, 0.0, 0.0], [1.0, 0.0, 0.0])
    np.testing.assert_allclose(entry, [1.0, 2.1, 3.0], atol=1e-15)
    np.testing.assert_allclose(direction, [0.0, 1.0, 0.0], atol=1e-15)
