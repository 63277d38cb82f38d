"""Dynamics properties that need no other engine: inversion, energy, gravity, the report's model."""

from __future__ import annotations

import math

import numpy as np
import pytest

from quirobot_control.models.dynamics import (
    Dynamics,
    DynamicsInputError,
    forward_dynamics,
    gravity_torques,
    inverse_dynamics,
    mass_matrix,
)
from quirobot_control.models.rigid_body import ModelError, build_model, reflected_rotor_inertia
from quirobot_description.parameters import load_parameters


@pytest.fixture(scope="module")
def params():
    return load_parameters()


def random_states(params, n, seed):
    rng = np.random.default_rng(seed)
    q = rng.uniform(params.lower_limits, params.upper_limits, (n, 5))
    qd = rng.uniform(-1.0, 1.0, (n, 5)) * params.velocity_limits
    qdd = rng.uniform(-1.0, 1.0, (n, 5)) * params.acceleration_limits
    return q, qd, qdd


@pytest.mark.parametrize("model", ["physical", "report"])
def test_forward_dynamics_inverts_inverse_dynamics(params, model):
    dynamics = Dynamics(params, model)
    q, qd, qdd = random_states(params, 300, 1)
    tau = dynamics.inverse_dynamics(q, qd, qdd, friction=True)
    np.testing.assert_allclose(
        dynamics.forward_dynamics(q, qd, tau, friction=True), qdd, rtol=1e-9, atol=1e-9
    )
    # And the other way round from random efforts.
    tau = np.random.default_rng(2).uniform(-1, 1, (300, 5)) * params.effort_limits
    qdd = dynamics.forward_dynamics(q, qd, tau, friction=True)
    np.testing.assert_allclose(
        dynamics.inverse_dynamics(q, qd, qdd, friction=True), tau, rtol=1e-9, atol=1e-8
    )


@pytest.mark.parametrize("model", ["physical", "report"])
def test_mass_matrix_symmetric_positive_definite_and_consistent_with_rnea(params, model):
    dynamics = Dynamics(params, model)
    q, _, _ = random_states(params, 100, 3)
    H = dynamics.mass_matrix(q)
    np.testing.assert_array_equal(H, np.swapaxes(H, 1, 2))
    assert np.all(np.linalg.eigvalsh(H)[:, 0] > 0.0)
    # Column j of H is the RNEA response to a unit qdd_j minus gravity (an independent path).
    zero = np.zeros_like(q)
    gravity = dynamics.gravity_torques(q)
    for j in range(5):
        unit = zero.copy()
        unit[:, j] = 1.0
        column = dynamics.inverse_dynamics(q, zero, unit, friction=False) - gravity
        np.testing.assert_allclose(H[:, :, j], column, rtol=1e-10, atol=1e-12)


def test_energy_is_conserved_without_friction_or_effort(params):
    """RK4 on forward_dynamics, dt = 2 ms, 1 s, 16 random starts: |drift| < 1e-9 of the kinetic energy.

    (Measured: about 1e-11; RK4's own error at this step bounds it. A wrong Coriolis term or an
    H inconsistent with the RNEA drifts by orders of magnitude more.)"""
    dynamics = Dynamics(params)
    q, qd, _ = random_states(params, 16, 4)
    qd = 2.0 * qd  # lively motion: wrist up to 2 rad/s, carriages up to 2 m/s
    zero = np.zeros_like(q)

    def derivative(state_q, state_qd):
        return state_qd, dynamics.forward_dynamics(state_q, state_qd, zero, friction=False)

    def energy(state_q, state_qd):
        return dynamics.kinetic_energy(state_q, state_qd) + dynamics.potential_energy(state_q)

    start = energy(q, qd)
    scale = dynamics.kinetic_energy(q, qd)
    dt = 2e-3
    for _ in range(500):
        k1q, k1v = derivative(q, qd)
        k2q, k2v = derivative(q + 0.5 * dt * k1q, qd + 0.5 * dt * k1v)
        k3q, k3v = derivative(q + 0.5 * dt * k2q, qd + 0.5 * dt * k2v)
        k4q, k4v = derivative(q + dt * k3q, qd + dt * k3v)
        q = q + dt / 6.0 * (k1q + 2 * k2q + 2 * k3q + k4q)
        qd = qd + dt / 6.0 * (k1v + 2 * k2v + 2 * k3v + k4v)
    drift = np.abs(energy(q, qd) - start) / scale
    assert np.max(drift) < 1e-9, f"relative energy drift {np.max(drift):.3g}"
    # The motion did exchange energy (gravity did work): the check is not vacuous.
    assert np.max(np.abs(dynamics.kinetic_energy(q, qd) - scale) / scale) > 1e-2


