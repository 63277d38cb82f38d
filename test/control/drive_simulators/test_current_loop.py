"""The drives' current loop over one physics step (drive_simulators.current_loop): the compiled
twin against the Python law, bit for bit, over the states a drive goes through and its edges
(saturation both ways, the current limit, partial and zero steps, a sample phase carried over).

That the Python law is the per-object code it replaced (motor.CurrentLoop.update and the exact
current between samples) is test/control/simulation/test_drive_array.py's, with either kernel.
"""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from compiled_kernel import compiled_kernel

from quirobot_control.drive_simulators.current_loop import current_loop_samples_in_python
from quirobot_control.drive_simulators.simulated_drive import drive_for_joint
from quirobot_description.parameters import JOINT_NAMES, DrillParameters


def _bits(values) -> tuple:
    return tuple(struct.pack("<d", value) if isinstance(value, float) else value for value in values)


AXES = (*JOINT_NAMES, DrillParameters.feed_joint)


@pytest.mark.parametrize("axis", AXES)
def test_the_compiled_loop_is_the_python_law_bit_for_bit(parameters, axis):
    kernel = compiled_kernel()
    constants = drive_for_joint(parameters, axis)._current_loop_constants
    limit, period = constants[3], constants[4]
    voltage_limit = constants[8]
    rng = np.random.default_rng(sum(map(ord, axis)))
    saturated_seen = {True: 0, False: 0}
    clamped = 0
    for _ in range(4000):
        # References beyond the limit (saturation, clamping), speeds up to a fast motor's, steps
        # of a physics step, a fraction of a sample, several samples or none; the phase anywhere.
        state = (
            float(rng.uniform(-0.5, 0.5) * voltage_limit),  # integral V
            bool(rng.integers(2)),  # saturated
            float(rng.uniform(-1.2, 1.2) * limit),  # current A
            float(rng.uniform(-1.0, 1.0) * voltage_limit),  # voltage V
            float(rng.choice([0.0, period, rng.uniform(0.0, period)])),  # s until the next sample
        )
        reference = float(rng.uniform(-1.5, 1.5) * limit)
        speed = float(rng.uniform(-400.0, 400.0))
        dt = float(rng.choice([0.0, 2.5e-4, 1e-3, rng.uniform(0.0, 3e-4), period * 0.37]))
        ours = kernel(constants, reference, speed, dt, *state)
        law = current_loop_samples_in_python(constants, reference, speed, dt, *state)
        assert _bits(ours) == _bits(law), (axis, reference, speed, dt, state, ours, law)
        assert type(ours[1]) is bool
        saturated_seen[ours[1]] += 1
        clamped += abs(ours[2]) == limit
    # The cases reached what they are there for: both sides of saturation and the current limit.
    assert min(saturated_seen.values()) > 100 and clamped > 10, (saturated_seen, clamped)


def test_a_zero_step_changes_nothing_and_a_nan_propagates_as_in_python(parameters):
    kernel = compiled_kernel()
    constants = drive_for_joint(parameters, "gantry_x")._current_loop_constants
    state = (1.5, False, 2.0, 3.0, 2e-5)
    assert kernel(constants, 4.0, 10.0, 0.0, *state) == state
    ours = kernel(constants, math.nan, 10.0, 2.5e-4, *state)
    law = current_loop_samples_in_python(constants, math.nan, 10.0, 2.5e-4, *state)
    assert [math.isnan(value) for value in ours] == [math.isnan(value) for value in law]


def test_the_compiled_loop_refuses_bad_arguments_naming_them(parameters):
    kernel = compiled_kernel()
    constants = drive_for_joint(parameters, "gantry_x")._current_loop_constants
    with pytest.raises(TypeError, match="takes 9 arguments, got 8"):
        kernel(constants, 1.0, 0.0, 2.5e-4, 0.0, False, 0.0, 0.0)
    with pytest.raises(TypeError, match="constants must be a tuple of 11 floats"):
        kernel(constants[:10], 1.0, 0.0, 2.5e-4, 0.0, False, 0.0, 0.0, 0.0)
    with pytest.raises(TypeError):
        kernel(constants, "1 A", 0.0, 2.5e-4, 0.0, False, 0.0, 0.0, 0.0)
