"""Resolved rate by damped least squares: exact away from singularities, bounded near them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from quirobot_description.parameters import load_parameters
from quirobot_kinematics.differential import (
    adaptive_damping,
    damped_least_squares,
    resolved_rate,
    task_jacobian,
    task_velocity,
)
from quirobot_kinematics.forward import forward_kinematics
from quirobot_kinematics.jacobian import geometric_jacobian
from quirobot_kinematics.model import KinematicModel, KinematicsError


@pytest.fixture(scope="module")
def model() -> KinematicModel:
    return KinematicModel.from_parameters(load_parameters())


def regular_configurations(model: KinematicModel, n: int, seed: int) -> np.ndarray:
    q = np.random.default_rng(seed).uniform(model.lower, model.upper, size=(n, 5))
    return q[np.abs(np.cos(q[:, 4])) > 0.3]


@pytest.mark.parametrize("mode", ["full", "approach"])
def test_recovers_joint_velocities_of_a_feasible_twist(model, mode):
    rng = np.random.default_rng(31)
    for q in regular_configurations(model, 100, seed=32):
        qdot = rng.normal(size=5)
        twist = geometric_jacobian(q, model, feed=0.02) @ qdot
        np.testing.assert_allclose(resolved_rate(q, twist, model, mode=mode, feed=0.02), qdot, atol=1e-9)


def test_approach_mode_ignores_the_roll_about_the_tool_axis(model):
    q = np.array([1.0, 1.0, 1.0, 0.4, 0.7])
    a = forward_kinematics(q, model)[:3, 2]
    twist = np.array([0.01, -0.02, 0.03, 0.0, 0.0, 0.0])
    rolled = twist + np.concatenate([np.zeros(3), 0.5 * a])
    np.testing.assert_allclose(
        resolved_rate(q, rolled, model, mode="approach"),
        resolved_rate(q, twist, model, mode="approach"),
        atol=1e-12,
    )
    # and the tool point moves exactly with v
    qdot = resolved_rate(q, rolled, model, mode="approach")
    np.testing.assert_allclose(geometric_jacobian(q, model)[:3] @ qdot, twist[:3], atol=1e-12)


def test_full_mode_is_the_least_squares_solution(model):
    q = np.array([0.5, 1.5, 0.2, 2.0, 1.1])
    twist = np.array([0.1, 0.0, -0.05, 0.2, -0.1, 0.3])  # includes a roll the arm cannot make
    J = geometric_jacobian(q, model)
    expected = np.linalg.lstsq(J, twist, rcond=None)[0]
    np.testing.assert_allclose(resolved_rate(q, twist, model), expected, atol=1e-12)


def test_approach_task_becomes_singular_with_the_tool_vertical(model):
    sigma = np.linalg.svd(task_jacobian([1, 1, 1, 0.3, math.pi / 2], model, "approach"), compute_uv=False)
    assert sigma.min() < 1e-12
    # Block triangular (the angular rows do not depend on the gantry): |det| = 1 * |cos theta5|.
    for theta5 in (0.2, 1.0, 1.5, 2.5):
        J = task_jacobian([1, 1, 1, 0.3, theta5], model, "approach")
        assert abs(np.linalg.det(J)) == pytest.approx(abs(math.cos(theta5)), rel=1e-9)


@pytest.mark.parametrize("offset", [1e-3, 1e-6, 1e-9, 0.0])
def test_speed_stays_bounded_next_to_the_singularity(model, offset):
    q = np.array([1.0, 1.0, 1.0, 0.3, math.pi / 2 - offset])
    twist = np.array([0.05, 0.0, 0.0, 0.0, 0.3, 0.0])
    max_damping = 0.05
    qdot = resolved_rate(q, twist, model, mode="approach", max_damping=max_damping, threshold=0.1)
    velocity = task_velocity(q, twist, model, "approach")
    lam = adaptive_damping(math.cos(q[4]) if offset else 0.0, max_damping, 0.1)
    assert np.all(np.isfinite(qdot))
    assert np.linalg.norm(qdot) <= np.linalg.norm(velocity) / (2 * lam) + 1e-12
    # Undamped, the same request would need an enormous wrist speed.
    if offset and offset < 1e-3:
        undamped = damped_least_squares(task_jacobian(q, model, "approach"), velocity, 0.0)
        assert np.abs(undamped).max() > 100 * np.abs(qdot).max()


def test_tracks_a_straight_drilling_line_through_the_vertical(model):
    # Drill straight down with the tool vertical (singular): position must still be tracked.
    q = np.array([1.0, 1.0, 0.5, 0.3, math.pi / 2])
    dt = 1e-3
    start = forward_kinematics(q, model)[:3, 3]
    velocity = np.array([0.0, 0.0, -0.05])
    for step in range(1, 1001):
        error = start + velocity * step * dt - forward_kinematics(q, model)[:3, 3]
        twist = np.concatenate([velocity + 10.0 * error, np.zeros(3)])
        qdot = resolved_rate(q, twist, model, mode="approach")
        assert np.all(np.abs(qdot) < 1.0)
        q = q + qdot * dt
    final = forward_kinematics(q, model)
    np.testing.assert_allclose(final[:3, 3], start + velocity * 1.0, atol=1e-4)
    np.testing.assert_allclose(final[:3, 2], [0.0, 0.0, -1.0], atol=1e-6)


def test_adaptive_damping_profile():
    assert adaptive_damping(0.2, 0.05, 0.1) == 0.0
    assert adaptive_damping(0.0, 0.05, 0.1) == 0.05
    assert adaptive_damping(0.05, 0.05, 0.1) == pytest.approx(0.05 * math.sqrt(0.75))


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"twist": [0.0] * 5}, r"shape \(6,\)"),
        ({"twist": [0.0, 0.0, float("nan"), 0.0, 0.0, 0.0]}, "finite"),
        ({"mode": "roll"}, "mode must be one of full, approach"),
        ({"max_damping": -1.0}, "max_damping"),
        ({"threshold": 0.0}, "threshold"),
        ({"feed": float("nan")}, "drill feed must be finite"),
    ],
)
def test_bad_input_is_refused(model, kwargs, fragment):
    arguments = {"q": [1.0, 1.0, 1.0, 0.3, 0.2], "twist": [0.0] * 6, "model": model}
    arguments.update(kwargs)
    with pytest.raises(KinematicsError, match=fragment):
        resolved_rate(**arguments)
