"""A DrillHole goal planned with a calibration (issue 21: the controller uses the calibration
file): on a machine with geometric errors the plan's feed ends at the goal's hole on that machine
(its actual forward kinematics, quirobot_kinematics.geometric), where the nominal plan misses by
the errors; the executor measures the tip with the calibrated kinematics."""

from __future__ import annotations

import numpy as np
import pytest
from shipped_control import FEED_MASS

from quirobot_control.planning.drill_hole import DrillGoal, plan_drill_hole, tip_progress
from quirobot_control.planning.tasks import load_task
from quirobot_control.procedures.drill_hole_executor import ExecutorConfig
from quirobot_description.geometric_errors import Calibration
from quirobot_description.machine_identity import simulated_machine
from quirobot_description.parameters import DrillParameters
from quirobot_kinematics import KinematicModel
from quirobot_kinematics.geometric import actual_forward_kinematics

#: The drill feed's column in the drill's axis vectors.
FEED = DrillParameters.feed_index


@pytest.fixture(scope="module")
def machine(parameters):
    """A machine drawn from the parameter file's geometric tolerances (seed 3)."""
    return parameters.geometric.sample(np.random.default_rng(3))


def feed_end_hole(parameters, errors, calibration) -> tuple[float, float, float]:
    """(entry miss m, depth error m, lateral deviation m) of the plan's deepest pose on the
    machine with `errors`, planned with `calibration` (None: nominal)."""
    task = load_task("incision")
    goal = DrillGoal(task.entry, task.direction, task.depth, task.feed_rate, 60.0)
    plan = plan_drill_hole(goal, task.park, parameters, 0.002, calibration=calibration, feed_mass=FEED_MASS)
    model = KinematicModel.from_parameters(parameters)
    q = plan.trajectory.positions
    deepest = int(np.argmax(q[:, FEED]))
    tip = actual_forward_kinematics(q[deepest, :FEED], model, errors, float(q[deepest, FEED]))[:3, 3]
    depth, lateral = tip_progress(tip, task.entry, task.direction)
    return (
        float(np.linalg.norm(tip - (task.entry + task.depth * task.direction))),
        depth - task.depth,
        lateral,
    )


def test_a_plan_with_the_machines_calibration_drills_its_hole_where_the_nominal_one_misses(
    parameters, machine
):
    nominal = feed_end_hole(parameters, machine, None)
    calibrated = feed_end_hole(parameters, machine, machine)
    assert nominal[0] > 1e-4  # the drawn machine is off by tenths of a millimetre
    assert calibrated[0] < 1e-6, calibrated
    assert abs(calibrated[1]) < 1e-6 and calibrated[2] < 1e-6


def test_the_executor_plans_and_measures_with_its_calibration(parameters, machine):
    calibration = Calibration(machine, simulated_machine(3))
    config = ExecutorConfig.shipped(parameters, calibration=calibration)
    nominal = ExecutorConfig.shipped(parameters)
    assert config.calibration is calibration and nominal.calibration is None
    q = load_task("incision").park
    model = KinematicModel.from_parameters(parameters)
    expected = actual_forward_kinematics(q[:FEED], model, machine, float(q[FEED]))[:3, 3]
    np.testing.assert_allclose(config.tip(q), expected, atol=1e-12)
    assert np.linalg.norm(nominal.tip(q) - expected) > 1e-4
