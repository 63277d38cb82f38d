"""The bone's thrust fed forward cycle by cycle (ThrustFeedForward, a drive bridge's compensation
on the realistic plant) against the same feed-forward computed along the whole plan
(thrust_feedforward, `quirobot simulate`'s), on the shipped incision's plan."""

from __future__ import annotations

import numpy as np

from quirobot_control.hardware.thrust_feedforward import ThrustFeedForward
from quirobot_control.planning.tasks import load_task, plan_incision
from quirobot_control.simulation.thrust_feedforward import thrust_feedforward
from quirobot_description.parameters import DrillParameters
from quirobot_kinematics import KinematicModel, forward_kinematics

#: The drill feed's column in the drill's axis vectors.
FEED = DrillParameters.feed_index


def test_the_online_feed_forward_follows_the_plans_along_the_incision(parameters):
    task = load_task("incision")
    dt = 1.0 / parameters.drive.control_rate
    plan = plan_incision(task, parameters, dt)
    expected = thrust_feedforward(parameters, plan, task.entry, task.direction, task.bone)
    online = ThrustFeedForward(parameters, task.entry, task.direction, task.bone, dt)
    got = np.array([online.update(q) for q in plan.positions])
    peak = np.abs(expected).max(axis=0)
    assert peak[FEED] > 20.0  # the feed meets the bone's thrust (tens of N)
    # The rate of depth by backward difference (the plan's is central): half a period later.
    assert np.all(np.abs(got - expected).max(axis=0) <= 5e-3 * peak + 1e-9)
    before_entry = plan.phase("feed").start_time - 0.5
    assert np.all(got[: int(before_entry / dt)] == 0.0)  # out of the bone: nothing fed forward


def test_the_calibrated_chain_gives_each_shifted_pose_the_numbers_of_its_own_call(parameters):
    """ThrustFeedForward.update takes the five shifted poses of a calibrated chain in one FK call:
    each row's pose must be the one its own call gives, to the bit (the accuracy samples' runs
    do not change with it)."""
    rng = np.random.default_rng(3)
    tolerances = parameters.geometric
    for _ in range(20):
        model = KinematicModel.from_parameters(parameters).calibrated(tolerances.sample(rng))
        rows = rng.uniform(model.lower, model.upper, size=(5, 5))
        together = forward_kinematics(rows, model)
        alone = np.array([forward_kinematics(row, model) for row in rows])
        assert together.tobytes() == alone.tobytes()
