"""The plants' compiled control periods (simulation._physics_kernel, physics_kernel.c) against
their Python laws (RealisticPlant and MujocoPlant.step_period_in_python), bit for bit.

One closed-loop hole of the accuracy budget (a short incision along an axis drawn tilted from the
shipped one; on a drawn realistic plant: the bone's thrust, skiving at the entry, the
regenerative thrust, the wrist's gearbox, the screws' and the ram's compliance, the brakes at
rest; on the ideal plant: the bone's thrust, the brakes) is run twice, once with the compiled
period and once with the Python; every logged number must be the same bit for bit. (Not a
tolerance: the encoders quantize, so a difference in the last digit could flip a count and grow;
equal runs show the law is the same.)
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from compiled_kernel import require_compiled
from realistic_rest import realistic_plant_at_rest

from quirobot_control.analysis.accuracy import draw_incision, short_incision
from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.planning.tasks import load_task
from quirobot_control.simulation import plant as plant_module
from quirobot_control.simulation import realistic_plant
from quirobot_control.simulation.executor_run import run_trajectory

LOGGED = ("position", "velocity", "measured", "measured_velocity", "current", "effort", "tip", "planned_tip")


def _hole(parameters, plant: str = "realistic"):
    """The incision and the log of one short incision's run_trajectory on `plant`."""
    rng = np.random.default_rng(7)
    incision = draw_incision(load_task("incision"), rng)
    control = control_configuration(parameters)
    plan = short_incision(incision, parameters, control)
    log = run_trajectory(
        plan.trajectory,
        parameters,
        control,
        plant=plant,
        plant_parameters=parameters.plant.sample(rng),
        seed=11,
        incision=plan.task,
        hole=plan.hole_context("physics-kernel"),
    )
    return incision, log


def _assert_same_log(log, reference) -> None:
    """Every logged number of `log` is `reference`'s, bit for bit."""
    assert len(log.time) == len(reference.time)
    for name in LOGGED:
        ours, theirs = getattr(log, name), getattr(reference, name)
        assert np.array_equal(ours, theirs), (
            f"{name} differs from the Python period by up to {np.max(np.abs(ours - theirs)):.3g}"
        )


def test_the_compiled_period_is_the_python_law_bit_for_bit(parameters, monkeypatch):
    require_compiled(realistic_plant.COMPILED, "_physics_kernel")
    seen = {"periods": 0, "thrust": 0.0, "skived": False}
    compiled = realistic_plant.physics_period

    def counted(plant, contact, substeps):  # the compiled period, its runs counted
        efforts = compiled(plant, contact, substeps)
        seen["periods"] += 1
        seen["thrust"] = max(seen["thrust"], contact.thrust.force if contact is not None else 0.0)
        seen["skived"] |= bool(np.any(plant.bit != 0.0))
        seen["plant"] = plant
        return efforts

    with monkeypatch.context() as patched:
        patched.setattr(realistic_plant, "physics_period", counted)
        incision, log = _hole(parameters)
    with monkeypatch.context() as patched:
        patched.setattr(realistic_plant, "physics_period", None)
        _, reference = _hole(parameters)
    # The run went through what the kernel does: every period compiled, the drill in the bone
    # past its point (skiving at the entry, then the hole holding it), the regenerative thrust's
    # history a revolution long.
    plant = seen["plant"]
    assert log.stop_reason is None and seen["periods"] >= len(log.time)  # the log starts a period in
    assert math.degrees(math.acos(-incision.direction[2])) > 1.0  # tilted: skiving pushes sideways
    assert seen["thrust"] > 10.0 and seen["skived"] and plant._engaged_once
    assert len(plant._depth_history) == max(int(round(plant._spindle_period / plant.model.opt.timestep)), 1)
    _assert_same_log(log, reference)


def test_the_compiled_ideal_period_is_the_python_law_bit_for_bit(parameters, monkeypatch):
    require_compiled(plant_module.COMPILED, "_physics_kernel")
    seen = {"periods": 0, "thrust": 0.0}
    compiled = plant_module.ideal_period

    def counted(plant, array, contact, substeps):  # the compiled period, its runs counted
        efforts = compiled(plant, array, contact, substeps)
        seen["periods"] += 1
        seen["thrust"] = max(seen["thrust"], contact.thrust.force if contact is not None else 0.0)
        return efforts

    with monkeypatch.context() as patched:
        patched.setattr(plant_module, "ideal_period", counted)
        _, log = _hole(parameters, "ideal")
    with monkeypatch.context() as patched:
        patched.setattr(plant_module, "ideal_period", None)
        _, reference = _hole(parameters, "ideal")
    assert log.stop_reason is None and seen["periods"] >= len(log.time) and seen["thrust"] > 10.0
    _assert_same_log(log, reference)


def test_the_python_period_runs_where_the_kernel_does_not_apply(parameters, monkeypatch):
    """The calibrated machine's tip (geometric errors) and a tip force other than a bone contact
    take the Python law: the kernel is not called."""

    def refuse(*_):
        pytest.fail("the compiled period ran where it does not apply")

    monkeypatch.setattr(realistic_plant, "physics_period", refuse)
    monkeypatch.setattr(plant_module, "ideal_period", refuse)
    plant = realistic_plant_at_rest(
        parameters, geometric=parameters.geometric.sample(np.random.default_rng(1))
    )
    plant.step_period(substeps=4)
    plant.geometric = None
    plant.step_period(substeps=4, tip_force=lambda h: np.array([0.0, 0.0, 1.0]))
    plant.rigid.step_period(plant.drive_array, 4, tip_force=lambda h: np.array([0.0, 0.0, 1.0]))
