"""The limits, and so the plans, are those of the mounted tool's axes (axes_for(tool))."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from quirobot_control.axes.limits import JointLimits, PlanningError
from quirobot_control.planning.trajectory import plan_feed, plan_point_to_point
from quirobot_description.parameters import JOINT_NAMES, axes_for

DT = 1e-3


def test_the_limits_follow_the_axes_they_are_asked_for(parameters):
    drill = JointLimits.from_parameters(parameters, axes_for("drill"))
    scope = JointLimits.from_parameters(parameters, axes_for("arthroscope"))
    assert drill.names == axes_for("drill") and scope.names == JOINT_NAMES
    arm = slice(0, len(JOINT_NAMES))
    for name in (f.name for f in dataclasses.fields(JointLimits) if f.name != "names"):
        np.testing.assert_array_equal(getattr(scope, name), getattr(drill, name)[arm], err_msg=name)
    # Against the parameter file directly: the feed's row is the drill's, a joint's row its joint's.
    feed = drill.names.index("drill_feed")
    assert drill.soft_upper[feed] == parameters.drill.feed.upper - parameters.drill.feed.soft_margin
    assert drill.velocity[feed] == parameters.drill.feed.velocity
    assert (
        scope.soft_lower[2] == parameters.joint("gantry_z").lower + parameters.joint("gantry_z").soft_margin
    )
    assert JointLimits.from_parameters(parameters, ("drill_feed",)).jerk.tolist() == [
        parameters.drill.feed.jerk
    ]


def test_an_arthroscope_plan_has_the_arm_joints_only(parameters):
    limits = JointLimits.from_parameters(parameters, axes_for("arthroscope"))
    start = 0.5 * (limits.soft_lower + limits.soft_upper)
    move = plan_point_to_point(start, start + [0.01, 0.0, 0.0, 0.0, 0.02], limits, DT)
    assert move.names == JOINT_NAMES
    assert move.positions.shape[1] == len(JOINT_NAMES)
    with pytest.raises(PlanningError, match="no drill feed among the axes"):
        plan_feed(start, 0.01, 0.001, limits, DT)


def test_an_unknown_axis_has_no_limits(parameters):
    with pytest.raises(KeyError, match="no axis named 'scope_roll'"):
        JointLimits.from_parameters(parameters, ("gantry_x", "scope_roll"))
