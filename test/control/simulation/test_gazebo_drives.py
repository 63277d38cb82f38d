"""The Gazebo drive side (simulation.gazebo_drives): the DrivesState task_node waits for, and the
holes it takes or refuses, each hole a real DrillHole plan's context (planning.drill_hole) with
and without the incision's bone model."""

from __future__ import annotations

import dataclasses

import pytest

from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.planning.drill_hole import DrillGoal, plan_drill_hole
from quirobot_control.planning.tasks import load_task
from quirobot_control.procedures.drill_hole_port import StackStatus, waiting_for
from quirobot_control.simulation.gazebo_drives import UNWATCHED, GazeboDrives, HoleRefusedError
from quirobot_description.geometric_errors import GeometricErrors
from quirobot_description.machine_identity import simulated_machine
from quirobot_description.parameters import DrillParameters


@pytest.fixture(scope="module")
def plans(parameters):
    """goal id -> its hole context: the shipped incision's goal without a bone model ("plain")
    and with it ("bone")."""
    control = control_configuration(parameters)
    task = load_task("incision")
    goal = DrillGoal(task.entry, task.direction, 0.005, task.feed_rate, 60.0)
    feed_mass = control.joint(DrillParameters.feed_joint).effective_inertia
    contexts = {}
    for name, bone in (("plain", False), ("bone", True)):
        plan = plan_drill_hole(
            goal, task.park, parameters, control.dt, task, bone_model=bone, feed_mass=feed_mass
        )
        contexts[name] = plan.hole_context(name)
    return contexts


def stack_status(drives: GazeboDrives) -> StackStatus:
    """What task_node's StackListener makes of the state (nodes.motion_port._on_drives)."""
    state = drives.state()
    return StackStatus(
        True,
        state.enabled,
        state.homed,
        "",
        commanded=state.commanded,
        hole_goal_id=state.hole_goal_id,
        hole_refused_goal_id=state.hole_refused_goal_id,
        hole_refused=state.hole_refused,
    )


def test_task_node_waits_for_nothing_the_drive_side_says(plans):
    drives = GazeboDrives()
    state = drives.state()
    assert (state.lifecycle, state.enabled, state.homed, state.commanded) == ("active", True, True, True)
    assert waiting_for(stack_status(drives), measurement=None, states_lost=1.0, started=False) == [
        "joint states"
    ]


def test_a_hole_without_a_bone_model_is_taken_and_says_what_is_not_watched(plans):
    drives = GazeboDrives()
    text = drives.set_drilling_context("plain", plans["plain"])
    assert UNWATCHED in text and "5.00 mm" in text
    assert (drives.state().hole_goal_id, drives.state().hole_unwatched) == ("plain", UNWATCHED)
    assert "ended" in drives.set_drilling_context("plain", None)
    assert (drives.state().hole_goal_id, drives.state().hole_unwatched) == ("", "")


def test_a_hole_with_a_bone_model_is_refused_for_its_goal_to_see(plans):
    drives = GazeboDrives()
    assert plans["bone"].bone is not None
    with pytest.raises(HoleRefusedError, match="no drilling thrust"):
        drives.set_drilling_context("bone", plans["bone"])
    state = drives.state()
    assert state.hole_goal_id == "" and state.hole_refused_goal_id == "bone"
    assert "bone model" in state.hole_refused


def test_a_hole_belongs_to_one_goal(plans):
    drives = GazeboDrives()
    drives.set_drilling_context("plain", plans["plain"])
    other = dataclasses.replace(plans["plain"], goal_id="other")
    with pytest.raises(HoleRefusedError, match="goal 'plain''s hole is active"):
        drives.set_drilling_context("other", other)
    with pytest.raises(HoleRefusedError, match="the active hole is goal 'plain'"):
        drives.set_drilling_context("other", None)
    with pytest.raises(HoleRefusedError, match="names goal 'plain', sent for 'third'"):
        drives.set_drilling_context("third", plans["plain"])
    assert drives.state().hole_goal_id == "plain"


def test_a_calibrated_hole_is_refused(plans):
    drives = GazeboDrives()
    calibrated = dataclasses.replace(
        plans["plain"], calibration=GeometricErrors.zero(), calibration_machine=simulated_machine(1)
    )
    with pytest.raises(HoleRefusedError, match="serial numbers"):
        drives.set_drilling_context("plain", calibrated)
    assert drives.state().hole_refused_goal_id == "plain"


def test_disabled_the_stack_refuses_goals_and_holes_until_enabled(plans):
    drives = GazeboDrives()
    drives.set_drilling_context("plain", plans["plain"])
    assert "disabled" in drives.disable()
    state = drives.state()
    assert (state.enabled, state.lifecycle, state.hole_goal_id) == (False, "inactive", "")
    with pytest.raises(HoleRefusedError, match="disabled"):
        drives.set_drilling_context("plain", plans["plain"])
    assert drives.enable().startswith("enabled") and drives.state().enabled
    assert drives.enable() == "already enabled"
    assert "absolute" in drives.home() and "no stop" in drives.acknowledge_stop()
