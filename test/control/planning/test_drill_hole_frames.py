"""A DrillHole goal given in another frame (the registered patient frame) mapped to the world."""

from __future__ import annotations

import math

import numpy as np
import pytest

from quirobot_control.planning.drill_hole import DrillGoal, InvalidGoalError, goal_in_world


def test_a_drill_goal_in_the_patient_frame_becomes_a_world_goal():
    goal = DrillGoal(np.array([0.0, 0.0, 0.0]), np.array([0.0, 0.0, -1.0]), 0.02, 0.0015, 60.0)
    truth = np.eye(4)  # half a turn about x, then a shift
    truth[:3, :3] = [
        [1.0, 0.0, 0.0],
        [0.0, math.cos(math.pi), -math.sin(math.pi)],
        [0.0, math.sin(math.pi), math.cos(math.pi)],
    ]
    truth[:3, 3] = [0.5, 0.6, -1.0]
    world = goal_in_world(goal, truth)
    np.testing.assert_allclose(world.entry, [0.5, 0.6, -1.0], atol=1e-15)
    np.testing.assert_allclose(world.direction, [0.0, 0.0, 1.0], atol=1e-15)
    assert (world.depth, world.feed_rate, world.max_thrust) == (0.02, 0.0015, 60.0)


def test_a_malformed_transform_is_refused_by_name():
    goal = DrillGoal(np.zeros(3), np.array([0.0, 0.0, -1.0]), 0.02, 0.0015, 60.0)
    with pytest.raises(InvalidGoalError, match="world_from_frame must be a"):
        goal_in_world(goal, np.eye(3))
