"""Inverse kinematics: the report's example, round trips (sweep + hypothesis), families, refusals."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from quirobot_description.parameters import load_parameters
from quirobot_kinematics.forward import forward_kinematics
from quirobot_kinematics.inverse import (
    ApproachTarget,
    IKError,
    approach_inverse,
    approach_inverse_kinematics_batch,
    inverse_kinematics,
    inverse_kinematics_all,
)
from quirobot_kinematics.model import KinematicModel

MODEL = KinematicModel.from_parameters(load_parameters())
TWO_PI = 2.0 * math.pi


@pytest.fixture(scope="module")
def model() -> KinematicModel:
    return MODEL


def in_limit_configurations(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(MODEL.lower, MODEL.upper, size=(n, 5))


def same_angles(a: np.ndarray, b: np.ndarray) -> float:
    """Largest difference modulo 2*pi."""
    return float(np.max(np.abs(np.remainder(a - b + math.pi, TWO_PI) - math.pi)))


def test_report_worked_example_inverts_exactly_without_limits(model):
    # Report: q = [-1.5, -1.5, 0.5, pi/4, pi/4], "the closed-form IK of that T returns q exactly".
    q = np.array([-1.5, -1.5, 0.5, math.pi / 4, math.pi / 4])
    np.testing.assert_allclose(
        inverse_kinematics(forward_kinematics(q, model), model, respect_limits=False), q, atol=1e-12
    )
    # Report's printed T (4 decimals, n exactly horizontal) gives q to the printed precision.
    printed = np.array(
        [[0.7071, 0.5, 0.5, -1.4], [0.7071, -0.5, -0.5, -1.6], [0.0, 0.7071, -0.7071, -1.0414], [0, 0, 0, 1]]
    )
    rotation = Rotation.from_matrix(printed[:3, :3]).as_matrix()  # nearest rotation to the rounded one
    printed[:3, :3] = rotation
    np.testing.assert_allclose(inverse_kinematics(printed, model, respect_limits=False), q, atol=2e-4)


def test_report_worked_example_is_refused_as_a_motion_request(model):
    T = forward_kinematics([-1.5, -1.5, 0.5, math.pi / 4, math.pi / 4], model)
    with pytest.raises(
        IKError, match=r"gantry_x would be -1\.5 m, 1\.5 m below its lower limit 0 m"
    ) as error:
        inverse_kinematics(T, model)
    assert "gantry_y" in str(error.value)
    with pytest.raises(IKError, match="gantry_x"):
        inverse_kinematics(ApproachTarget(T[:3, 3], T[:3, 2]), model)


def test_round_trip_sweep_10000_targets_of_both_kinds(model):
    q_all = in_limit_configurations(10_000, seed=11)
    poses = forward_kinematics(q_all, model)
    seeds = in_limit_configurations(10_000, seed=12)
    worst_pose_q = worst_pose_T = worst_approach_T = 0.0
    for q, T, seed in zip(q_all, poses, seeds, strict=True):
        solved = inverse_kinematics(T, model, seed=seed)
        worst_pose_q = max(worst_pose_q, float(np.max(np.abs(solved - q))))
        worst_pose_T = max(worst_pose_T, float(np.max(np.abs(forward_kinematics(solved, model) - T))))
        approach = inverse_kinematics(ApproachTarget(T[:3, 3], T[:3, 2]), model, seed=seed)
        reached = forward_kinematics(approach, model)
        assert model.within_limits(approach)
        worst_approach_T = max(
            worst_approach_T,
            float(np.max(np.abs(reached[:3, 3] - T[:3, 3]))),
            float(np.max(np.abs(reached[:3, 2] - T[:3, 2]))),
        )
    assert worst_pose_q < 1e-9
    assert worst_pose_T < 1e-9
    assert worst_approach_T < 1e-9


def test_batched_approach_ik_agrees_with_single(model):
    q_all = in_limit_configurations(2000, seed=13)
    approach = forward_kinematics(np.array([1.0, 1.0, 1.0, 0.7, 0.3]), model)[:3, 2]
    q_all[:, 3:] = (0.7, 0.3)
    positions = forward_kinematics(q_all, model)[:, :3, 3]
    positions[::7] += 3.0  # out of reach
    q, reachable = approach_inverse_kinematics_batch(positions, approach, model)
    for i in range(0, 2000, 50):
        if reachable[i]:
            single = inverse_kinematics(ApproachTarget(positions[i], approach), model, seed=q_all[i])
            np.testing.assert_allclose(q[i], single, atol=1e-12)
        else:
            with pytest.raises(IKError):
                inverse_kinematics(ApproachTarget(positions[i], approach), model)
    assert not reachable[::7].any()
    assert reachable.sum() == 2000 - len(range(0, 2000, 7))


joint_values = st.tuples(
    *(
        st.floats(float(lo), float(hi), allow_nan=False)
        for lo, hi in zip(MODEL.lower, MODEL.upper, strict=True)
    )
).map(np.array)
feeds = st.floats(MODEL.feed_lower, MODEL.feed_upper)


def _outcome(solve, *args) -> bytes | str:
    try:
        return solve(*args).tobytes()
    except IKError as error:
        return str(error)


def _general(approach: np.ndarray, model: KinematicModel):
    return lambda position, seed: inverse_kinematics(ApproachTarget(position, approach), model, seed)


def test_approach_inverse_is_inverse_kinematics_to_the_bit(model):
    """approach_inverse(approach, model)(position, seed): the numbers, or the refusal, of
    inverse_kinematics, over positions inside and outside the gantry's travel (also within the
    limit slack, clipped), approaches of every kind and seeds along a chain (as plan_line seeds)."""
    rng = np.random.default_rng(7)
    tight = replace(model, lower=model.lower + 0.05, upper=model.upper - 0.05)  # soft limits, as planned
    fast_paths = 0
    for used in (model, tight):
        for k in range(60):
            approach = rng.normal(size=3) * (0.2 if k % 5 else 1e-3)
            approach[2] = -abs(approach[2]) if k % 7 else abs(approach[2])  # some upward
            q = rng.uniform(used.lower, used.upper)
            tool0 = forward_kinematics(q, used)[:3, 3]
            solve = approach_inverse(approach, used)
            fast_paths += solve.__name__ == "solve"
            seed = rng.uniform(used.lower - 1.0, used.upper + 1.0)
            for i in range(40):
                if i % 2:  # a seed sharing one wrist angle with the last one (the remembered choice's key)
                    seed = seed.copy()
                    seed[3 + i % 4 // 2] = rng.uniform(-7.0, 7.0)
                position = tool0 + rng.normal(size=3) * 0.3
                expected = _outcome(_general(approach, used), position, seed)
                assert _outcome(solve, position, seed) == expected
                if isinstance(expected, bytes) and i % 3 == 0:
                    seed = np.frombuffer(expected)
        approach = np.array([0.3, 0.2, -1.0]) / math.sqrt(1.13)
        d = used.upper[:3] + 0.5e-12  # outside by less than LIMIT_SLACK: clipped, as inverse_kinematics does
        position = np.array([d[0] + used.l5 * approach[0], d[1] + used.l5 * approach[1], 0.0])
        position[2] = -(d[2] + used.l4 - used.l5 * approach[2])
        clipped = inverse_kinematics(ApproachTarget(position, approach), used)
        assert clipped[:3].tolist() == used.upper[:3].tolist()
        assert approach_inverse(approach, used)(position, None).tobytes() == clipped.tobytes()
    assert fast_paths > 60  # most approaches take the precomputed wrist


@settings(max_examples=300, deadline=None)
@given(q=joint_values, seed=joint_values, feed=feeds)
def test_pose_round_trip_property(q, seed, feed):
    T = forward_kinematics(q, MODEL, feed=feed)
    solved = inverse_kinematics(T, MODEL, seed=seed, feed=feed)
    assert MODEL.within_limits(solved)
    np.testing.assert_allclose(forward_kinematics(solved, MODEL, feed=feed), T, atol=1e-9)
    assert same_angles(solved[3:], q[3:]) < 1e-9


@settings(max_examples=300, deadline=None)
@given(q=joint_values, seed=joint_values, feed=feeds)
def test_approach_round_trip_property(q, seed, feed):
    T = forward_kinematics(q, MODEL, feed=feed)
    target = ApproachTarget(T[:3, 3], T[:3, 2])
    every = inverse_kinematics_all(target, MODEL, seed=seed, feed=feed)
    best = inverse_kinematics(target, MODEL, seed=seed, feed=feed)
    np.testing.assert_array_equal(best, every[0])
    distances = np.abs(every[:, 3:] - seed[3:]).sum(axis=1)
    assert distances[0] == distances.min()
    for solution in every:
        assert MODEL.within_limits(solution)
        reached = forward_kinematics(solution, MODEL, feed=feed)
        np.testing.assert_allclose(reached[:3, 3], T[:3, 3], atol=1e-9)
        np.testing.assert_allclose(reached[:3, 2], T[:3, 2], atol=1e-9)
    # The configuration we started from is one of them (modulo 2*pi), unless the tool is vertical.
    if abs(math.cos(q[4])) > 1e-6:
        assert min(same_angles(s[3:], q[3:]) for s in every) < 1e-9


def test_two_wrist_families(model):
    q = np.array([1.0, 1.0, 1.0, 0.5, 0.6])
    T = forward_kinematics(q, model)
    every = inverse_kinematics_all(ApproachTarget(T[:3, 3], T[:3, 2]), model, seed=q)
    np.testing.assert_allclose(every[0], q, atol=1e-12)
    np.testing.assert_allclose(every[1, 3:], [0.5 + math.pi, math.pi - 0.6], atol=1e-12)
    # Nearest-seed choice switches family when the seed is near the other one.
    flipped = inverse_kinematics(ApproachTarget(T[:3, 3], T[:3, 2]), model, seed=every[1])
    np.testing.assert_allclose(flipped, every[1], atol=1e-12)


def test_theta4_at_both_ends_of_its_range(model):
    T = forward_kinematics([1.0, 1.0, 1.0, 0.0, 0.3], model)
    every = inverse_kinematics_all(T, model)
    np.testing.assert_allclose(sorted(every[:, 3]), [0.0, TWO_PI], atol=1e-12)
    np.testing.assert_allclose(inverse_kinematics(T, model, seed=[0, 0, 0, 6.0, 0])[3], TWO_PI, atol=1e-12)


def test_vertical_approach_keeps_the_seed_theta4(model):
    target = ApproachTarget([1.0, 0.8, -1.5], [0.0, 0.0, -1.0])
    q = inverse_kinematics(target, model, seed=[0, 0, 0, 2.5, 0])
    assert q[3] == 2.5
    np.testing.assert_allclose(q[4], math.pi / 2, atol=1e-15)
    reached = forward_kinematics(q, model)
    np.testing.assert_allclose(reached[:3, 3], target.position, atol=1e-12)
    np.testing.assert_allclose(reached[:3, 2], target.approach, atol=1e-12)


def test_approach_length_does_not_matter(model):
    q = inverse_kinematics(ApproachTarget([1.0, 1.0, -1.0], [2.0, 0.0, -2.0]), model)
    np.testing.assert_allclose(
        forward_kinematics(q, model)[:3, 2], [math.sqrt(0.5), 0.0, -math.sqrt(0.5)], atol=1e-15
    )


def _rolled(T: np.ndarray, angle: float) -> np.ndarray:
    """T turned by `angle` about its own tool z (a roll the arm cannot make)."""
    rolled = T.copy()
    rolled[:3, :3] = T[:3, :3] @ Rotation.from_rotvec([0.0, 0.0, angle]).as_matrix()
    return rolled


def test_pose_with_n_not_horizontal_is_refused_by_the_angle(model):
    T = forward_kinematics([1.0, 1.0, 1.0, 0.3, 0.0], model)  # theta5 = 0: o vertical, a roll tilts n fully
    with pytest.raises(IKError, match=r"n must be horizontal, it is 5 deg out of the horizontal plane"):
        inverse_kinematics(_rolled(T, math.radians(5.0)), model)
    with pytest.raises(IKError, match=r"0\.01 deg out"):
        inverse_kinematics(_rolled(T, math.radians(0.01)), model)
    for bad in (float("nan"), -1e-3, 2.0):
        with pytest.raises(IKError, match="orientation_tolerance must be an angle"):
            inverse_kinematics(T, model, orientation_tolerance=bad)
    # Within tolerance it is accepted.
    q = inverse_kinematics(_rolled(T, 1e-8), model)
    np.testing.assert_allclose(q, [1.0, 1.0, 1.0, 0.3, 0.0], atol=1e-7)


@pytest.mark.parametrize(
    ("q", "fragment"),
    [
        ([1.0, 1.0, 2.3, 0.3, 0.2], r"gantry_z would be 2\.3 m, 0\.3 m above its upper limit 2 m"),
        ([2.5, 1.0, 1.0, 0.3, 0.2], r"gantry_x would be 2\.5 m, 0\.5 m above"),
        ([1.0, 1.0, 1.0, 0.3, math.radians(-80.0)], r"wrist_pitch would be -80 deg, 5 deg outside its range"),
    ],
)
def test_targets_outside_limits_name_joint_and_amount(model, q, fragment):
    T = forward_kinematics(q, model)
    with pytest.raises(IKError, match=fragment):
        inverse_kinematics(T, model)
    np.testing.assert_allclose(inverse_kinematics(T, model, respect_limits=False, seed=q), q, atol=1e-12)


def test_upward_approach_names_both_families(model):
    tilted_up = [math.cos(math.radians(80)), 0.0, math.sin(math.radians(80))]
    both = (
        r"wrist_pitch would be -80 deg, 5 deg outside .*other wrist family: "
        r"wrist_pitch would be -100 deg, 25"
    )
    with pytest.raises(IKError, match=both):
        inverse_kinematics(ApproachTarget([1.0, 1.0, -1.0], tilted_up), model)
    with pytest.raises(IKError, match=r"wrist_pitch would be -90 deg, 15 deg outside"):
        inverse_kinematics(ApproachTarget([1.0, 1.0, -1.0], [0.0, 0.0, 1.0]), model)


NAN = float("nan")
INF = float("inf")


@pytest.mark.parametrize(
    ("target", "fragment"),
    [
        (np.full((4, 4), NAN), r"finite; element \[0, 0\] is nan"),
        (np.eye(3), r"4x4 matrix, got shape \(3, 3\)"),
        (np.eye(4)[:, :3], "4x4"),
        ("pose", "4x4 pose or an ApproachTarget"),
        (np.diag([1.0, 1.0, 1.0, 2.0]), "bottom row"),
        (np.diag([1.0, 2.0, 1.0, 1.0]), "not orthonormal"),
        (np.diag([1.0, 1.0, -1.0, 1.0]), "reflection"),
        (ApproachTarget([1.0, NAN, 0.0], [0.0, 0.0, -1.0]), "position must be finite"),
        (ApproachTarget([1.0, 1.0, -1.0], [0.0, INF, -1.0]), "approach direction must be finite"),
        (ApproachTarget([1.0, 1.0], [0.0, 0.0, -1.0]), "position must have 3 components"),
        (ApproachTarget([1.0, 1.0, -1.0], [0.0, 0.0, 0.0]), "non-zero"),
        (ApproachTarget([1.0, 1.0, -1.0], "down"), "approach direction must be 3 numbers"),
    ],
)
def test_malformed_targets_are_refused(model, target, fragment):
    with pytest.raises(IKError, match=fragment) as error:
        inverse_kinematics(target, model)
    assert isinstance(error.value, ValueError)


def test_bad_seed_and_feed_are_refused(model):
    T = forward_kinematics([1.0, 1.0, 1.0, 0.3, 0.2], model)
    with pytest.raises(IKError, match="seed must be finite; wrist_pitch"):
        inverse_kinematics(T, model, seed=[0, 0, 0, 0, NAN])
    with pytest.raises(IKError, match=r"seed must have shape \(5,\)"):
        inverse_kinematics(T, model, seed=[0, 0, 0])
    with pytest.raises(IKError, match="feed must be finite"):
        inverse_kinematics(T, model, feed=NAN)
    with pytest.raises(IKError, match=r"drill_feed 0\.5 m is outside its travel \[0, 0\.08\] m"):
        inverse_kinematics(T, model, feed=0.5)
    tip = forward_kinematics([1.0, 1.0, 1.0, 0.3, 0.2], model, feed=0.5)
    np.testing.assert_allclose(
        inverse_kinematics(tip, model, feed=0.5, respect_limits=False), [1.0, 1.0, 1.0, 0.3, 0.2], atol=1e-12
    )
