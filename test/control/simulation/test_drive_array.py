"""The drives stepped together (drive_simulators.drive_array) against the per-object step they
replaced (test/support/reference_drives.py, the code of commit d30a129), on both plants.

A 3000-period closed-loop run (3 s of the shipped incision: the arm's move towards the bone with
the host PID and its feed-forward, then a power fault of gantry_z at 2.499 s: category 0 on it, its
brake falling in, the host's quick stop ramping the others to standstill under their brakes) is
run twice, the second time with the reference code in place; every logged number must be the
same bit for bit: joint positions and velocities, the encoders' readings, currents, efforts and
the tip. Once with each kernel: the compiled ones (C: the current loop and the step of all
drives, drive_simulators.current_loop and drive_array; both plants' periods and the realistic
plant's encoders' latch, simulation.plant and realistic_plant) and their Python laws. (Bit for
bit, not a tolerance: the encoders quantize, so any difference in the last digit could flip a
count and grow; equal runs show the law is the same.)
"""

from __future__ import annotations

import numpy as np
import pytest
from compiled_kernel import require_compiled_kernels
from reference_drives import use_reference_drives

from quirobot_control.drive_simulators import drive_array, simulated_drive
from quirobot_control.drive_simulators.current_loop import current_loop_samples_in_python
from quirobot_control.drive_simulators.drive_array import DriveArray, advance_drives_in_python
from quirobot_control.drive_simulators.simulated_drive import drive_for_joint
from quirobot_control.simulation import plant as plant_module
from quirobot_control.simulation import realistic_plant
from quirobot_control.simulation.faults import Injection
from quirobot_control.simulation.incision import run_task
from quirobot_control.simulation.plant import MujocoPlant

PERIODS = 3000
FAULT = "power-fault:gantry_z@2.499"  # its 0.5 s observation window ends the run: 3000 periods
LOGGED = ("position", "velocity", "measured", "measured_velocity", "current", "effort", "tip")


def _run(parameters, plant: str):
    return run_task("incision", parameters, plant=plant, injection=Injection.parse(FAULT)).log


@pytest.mark.parametrize("kernel", ["compiled", "python"])
@pytest.mark.parametrize("plant", ["ideal", "realistic"])
def test_the_array_step_is_the_per_object_step_bit_for_bit(parameters, plant, kernel, monkeypatch):
    with monkeypatch.context() as patched:
        if kernel == "compiled":
            require_compiled_kernels()  # skips only where they could not have been built
        else:
            patched.setattr(simulated_drive, "current_loop_samples", current_loop_samples_in_python)
            patched.setattr(drive_array, "advance_drives", advance_drives_in_python)
            patched.setattr(realistic_plant, "physics_period", None)  # the plants' periods' Python
            patched.setattr(plant_module, "ideal_period", None)
            patched.setattr(realistic_plant, "latch_drives", None)  # and the encoders' latch's
        log = _run(parameters, plant)
    with monkeypatch.context() as patched:
        use_reference_drives(patched)
        reference = _run(parameters, plant)
    assert len(log.time) == len(reference.time) == PERIODS
    # The run did what it is there for: the fault stopped the drives, their brakes came on.
    assert log.stop_reason is not None and "gantry_z" in log.stop_reason
    for name in LOGGED:
        ours, theirs = getattr(log, name), getattr(reference, name)
        assert np.array_equal(ours, theirs), (
            f"{plant} plant, {kernel} kernels: {name} differs from the per-object step by up to "
            f"{np.max(np.abs(ours - theirs)):.3g} (first at period "
            f"{int(np.argmax(np.any(ours != theirs, axis=-1) if ours.ndim > 1 else ours != theirs))})"
        )


def test_a_drive_array_rejects_a_bad_time_step_naming_its_drives(parameters):
    drives = DriveArray([drive_for_joint(parameters, name) for name in MujocoPlant.axes[:2]])
    with pytest.raises(ValueError, match=r"drive gantry_x, gantry_y: time step must be >= 0 s, got -0.001"):
        drives.advance(-1e-3, np.zeros(2), np.zeros(2), np.zeros(2))
    with pytest.raises(ValueError, match="drive gantry_y: joint velocity must be a finite number, got nan"):
        drives.advance(1e-3, np.zeros(2), np.array([0.0, np.nan]), np.zeros(2))
