"""The DrillHole cancel policy (procedures.cancel_policy): every (state, event) pair against the
rules written independently of the table, and the plan's phases driving it."""

from __future__ import annotations

import pytest
from shipped_control import FEED_MASS

from quirobot_control.planning.drill_hole import BONE_PHASES, DrillGoal, plan_drill_hole
from quirobot_control.planning.tasks import load_task
from quirobot_control.procedures.cancel_policy import TRANSITIONS, Action, CancelPolicy, Event, State
from quirobot_description import robot_parameters

DT = 0.002  # s: coarser than the control period, the phases do not depend on it


@pytest.fixture(scope="module")
def plan():
    task = load_task("incision")
    goal = DrillGoal(task.entry, task.direction, task.depth, task.feed_rate, 60.0)
    return plan_drill_hole(goal, task.park, robot_parameters(), DT, feed_mass=FEED_MASS)


def expected(state: State, event: Event) -> tuple[State, Action]:
    """Issue 17 item 5 written independently of the table: every cancel ends out of the bone."""
    running = state in (State.MOVING, State.DRILLING, State.RETRACTING, State.WITHDRAWING)
    if not running:
        return (State.MOVING, Action.EXECUTE) if event is Event.GOAL else (state, Action.NONE)
    if event is Event.DRIVE_STOP:
        return State.STOPPED, Action.STOP  # nothing can move
    out_of_bone = state is State.MOVING
    if event is Event.CANCEL:
        if out_of_bone:
            return State.STOPPED, Action.STOP
        if state is State.DRILLING:
            return State.RETRACTING, Action.RETRACT
        return state, Action.NONE  # already on the way out: a second cancel changes nothing
    if event is Event.ERROR:
        if out_of_bone or state is State.WITHDRAWING:
            return State.STOPPED, Action.STOP  # out of bone, or the last way out failed
        return State.WITHDRAWING, Action.WITHDRAW  # the feed alone withdraws the bit
    if event is Event.MOTION_DONE:
        return {
            State.MOVING: (State.SUCCEEDED, Action.SUCCEED),
            State.DRILLING: (State.WITHDRAWING, Action.WITHDRAW),  # a plan never ends in bone
            State.RETRACTING: (State.OUT_OF_BONE, Action.FINISH_OUT),
            State.WITHDRAWING: (State.OUT_OF_BONE, Action.FINISH_OUT),
        }[state]
    if state in (State.RETRACTING, State.WITHDRAWING) or event is Event.GOAL:
        return state, Action.NONE
    return (State.DRILLING if event is Event.BONE_ENTERED else State.MOVING), Action.NONE


@pytest.mark.parametrize("state", list(State))
@pytest.mark.parametrize("event", list(Event))
def test_transition_table_every_pair(state, event):
    assert TRANSITIONS[(state, event)] == expected(state, event)
    policy = CancelPolicy(state)
    assert policy.handle(event) is expected(state, event)[1]
    assert policy.state is expected(state, event)[0]


def test_table_has_exactly_every_pair():
    assert set(TRANSITIONS) == {(s, e) for s in State for e in Event}


def test_cancel_during_feed_then_second_cancel_keeps_retracting(plan):
    policy = CancelPolicy()
    assert policy.handle(Event.GOAL) is Action.EXECUTE
    for phase in plan.trajectory.phases:
        event = policy.phase_event(phase.name)
        if event is not None:
            policy.handle(event)
        if phase.name == "feed":
            break
    assert policy.state is State.DRILLING
    assert "feed" in BONE_PHASES
    assert policy.handle(Event.CANCEL) is Action.RETRACT
    assert policy.handle(Event.CANCEL) is Action.NONE
    assert policy.state is State.RETRACTING
    assert policy.handle(Event.ERROR) is Action.WITHDRAW  # the retract aborted
    assert policy.handle(Event.MOTION_DONE) is Action.FINISH_OUT


def test_whole_plan_without_events_succeeds(plan):
    policy = CancelPolicy()
    policy.handle(Event.GOAL)
    seen = []
    for phase in plan.trajectory.phases:
        event = policy.phase_event(phase.name)
        if event is not None:
            seen.append(event)
            policy.handle(event)
    assert seen == [Event.BONE_ENTERED, Event.BONE_LEFT]
    assert policy.handle(Event.MOTION_DONE) is Action.SUCCEED
