"""The bone's thrust fed forward cycle by cycle (ThrustFeedForward, a drive bridge's compensation
on the realistic plant) against the same feed-forward computed along the whole plan
(thrust_feedforward, `quirobot simulate`'s), on the shipped incision's plan."""

from __future__ import annotations

import numpy as np

from quirobot_control.hardware.thrust_feedforward import JACOBIAN_STEP, ThrustFeedForward, _balance
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


def test_the_nominal_chain_in_plain_floats_gives_the_matrices_numbers(parameters):
    """On the nominal chain ThrustFeedForward.update takes its six poses in plain floats
    (tool_axis_single): its efforts must be, to the bit, those from forward_kinematics' matrices
    (the feed's from the pose's axis column, as it always was), along the shipped incision's plan
    drilled along its direction and along directions tilted from it (every component of the
    force nonzero: a sum taken in another order shows)."""
    task = load_task("incision")
    dt = 1.0 / parameters.drive.control_rate
    plan = plan_incision(task, parameters, dt)
    rng = np.random.default_rng(5)
    tilted = [task.direction + rng.normal(size=3) * 0.5 for _ in range(3)]
    fed = 0
    for direction in [task.direction, *(d / np.linalg.norm(d) for d in tilted)]:
        online = ThrustFeedForward(parameters, task.entry, direction, task.bone, dt)
        reference = ThrustFeedForward(parameters, task.entry, direction, task.bone, dt)
        model, arm = reference.kinematics, 5
        for q in plan.positions[::3]:
            pose = forward_kinematics(q[:arm], model)
            tip = pose[:3, 3] + pose[:3, 2] * q[FEED]
            depth = float((tip - reference.entry) @ reference.direction)
            rate = 0.0 if reference._depth is None else (depth - reference._depth) / dt
            reference._depth = depth
            thrust = reference.model.update(dt, depth, rate)
            got = online.update(q)
            if thrust == 0.0:
                assert not got.any()
                continue
            fed += 1
            rows = np.repeat(q[None, :arm], arm, axis=0)
            rows[np.arange(arm), np.arange(arm)] += JACOBIAN_STEP
            poses = np.array([forward_kinematics(row, model) for row in rows])
            shifted = poses[:, :3, 3] + poses[:, :3, 2] * q[FEED]
            force = -thrust * reference.direction[None, :]
            expected = _balance(q[None, :], tip[None, :], pose[None, :3, 2], force, shifted[:, None, :])[0]
            assert got.tobytes() == expected.tobytes(), (direction, q)
    assert fed > 1000
