"""The encoders' latch compiled (physics_kernel.c's latch_drives) against its Python twin
(RealisticPlant.latch_in_python, each RealisticDrive.latch), bit for bit.

Two compensated realistic plants, built alike with the same seed, go through the same periods:
the drives enabled, a current command queued on each every period (one period of actuation
delay), load and motor positions drawn anew, one drive faulted while its command waits (the
latch must refuse it), then a load position no encoder can count (round() raises on both). One
plant senses with the kernel, the other with the Python; after every sense each drive's latched
position, queue, load position, current reference, state, fault and dual-loop difference must be
the same to the last bit, and so must the exception of the bad count.
"""

from __future__ import annotations

import numpy as np
import pytest
from compiled_kernel import bits, require_compiled
from realistic_rest import realistic_plant_at_rest

from quirobot_control.drives.interface import DriveState
from quirobot_control.simulation import realistic_plant
from quirobot_control.simulation.realistic_plant import WRIST, RealisticPlant

PERIODS = 60
FAULTED, FAULT_AT = 1, 30  # gantry_y goes to FAULT with a command queued, at this period


def _plant(parameters) -> RealisticPlant:
    plant = realistic_plant_at_rest(parameters, seed=3)
    plant.sense()
    for drive in plant.drives:
        drive.enable()
    return plant


def _state(plant: RealisticPlant) -> list:
    """Everything a latch reads or writes, floats as their bytes."""
    return [
        (
            bits([drive._position, drive.load_position, drive.inner.current_reference]),
            bits(drive._queue),
            drive.inner.state,
            drive.inner.feedback().fault,
            None if drive.dual_loop.difference is None else bits([drive.dual_loop.difference]),
        )
        for drive in plant.drives
    ]


def _sense(plant: RealisticPlant, kernel, monkeypatch) -> Exception | None:
    with monkeypatch.context() as patched:
        patched.setattr(realistic_plant, "latch_drives", kernel)
        try:
            plant.sense()
        except Exception as error:  # the bad count's, compared below
            return error
    return None


def test_the_compiled_latch_is_the_python_latch_bit_for_bit(parameters, monkeypatch):
    require_compiled(realistic_plant.COMPILED, "_physics_kernel")
    compiled = realistic_plant.latch_drives
    calls = []

    def counted(plant, normals):  # the compiled latch, its runs counted
        calls.append(len(normals))
        return compiled(plant, normals)

    ours, theirs = _plant(parameters), _plant(parameters)
    assert [drive.draws for drive in ours.drives] == [2 if j in WRIST else 1 for j in range(6)]
    assert all(drive.delay_periods == 1 and drive.noise > 0.0 for drive in ours.drives)
    commands = np.random.default_rng(5).normal(scale=2.0, size=(PERIODS, 6))
    poses = np.random.default_rng(6).normal(scale=0.05, size=(PERIODS, 2, 6))
    refused = None
    for period in range(PERIODS):
        for plant in (ours, theirs):
            for drive, command in zip(plant.drives, commands[period].tolist(), strict=True):
                if drive.inner.state is not DriveState.FAULT:
                    drive.command_current(command)  # queued: the next latch delivers it
            plant.data.qpos[:] = np.array([0.8, 0.9, 1.0, 1.5, 0.5, 0.01]) + poses[period, 0]
            plant.motor_angle[:] = plant.data.qpos + 1e-4 * poses[period, 1]
            if period == FAULT_AT:
                plant.drives[FAULTED].inner.inject_fault("injected with a command queued")
                refused = plant.drives[FAULTED]._queue[:]
        assert _sense(ours, counted, monkeypatch) is None
        assert _sense(theirs, None, monkeypatch) is None
        assert _state(ours) == _state(theirs), f"period {period}"
    # The run went through what the latch does: commands delivered, one refused by the fault, the
    # wrists blended (their difference set), every drive's noise drawn.
    assert len(calls) == PERIODS and set(calls) == {8}
    assert refused and not ours.drives[FAULTED]._queue  # popped, and refused:
    assert ours.drives[FAULTED].inner.current_reference == 0.0
    assert ours.drives[0].inner.current_reference == commands[-1, 0]  # queued before this sense
    assert all(ours.drives[j].dual_loop.difference is not None for j in WRIST)
    assert ours.drives[0]._position != ours.drives[0].inner.position  # the noise
    # A load position no encoder counts: round() raises on both, after the same writes.
    for plant in (ours, theirs):
        plant.data.qpos[WRIST[1]] = np.inf
    error, reference = _sense(ours, counted, monkeypatch), _sense(theirs, None, monkeypatch)
    assert type(error) is type(reference) is OverflowError and str(error) == str(reference)
    assert _state(ours) == _state(theirs)


def test_the_latch_kernel_takes_a_list_of_normals(parameters):
    require_compiled(realistic_plant.COMPILED, "_physics_kernel")
    with pytest.raises(TypeError, match="normals must be a list"):
        realistic_plant.latch_drives(_plant(parameters), np.zeros(8))
