"""Bone thrust model: engagement of the drill point, power law in the feed rate, first-order lag."""

from __future__ import annotations

import math

import pytest

from quirobot_control.models.bone import BoneLayer, BoneModelError, BoneParameters, BoneThrust

BONE = BoneParameters(
    layers=(
        BoneLayer("cortex", 0.004, 1.0),
        BoneLayer("canal", 0.017, 0.15),
        BoneLayer("cortex", 0.004, 1.0),
    ),
    reference_thrust=30.0,
    reference_feed_rate=0.001,
    feed_rate_exponent=0.6,
    point_length=0.001,
    time_constant=0.005,
)


def test_engagement_rises_and_falls_linearly_over_the_point_length():
    thrust = BoneThrust(BONE)
    assert thrust.engagement(-0.001) == 0.0
    assert thrust.engagement(0.0) == 0.0
    assert thrust.engagement(0.0004) == pytest.approx(0.4)  # 40 % of the point in cortex
    assert thrust.engagement(0.002) == pytest.approx(1.0)
    # Half the point in cortex, half in the canal.
    assert thrust.engagement(0.0045) == pytest.approx(0.5 + 0.5 * 0.15)
    assert thrust.engagement(0.010) == pytest.approx(0.15)
    # Breaking through the far cortex: the force fades as the point leaves the bone.
    assert thrust.engagement(0.0253) == pytest.approx(0.7)
    assert thrust.engagement(0.0261) == 0.0


def test_thrust_follows_the_power_law_and_only_opposes_forward_feed():
    thrust = BoneThrust(BONE)
    depth = 0.002
    assert thrust.target(depth, 0.001) == pytest.approx(30.0)
    assert thrust.target(depth, 0.002) == pytest.approx(30.0 * 2**0.6)
    assert thrust.target(depth, 0.0005) == pytest.approx(30.0 * 0.5**0.6)
    assert thrust.target(depth, 0.0) == 0.0
    assert thrust.target(depth, -0.01) == 0.0  # retracting: no cutting thrust
    # Below 5 % of the reference rate the power law becomes a line through zero (continuous).
    low = 0.05 * 0.001
    assert thrust.target(depth, low) == pytest.approx(30.0 * 0.05**0.6)
    assert thrust.target(depth, low / 2) == pytest.approx(30.0 * 0.05**0.6 / 2)


def test_first_order_lag_is_exact_for_a_held_target():
    thrust = BoneThrust(BONE)
    for _ in range(10):
        thrust.update(0.001, 0.002, 0.001)
    assert thrust.force == pytest.approx(30.0 * (1 - math.exp(-0.01 / 0.005)), rel=1e-12)


@pytest.mark.parametrize(
    ("field", "value"), [("reference_thrust", 0.0), ("point_length", math.nan), ("feed_rate_exponent", 3.0)]
)
def test_invalid_bone_parameters_are_refused_by_name(field, value):
    values = {**BONE.__dict__, field: value}
    with pytest.raises(BoneModelError, match=field):
        BoneParameters(**values)