def test_gravity_torques_are_the_gradient_of_potential_energy(params):
    dynamics = Dynamics(params)
    q, _, _ = random_states(params, 50, 5)
    h = 1e-6
    gradient = np.empty_like(q)
    for j in range(5):
        step = np.zeros(5)
        step[j] = h
        gradient[:, j] = (dynamics.potential_energy(q + step) - dynamics.potential_energy(q - step)) / (2 * h)
    np.testing.assert_allclose(dynamics.gravity_torques(q), gradient, rtol=1e-6, atol=1e-6)


def test_gravity_torques_analytic(params):
    """d3 carries links 3-5 and the bit; theta5 holds the pitch link's weight at lever x_com*cos(theta5)."""
    model = build_model(params, "physical")
    dynamics = Dynamics(model)
    g = params.gravity
    pitch = model.bodies[4]
    carried = sum(b.mass for b in model.bodies[2:])
    for theta5 in (-1.0, 0.0, 0.7, 2.5):
        q = np.array([0.3, 1.1, 0.4, 0.9, theta5])
        tau = dynamics.gravity_torques(q)
        assert tau[0] == pytest.approx(0.0, abs=1e-12) and tau[1] == pytest.approx(0.0, abs=1e-12)
        assert tau[2] == pytest.approx(-carried * g)  # gravity pulls along +d3 (down)
        assert tau[3] == pytest.approx(0.0, abs=1e-12)  # vertical axis
        # Rotation about +y by theta5 lowers a point at +x, so holding it takes -m g (x cos + z sin).
        x, _, z = pitch.com
        assert tau[4] == pytest.approx(-pitch.mass * g * (x * math.cos(theta5) + z * math.sin(theta5)))


def test_report_model_numbers(params):
    """The report's effective joint-5 inertia 0.16893 kg*m^2 and its joint-3 nominal 1.2385 N*m."""
    report = Dynamics(params, "report")
    assert report.mass_matrix(np.zeros(5))[4, 4] == pytest.approx(0.16893, abs=5e-6)
    # The correct solid-cylinder value for the same lumped 7 kg link is about 0.0961.
    m, r, length = 7.0, 0.04, 0.2
    assert m * (3 * r**2 + length**2) / 12 + m * (length / 2) ** 2 == pytest.approx(0.0961, abs=1e-4)
    cruise_up = report.inverse_dynamics(np.zeros(5), np.array([0, 0, -1.0, 0, 0]), np.zeros(5))
    assert abs(cruise_up[2]) / 95.0 == pytest.approx((12 * 9.8 + 0.06 * 1) / 95, rel=1e-12)
    assert abs(cruise_up[2]) / 95.0 == pytest.approx(1.2385, abs=5e-5)


def test_friction_terms(params):
    dynamics = Dynamics(params)
    q, qd, qdd = random_states(params, 20, 6)
    difference = dynamics.inverse_dynamics(q, qd, qdd) - dynamics.inverse_dynamics(q, qd, qdd, friction=False)
    coulomb = np.array([j.friction for j in params.joints])
    np.testing.assert_allclose(difference, params.damping * qd + coulomb * np.sign(qd), atol=1e-12)


def test_armature_adds_to_the_diagonal(params):
    model = build_model(params)
    armature = reflected_rotor_inertia(params)
    q, _, _ = random_states(params, 5, 7)
    np.testing.assert_allclose(
        Dynamics(model.with_armature(armature)).mass_matrix(q) - Dynamics(model).mass_matrix(q),
        np.broadcast_to(np.diag(armature), (5, 5, 5)),
        atol=1e-12,
    )
    with pytest.raises(ModelError, match="armature"):
        model.with_armature(np.array([1.0, 2.0]))


def test_module_functions_match_the_class(params):
    q, qd, qdd = random_states(params, 1, 8)
    q, qd, qdd = q[0], qd[0], qdd[0]
    dynamics = Dynamics(params, "report")
    np.testing.assert_array_equal(
        inverse_dynamics(q, qd, qdd, params=params, model="report"), dynamics.inverse_dynamics(q, qd, qdd)
    )
    np.testing.assert_array_equal(mass_matrix(q, params=params, model="report"), dynamics.mass_matrix(q))
    np.testing.assert_array_equal(
        gravity_torques(q, params=params, model="report"), dynamics.gravity_torques(q)
    )
    tau = dynamics.inverse_dynamics(q, qd, qdd)
    np.testing.assert_allclose(forward_dynamics(q, qd, tau, params=params, model="report"), qdd, rtol=1e-9)


def test_bad_inputs_are_refused(params):
    dynamics = Dynamics(params)
    with pytest.raises(DynamicsInputError, match="shape"):
        dynamics.inverse_dynamics(np.zeros(4), np.zeros(4), np.zeros(4))
    with pytest.raises(DynamicsInputError, match="qd has shape"):
        dynamics.inverse_dynamics(np.zeros(5), np.zeros((2, 5)), np.zeros(5))
    with pytest.raises(DynamicsInputError, match="NaN"):
        dynamics.mass_matrix(np.array([0.0, 0.0, np.nan, 0.0, 0.0]))
    with pytest.raises(ModelError, match="unknown dynamics model"):
        Dynamics(params, "lumped")
