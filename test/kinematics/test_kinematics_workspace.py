"""Workspace: sampled volume against the exact box volume; reachability agrees with the scalar IK."""

from __future__ import annotations

import math

import numpy as np
import pytest

from quirobot_description.parameters import load_parameters
from quirobot_kinematics.forward import forward_kinematics
from quirobot_kinematics.inverse import ApproachTarget, IKError, inverse_kinematics
from quirobot_kinematics.model import KinematicModel
from quirobot_kinematics.workspace import estimate_workspace, plot_workspace, sampling_box


@pytest.fixture(scope="module")
def model() -> KinematicModel:
    return KinematicModel.from_parameters(load_parameters())


@pytest.mark.parametrize("approach", [(0.0, 0.0, -1.0), (1.0, 0.0, -1.0), (0.3, -0.5, 0.2), (1.0, 1.0, 0.0)])
def test_sampled_volume_matches_the_exact_one(model, approach):
    estimate = estimate_workspace(model, approach, samples=50_000, seed=41)
    exact = float(np.prod(model.upper[:3] - model.lower[:3]))  # box of the three prismatic ranges
    assert estimate.exact_volume == exact
    assert abs(estimate.volume - exact) < 4.0 * estimate.volume_standard_error
    # Bounds of the reachable samples: the prismatic box shifted by l5 * a (to within sampling density).
    a = np.asarray(approach) / np.linalg.norm(approach)
    reached = estimate.points[estimate.reachable]
    wrist_lower = np.array([model.lower[0], model.lower[1], -model.upper[2] - model.l4])
    wrist_upper = np.array([model.upper[0], model.upper[1], -model.lower[2] - model.l4])
    assert np.all(reached.min(axis=0) >= wrist_lower + model.l5 * a - 1e-12)
    assert np.all(reached.max(axis=0) <= wrist_upper + model.l5 * a + 1e-12)
    np.testing.assert_allclose(reached.min(axis=0), wrist_lower + model.l5 * a, atol=0.05)


def test_reachability_agrees_with_the_scalar_ik(model):
    approach = (0.2, 0.4, -1.0)
    estimate = estimate_workspace(model, approach, samples=600, seed=42)
    for point, reachable in zip(estimate.points, estimate.reachable, strict=True):
        if reachable:
            q = inverse_kinematics(ApproachTarget(point, approach), model)
            np.testing.assert_allclose(forward_kinematics(q, model)[:3, 3], point, atol=1e-12)
        else:
            with pytest.raises(IKError):
                inverse_kinematics(ApproachTarget(point, approach), model)


def test_every_in_limit_configuration_lies_in_the_sampling_box(model):
    lower, upper = sampling_box(model)
    q = np.random.default_rng(43).uniform(model.lower, model.upper, size=(20_000, 5))
    positions = forward_kinematics(q, model)[:, :3, 3]
    assert np.all(positions >= lower) and np.all(positions <= upper)


def test_upward_approach_reaches_nothing(model):
    estimate = estimate_workspace(model, (0.0, 0.0, 1.0), samples=1000)
    assert not estimate.approach_reachable
    assert estimate.hits == 0 and estimate.volume == 0.0 and estimate.exact_volume == 0.0
    # Just inside the pitch range (theta5 = -75 deg) it is reachable again.
    inside = (math.cos(math.radians(74.9)), 0.0, math.sin(math.radians(74.9)))
    assert estimate_workspace(model, inside, samples=1000).approach_reachable


def test_bad_requests_are_refused(model):
    with pytest.raises(IKError, match="samples"):
        estimate_workspace(model, samples=0)
    with pytest.raises(IKError, match="non-zero"):
        estimate_workspace(model, (0.0, 0.0, 0.0))
    with pytest.raises(IKError, match="finite"):
        estimate_workspace(model, (0.0, float("nan"), -1.0))


def test_plot_is_written(model, tmp_path):
    path = plot_workspace(estimate_workspace(model, samples=2000), tmp_path / "workspace.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
