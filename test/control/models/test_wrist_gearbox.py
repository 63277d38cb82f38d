"""A wrist joint's motor side through its gearbox over one physics step (models.wrist_gearbox): the
compiled twin against the Python law, bit for bit, over the states a wrist goes through and its
edges (in the play and in contact both ways, stuck by dry friction, stopped by it, braked).

That the law is the plant's: the realistic plant's runs (test_realistic_plant.py,
test_simulate_json_unchanged.py) give the numbers they gave with the law inline.
"""

from __future__ import annotations

import numpy as np
import pytest
from compiled_kernel import bits, require_compiled

from quirobot_control.models import wrist_gearbox
from quirobot_control.models.wrist_gearbox import gear_torque, wrist_motor_substeps_in_python
from quirobot_control.simulation.realistic_plant import MOTOR_SUBSTEPS, WRIST


def _compiled():
    require_compiled(wrist_gearbox.COMPILED, "_gearbox_kernel")
    return wrist_gearbox.wrist_motor_substeps


@pytest.mark.parametrize("joint", WRIST)
def test_the_compiled_wrist_motor_is_the_python_law_bit_for_bit(parameters, joint):
    kernel = _compiled()
    plant = parameters.plant
    rng = np.random.default_rng(joint)
    h = 2.5e-4
    J = 1e-3 * rng.uniform(0.5, 2.0)
    damping = 2.0 * plant.wrist_gear_damping_ratio * np.sqrt(plant.wrist_gear_stiffness * J)
    half_play = 0.5 * plant.wrist_gear_backlash
    constants = (
        J,
        h / MOTOR_SUBSTEPS,
        plant.wrist_viscous_friction,
        plant.wrist_gear_stiffness,
        half_play,
        damping,
    )
    seen = {"play": 0, "contact": 0, "stuck": 0, "stopped": 0}
    for _ in range(5000):
        load = rng.uniform(-1.0, 1.0)
        twist = rng.choice([rng.uniform(-0.8, 0.8) * half_play, rng.uniform(-5.0, 5.0) * half_play])
        speed = float(rng.choice([0.0, rng.uniform(-2.0, 2.0), rng.uniform(-1e-3, 1e-3)]))
        coulomb = float(rng.choice([plant.wrist_coulomb_friction, plant.wrist_coulomb_friction + 5.0]))
        state = (
            float(rng.uniform(-2.0, 2.0)),  # effort N*m
            coulomb,
            float(load),
            float(rng.uniform(-1.0, 1.0)),  # load speed
            float(load + twist),  # motor angle
            speed,
        )
        ours = kernel(constants, MOTOR_SUBSTEPS, *state)
        law = wrist_motor_substeps_in_python(constants, MOTOR_SUBSTEPS, *state)
        assert bits(ours) == bits(law), (state, ours, law)
        seen["play" if abs(twist) <= half_play else "contact"] += 1
        seen["stuck"] += speed == 0.0 and law[1] == 0.0
        seen["stopped"] += speed != 0.0 and law[1] == 0.0
    assert all(count > 50 for count in seen.values()), seen  # every edge of the law was reached


def test_gear_torque_is_zero_in_the_play_and_stiffness_beyond_it():
    assert gear_torque(100.0, 0.01, 2.0, 0.009, 5.0) == 0.0
    assert gear_torque(100.0, 0.01, 2.0, 0.011, 5.0) == pytest.approx(100.0 * 0.001 + 2.0 * 5.0, rel=1e-12)
    assert gear_torque(100.0, 0.01, 2.0, -0.011, 5.0) == pytest.approx(-100.0 * 0.001 + 2.0 * 5.0, rel=1e-12)


def test_the_compiled_wrist_motor_names_bad_arguments():
    kernel = _compiled()
    with pytest.raises(TypeError, match="constants must be a tuple of 6 floats"):
        kernel((1.0, 2.0), 4, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="substeps must be >= 1, got 0"):
        kernel((1.0,) * 6, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
