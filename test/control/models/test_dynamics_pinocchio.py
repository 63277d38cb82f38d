"""RNEA and CRBA against pinocchio on the exported URDF (drill tool, drill_feed locked at 0)."""

from __future__ import annotations

import numpy as np
import pytest

from quirobot_control.models.dynamics import Dynamics
from quirobot_description.parameters import JOINT_NAMES

pin = pytest.importorskip("pinocchio")

pytestmark = pytest.mark.engines

N_STATES = 250


@pytest.fixture(scope="module")
def reference(exported_urdf, parameters):
    """pinocchio model of the URDF with drill_feed locked at 0, and the q-index of each joint."""
    full = pin.buildModelFromUrdf(str(exported_urdf))
    assert full.existJointName("drill_feed"), "the drill URDF must have the drill_feed joint"
    locked = [full.getJointId("drill_feed")]
    model = pin.buildReducedModel(full, locked, pin.neutral(full))
    # URDF carries no gravity; pinocchio defaults to 9.81. Use the parameter file's value.
    model.gravity.linear = np.array([0.0, 0.0, -parameters.gravity])
    assert model.nq == model.nv == len(JOINT_NAMES)
    index = [model.joints[model.getJointId(name)].idx_q for name in JOINT_NAMES]
    return model, model.createData(), np.array(index)


@pytest.fixture(scope="module")
def states(parameters):
    rng = np.random.default_rng(20261129)
    lower, upper = parameters.lower_limits, parameters.upper_limits
    q = rng.uniform(lower, upper, (N_STATES, 5))
    qd = rng.uniform(-2.0, 2.0, (N_STATES, 5)) * parameters.velocity_limits
    qdd = rng.uniform(-2.0, 2.0, (N_STATES, 5)) * parameters.acceleration_limits
    return q, qd, qdd


def to_pin(index, x):
    out = np.empty(len(index))
    out[index] = x
    return out


def test_total_mass_matches_the_urdf(reference, parameters):
    model, data, _ = reference
    assert pin.computeTotalMass(model) == pytest.approx(Dynamics(parameters).model.total_mass, rel=1e-12)


def test_inverse_dynamics_equals_pinocchio_rnea(reference, parameters, states):
    model, data, index = reference
    dynamics = Dynamics(parameters)
    q, qd, qdd = states
    ours = dynamics.inverse_dynamics(q, qd, qdd, friction=False)  # one batched call
    worst = 0.0
    for k in range(N_STATES):
        theirs = pin.rnea(model, data, to_pin(index, q[k]), to_pin(index, qd[k]), to_pin(index, qdd[k]))[
            index
        ]
        single = dynamics.inverse_dynamics(q[k], qd[k], qdd[k], friction=False)
        np.testing.assert_allclose(single, ours[k], rtol=1e-12, atol=1e-12)
        worst = max(worst, float(np.max(np.abs(ours[k] - theirs)) / np.max(np.abs(theirs))))
    assert worst < 1e-9, f"largest relative difference to pinocchio RNEA: {worst:.3g}"


def test_mass_matrix_equals_pinocchio_crba_and_is_spd(reference, parameters, states):
    model, data, index = reference
    dynamics = Dynamics(parameters)
    q = states[0]
    H = dynamics.mass_matrix(q)
    for k in range(N_STATES):
        theirs = pin.crba(model, data, to_pin(index, q[k]))
        theirs = np.triu(theirs) + np.triu(theirs, 1).T  # pinocchio fills the upper triangle
        theirs = theirs[np.ix_(index, index)]
        np.testing.assert_allclose(H[k], theirs, rtol=1e-9, atol=1e-9 * np.max(np.abs(theirs)))
        np.testing.assert_array_equal(H[k], H[k].T)
        assert np.linalg.eigvalsh(H[k])[0] > 0.0


def test_forward_dynamics_equals_pinocchio_aba(reference, parameters, states):
    model, data, index = reference
    dynamics = Dynamics(parameters)
    q, qd, _ = states
    rng = np.random.default_rng(5)
    tau = rng.uniform(-1.0, 1.0, (N_STATES, 5)) * parameters.effort_limits
    ours = dynamics.forward_dynamics(q, qd, tau, friction=False)
    for k in range(0, N_STATES, 5):
        theirs = pin.aba(model, data, to_pin(index, q[k]), to_pin(index, qd[k]), to_pin(index, tau[k]))[index]
        np.testing.assert_allclose(ours[k], theirs, rtol=1e-8, atol=1e-8 * np.max(np.abs(theirs)))
