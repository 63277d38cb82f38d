"""The thrust feed-forward's period on the nominal chain (hardware.thrust_feedforward): the compiled
twin against update_in_python, bit for bit (the efforts, the depth and the bone model's force it
keeps), along the shipped incision's plan jittered, drilled along its direction (a component of
exactly zero: the signs of zero products show) and along directions tilted from it, through every
layer of the bone, the feed moving in and out, with the bone as modelled and harder or softer (a
fault's scale), and with the two paths taking turns on one object. The drive bridge's drilling
monitor's tip depth (`compiled_tip_depth`) against numpy's, bit for bit, the same way.

That update_in_python is the feed-forward: test_thrust_feedforward.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from compiled_kernel import bits, require_compiled

from quirobot_control.axes.virtual_fixtures import ToolGeometry, tool_points_one
from quirobot_control.hardware import thrust_feedforward
from quirobot_control.hardware.thrust_feedforward import ThrustFeedForward, tip_depth_constants
from quirobot_control.models.bone import LINEAR_BELOW
from quirobot_control.planning.tasks import load_task, plan_incision
from quirobot_kinematics import KinematicsError


def _compiled():
    require_compiled(thrust_feedforward.COMPILED, "_feedforward_kernel")
    if not thrust_feedforward.KERNEL_RUNS:
        pytest.skip("numpy here sums a dot or an einsum otherwise than the kernel: the Python runs")


def _state(feedforward: ThrustFeedForward) -> tuple[bytes, ...]:
    return bits((np.nan if feedforward._depth is None else feedforward._depth, feedforward.model.force))


@pytest.fixture(scope="module")
def incision(parameters):
    task = load_task("incision")
    dt = 1.0 / parameters.drive.control_rate
    return task, dt, plan_incision(task, parameters, dt).positions


def _poses(positions: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
    """Every other period of the plan, half of them jittered (arm ~0.1 mm or mrad, feed ~10 um: the
    depth's rate changes sign), a fifth followed by a creep (the feed 20 nm on: below the power
    law's rates)."""
    poses = []
    for q in positions[::2]:
        if rng.random() < 0.5:
            q = q + np.r_[rng.normal(size=5) * 1e-4, rng.normal() * 1e-5]
        poses.append(q)
        if rng.random() < 0.2:
            poses.append(q + np.r_[np.zeros(5), 2e-8])
    return poses


@pytest.mark.parametrize("tilt", [0.0, 0.05, 0.5])
def test_the_compiled_period_is_update_in_python_bit_for_bit(parameters, incision, tilt):
    _compiled()
    task, dt, positions = incision
    rng = np.random.default_rng(int(tilt * 100))
    direction = task.direction + rng.normal(size=3) * tilt
    direction /= np.linalg.norm(direction)
    compiled = ThrustFeedForward(parameters, task.entry, direction, task.bone, dt)
    python = ThrustFeedForward(parameters, task.entry, direction, task.bone, dt)
    turns = ThrustFeedForward(parameters, task.entry, direction, task.bone, dt)  # both paths by turns
    assert compiled._constants is not None
    layers = [(start, end) for start, end, _ in python.model.bounds]
    slow = LINEAR_BELOW * task.bone.reference_feed_rate
    seen = {"out": 0, "thrust": 0, "backing out": 0, "creeping": 0, "scaled": 0}
    seen |= {f"layer {i}": 0 for i in range(len(layers))}
    poses = _poses(positions, rng)
    for period, q in enumerate(poses):
        if period == len(poses) // 3:  # a fault makes the bone harder, then softer
            for feedforward in (compiled, python, turns):
                feedforward.model.scale = 3.0
        elif period == 2 * len(poses) // 3:
            for feedforward in (compiled, python, turns):
                feedforward.model.scale = 0.7
        before = python._depth
        expected = python.update_in_python(q)
        got = compiled.update(q)
        taken = turns.update(q) if period % 3 else turns.update_in_python(q)
        assert got.tobytes() == expected.tobytes(), (period, q, got, expected)
        assert taken.tobytes() == expected.tobytes(), (period, q)
        assert _state(compiled) == _state(python) == _state(turns), period
        depth, thrust = python._depth, python.model.force
        seen["out"] += thrust == 0.0
        seen["thrust"] += thrust != 0.0
        rate = 0.0 if before is None else (depth - before) / dt
        seen["backing out"] += thrust != 0.0 and rate < 0.0  # the force decays with the lag
        seen["creeping"] += 0.0 < rate < slow and thrust != 0.0  # the line below the power law
        seen["scaled"] += thrust != 0.0 and python.model.scale != 1.0
        for i, (start, end) in enumerate(layers):
            seen[f"layer {i}"] += start < depth <= end
    assert all(count > 20 for count in seen.values()), seen  # every case was reached


def test_the_compiled_period_leaves_a_bad_joint_to_the_python(parameters, incision):
    _compiled()
    task, dt, positions = incision
    feedforward = ThrustFeedForward(parameters, task.entry, task.direction, task.bone, dt)
    q = positions[len(positions) // 2].copy()
    q[3] = np.nan
    with pytest.raises(KinematicsError, match="wrist_yaw is \\[nan\\]"):
        feedforward.update(q)
    assert feedforward._depth is None and feedforward.model.force == 0.0  # nothing kept


def test_the_calibrated_chain_stays_in_python(parameters, incision):
    task, dt, _ = incision
    calibration = parameters.geometric.sample(np.random.default_rng(1))
    feedforward = ThrustFeedForward(parameters, task.entry, task.direction, task.bone, dt, calibration)
    assert feedforward._constants is None


def test_the_compiled_period_names_bad_constants(parameters, incision):
    _compiled()
    kernel = thrust_feedforward._feedforward_kernel
    law = (1.0,) * 9  # a bone law of one layer (bone_law.h)
    with pytest.raises(TypeError, match="constants must be a tuple of 10 floats"):
        kernel.update((1.0,) * 11, law, [0.0] * 6, None, 0.0, 1.0)
    with pytest.raises(TypeError, match="update: a bone law must be a tuple of 6 floats and 3 per layer"):
        kernel.update((1.0,) * 10, (1.0,) * 8, [0.0] * 6, None, 0.0, 1.0)
    with pytest.raises(TypeError, match="update takes 6 arguments, got 2"):
        kernel.update((1.0,) * 10, law)
    assert kernel.update((1.0,) * 10, law, [0.0] * 5, None, 0.0, 1.0) is None  # not six joints: the Python


def test_the_kernels_sums_are_numpys_signed_zeros_included():
    """The dot and the einsum sum the kernel takes (checked at import on plain vectors) against
    numpy's own on vectors with zeros of either sign, where only the order of the additions from
    zero decides the sign of a zero sum (a column of J^T f can be one: a joint moving the tip along
    an axis the force has no component on)."""
    _compiled()
    kernel = thrust_feedforward._feedforward_kernel
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(20000, 2, 3))
    vectors[rng.random(vectors.shape) < 0.4] = 0.0
    vectors[rng.random(vectors.shape) < 0.3] *= -1.0
    zero_sums = 0
    for a, b in vectors:
        dot = float(a @ b)
        einsum = float(np.einsum("ink,nk->ni", a[None, None, :], b[None, :])[0, 0])
        assert bits(kernel.sums(a.tolist(), b.tolist())) == bits((dot, einsum)), (a, b)
        zero_sums += einsum == 0.0
    assert zero_sums > 1000


def _numpys_tip_depth(q: np.ndarray, tool, entry: np.ndarray, direction: np.ndarray) -> float:
    """The drive bridge's drilling monitor's depth in numpy (bridge.hole_in_force._feed_depth)."""
    tip = tool_points_one(q.tolist(), tool)[0][2]
    return float((np.array(tip) - entry) @ direction)


@pytest.mark.parametrize("tilt", [0.0, 0.05, 0.5])
def test_the_compiled_tip_depth_is_numpys_bit_for_bit(parameters, incision, tilt):
    """The tip's depth along the incision's plan jittered, drilled along its direction (a component
    of exactly zero: the signs of zero products show) and along tilted ones."""
    _compiled()
    task, _, positions = incision
    rng = np.random.default_rng(int(tilt * 100) + 1)
    direction = task.direction + rng.normal(size=3) * tilt
    direction /= np.linalg.norm(direction)
    tool = ToolGeometry.from_parameters(parameters)
    constants = tip_depth_constants(tool.model, task.entry, direction)
    assert constants is not None
    signs = set()
    for q in _poses(positions, rng):
        expected = _numpys_tip_depth(q, tool, task.entry, direction)
        got = thrust_feedforward.compiled_tip_depth(constants, q.tolist())
        assert bits((got,)) == bits((expected,)), (q, got, expected)
        signs.add(expected > 0.0)
    assert signs == {False, True}  # before the entry and past it


def test_the_compiled_tip_depth_leaves_the_rest_to_numpy(parameters, incision):
    """None (numpy answers, raising as it does) for a joint list the kernel does not take or a
    non-finite joint or depth; no constants where the kernel's numbers would not be numpy's."""
    _compiled()
    task, _, positions = incision
    tool = ToolGeometry.from_parameters(parameters)
    constants = tip_depth_constants(tool.model, task.entry, task.direction)
    depth = thrust_feedforward.compiled_tip_depth
    q = positions[len(positions) // 2].tolist()
    assert depth(constants, q) == _numpys_tip_depth(np.array(q), tool, task.entry, task.direction)
    for bad in (np.nan, np.inf, -np.inf):
        for k in range(6):
            assert depth(constants, q[:k] + [bad] + q[k + 1 :]) is None, (k, bad)
    assert depth(constants, q[:5]) is None
    assert depth(constants, tuple(q)) is None
    assert depth(constants, q[:5] + [np.float64(q[5])]) is None
    assert depth(constants, q[:5] + [1]) is None
    with pytest.raises(TypeError, match="tip_depth takes a tuple of 8 floats and a list of 6"):
        depth(constants[:7], q)
    with pytest.raises(TypeError, match="must be real number"):
        depth(constants[:7] + ("x",), q)
    calibration = parameters.geometric.sample(np.random.default_rng(1))
    calibrated = ToolGeometry.from_parameters(parameters, calibration)
    assert tip_depth_constants(calibrated.model, task.entry, task.direction) is None
    assert tip_depth_constants(tool.model, task.entry.astype(np.float32), task.direction) is None
    assert tip_depth_constants(tool.model, task.entry, task.direction[:2]) is None
    assert tip_depth_constants(tool.model, list(task.entry), tuple(task.direction)) == constants
