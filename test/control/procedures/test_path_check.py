"""The executor's path check (procedures.path_check): a measured joint against the plan's sample at
the state's stamp, within the controllers' path tolerances."""

from __future__ import annotations

import math

import numpy as np
import pytest

from quirobot_control.planning.trajectory import JointTrajectory, Phase
from quirobot_control.procedures.path_check import PathCheck

NAMES = ("a", "b")
TOLERANCE = np.array([1e-3, 2e-3])


def still_plan() -> JointTrajectory:
    """Two joints at rest at (0.1, 0.2) for 1 s."""
    count = 11
    return JointTrajectory(
        dt=0.1,
        positions=np.tile([0.1, 0.2], (count, 1)),
        velocities=np.zeros((count, 2)),
        accelerations=np.zeros((count, 2)),
        phases=(Phase("hold", 0.0, 1.0),),
        names=NAMES,
    )


def test_within_and_beyond_tolerance():
    check = PathCheck(TOLERANCE, NAMES)
    assert check.check(still_plan(), 0.5, np.array([0.1005, 0.2015])) is None
    reason = check.check(still_plan(), 0.5, np.array([0.1, 0.203]))
    assert reason is not None and "joint b is 0.003" in reason and "limit 0.002" in reason


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_non_finite_measurement_is_beyond_every_tolerance(bad):
    """Issue 33 item 5: NaN compared as within tolerance (`not nan > 1` is true)."""
    reason = PathCheck(TOLERANCE, NAMES).check(still_plan(), 0.5, np.array([0.1, bad]))
    assert reason is not None and "joint b measured" in reason


def test_an_exempt_joint_is_not_held_to_the_plan():
    check = PathCheck(TOLERANCE, NAMES)
    assert check.check(still_plan(), 0.5, np.array([0.1, 0.25]), exempt=frozenset({"b"})) is None
    assert check.check(still_plan(), 0.5, np.array([0.2, 0.25]), exempt=frozenset({"b"})) is not None
