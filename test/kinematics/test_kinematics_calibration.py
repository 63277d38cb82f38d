"""Kinematic calibration: identification recovers planted errors (exactly without noise, within its
predicted covariance with noise), pose selection beats random poses, the TCP pivot, and a CI-sized
campaign takes the laser-tracker-calibrated robot from >= 0.3 mm to <= 0.1 mm p95."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from quirobot_description.geometric_errors import GeometricErrors
from quirobot_description.parameters import load_parameters
from quirobot_kinematics import KinematicModel
from quirobot_kinematics.calibration import (
    ROBOT_PARAMETERS,
    candidate_configurations,
    draw_targets,
    evaluate,
    identification_jacobian,
    identify,
    observability,
    parameter_scale,
    pivot_configurations,
    pivot_tcp,
    run_campaign,
    select_poses,
    tool0_positions,
)
from quirobot_kinematics.geometric import actual_forward_kinematics


@pytest.fixture(scope="module")
def parameters():
    return load_parameters()


@pytest.fixture(scope="module")
def model(parameters) -> KinematicModel:
    return KinematicModel.from_parameters(parameters)


def robot_vector(errors: GeometricErrors) -> np.ndarray:
    return np.array([getattr(errors, name) for name in ROBOT_PARAMETERS])


def test_noise_free_identification_recovers_the_planted_errors(parameters, model):
    actual = parameters.geometric.sample(np.random.default_rng(1))
    q = candidate_configurations(model, 40, np.random.default_rng(2))
    result = identify(
        q, tool0_positions(q, model, actual), model, 1e-6, parameter_scale(parameters.geometric)
    )
    np.testing.assert_allclose(robot_vector(result.errors), robot_vector(actual), rtol=0, atol=1e-9)
    assert result.residual_rms < 1e-12


def test_noisy_identification_is_within_its_predicted_covariance(parameters, model):
    """Over 8 campaigns: the parameter errors' Mahalanobis distance under the predicted covariance
    is chi-square with 18 degrees of freedom; its mean is 18 and no campaign is past the 99.9 %
    point (and no parameter past 4.5 sigma)."""
    from scipy.stats import chi2

    noise = 2e-5
    scale = parameter_scale(parameters.geometric)
    distances = []
    for seed in range(8):
        rng = np.random.default_rng(100 + seed)
        actual = parameters.geometric.sample(rng)
        q = candidate_configurations(model, 60, rng)
        measured = tool0_positions(q, model, actual) + rng.normal(0.0, noise / np.sqrt(3.0), (60, 3))
        result = identify(q, measured, model, noise, scale)
        error = robot_vector(result.errors) - robot_vector(actual)
        distances.append(float(error @ np.linalg.solve(result.covariance, error)))
        assert np.all(np.abs(error) <= 4.5 * np.sqrt(np.diag(result.covariance)))
    assert max(distances) < chi2.ppf(0.999, len(ROBOT_PARAMETERS))
    assert 0.5 * len(ROBOT_PARAMETERS) < np.mean(distances) < 1.6 * len(ROBOT_PARAMETERS)


def test_poses_chosen_by_observability_beat_random_ones(parameters, model):
    scale = parameter_scale(parameters.geometric)
    candidates = candidate_configurations(model, 150, np.random.default_rng(3))
    per_pose = identification_jacobian(candidates, model, GeometricErrors.zero(), scale).reshape(150, 3, -1)
    chosen = select_poses(per_pose, 25)
    assert len(set(chosen.tolist())) == 25
    index, condition = observability(per_pose[chosen].reshape(-1, per_pose.shape[2]))
    random_index, random_condition = observability(per_pose[:25].reshape(-1, per_pose.shape[2]))
    assert index > 1.5 * random_index
    assert condition < random_condition


def test_pivoting_finds_the_tcp_offset(parameters, model):
    actual = parameters.geometric.sample(np.random.default_rng(4))
    divot = np.array([0.9, 1.1, -1.3])
    q = pivot_configurations(model, actual, divot, parameters.calibration)
    flange = replace(actual, tcp_offset_x=0.0, tcp_offset_y=0.0, tcp_offset_z=0.0)
    tips = actual_forward_kinematics(q, model, actual)[:, :3, 3]
    np.testing.assert_allclose(tips, np.tile(divot, (len(q), 1)), atol=1e-10)  # seated
    tcp, centre, rms = pivot_tcp(actual_forward_kinematics(q, model, flange))
    np.testing.assert_allclose(
        tcp, [actual.tcp_offset_x, actual.tcp_offset_y, actual.tcp_offset_z], atol=1e-9
    )
    np.testing.assert_allclose(centre, divot, atol=1e-9)
    assert rms < 1e-9


def test_a_laser_tracker_campaign_brings_p95_from_above_0_3_mm_to_below_0_1_mm(parameters, model):
    settings = replace(parameters.calibration, candidate_poses=150)
    targets = draw_targets(model, 150, np.random.default_rng(5))
    before, after = [], []
    for seed in range(3):
        rng = np.random.default_rng(200 + seed)
        actual = parameters.geometric.sample(rng)
        campaign = run_campaign(
            model, actual, parameters.geometric, settings, parameters.calibration.laser_tracker_noise, rng
        )
        assert campaign.observability > campaign.candidate_observability
        before.append(evaluate(model, actual, targets).position)
        after.append(evaluate(model.calibrated(campaign.identified), actual, targets).position)
    before, after = np.concatenate(before), np.concatenate(after)
    assert len(after) == len(before) > 300
    assert np.percentile(before, 95) >= 3e-4
    assert np.percentile(after, 95) <= 1e-4
