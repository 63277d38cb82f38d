"""The operating state table (procedures.operating_state, issue 35 item 1): every (state, event)
pair against rules written apart from the table, every state x observation against the priority
rule, and msg/OperatingState.msg's STATE_* constants against the enum."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from quirobot_control.procedures.operating_state import (
    TRANSITIONS,
    Event,
    Observation,
    OperatingState,
    OperatingStateMachine,
    events,
)

S, E = OperatingState, Event
ROOT = Path(__file__).resolve().parents[3]


def expected(state: OperatingState, event: Event) -> OperatingState:
    """The rules as a reader states them, one sticky state at a time."""
    sticky_exits = {  # a sticky state: left only by these events
        S.INACTIVE: {E.ACTIVATED: S.WAITING},
        S.FAULT: {E.FAULT_CLEARED: S.WAITING, E.DEACTIVATED: S.INACTIVE},
        S.BUSY: {E.GOAL_ENDED: S.WAITING, E.FAULT: S.FAULT, E.DEACTIVATED: S.INACTIVE},
    }
    if state in sticky_exits:
        return sticky_exits[state].get(event, state)
    always = {E.DEACTIVATED: S.INACTIVE, E.FAULT: S.FAULT, E.GOAL_STARTED: S.BUSY, E.STACK_DOWN: S.WAITING}
    if event in always:
        return always[event]
    if state is S.WAITING:
        return S.READY if event is E.STACK_UP else S.WAITING
    # Up (UNHOMED, DISABLED, READY): not homed outranks disabled.
    if event is E.UNHOMED:
        return S.UNHOMED
    if event is E.HOMED:
        return S.READY if state is S.UNHOMED else state
    if event is E.DISABLED:
        return S.DISABLED if state is S.READY else state
    if event is E.ENABLED:
        return S.READY if state is S.DISABLED else state
    return state  # ACTIVATED, FAULT_CLEARED, GOAL_ENDED, STACK_UP: nothing to leave


@pytest.mark.parametrize("state", list(OperatingState))
@pytest.mark.parametrize("event", list(Event))
def test_transition_table_every_pair(state, event):
    assert TRANSITIONS[(state, event)] is expected(state, event)
    machine = OperatingStateMachine(state)
    assert machine.handle(event) is expected(state, event) and machine.state is expected(state, event)


def priority(o: Observation) -> OperatingState:
    """The most severe state an observation holds (the module docstring's order)."""
    if not o.active:
        return S.INACTIVE
    if o.fault:
        return S.FAULT
    if o.busy:
        return S.BUSY
    if not o.up:
        return S.WAITING
    if not o.homed:
        return S.UNHOMED
    return S.READY if o.enabled else S.DISABLED


OBSERVATIONS = [Observation(*flags) for flags in itertools.product((False, True), repeat=6)]


@pytest.mark.parametrize("start", list(OperatingState))
def test_an_observation_from_any_state_ends_in_its_most_severe_state(start):
    for observation in OBSERVATIONS:
        machine = OperatingStateMachine(start)
        assert machine.observe(observation) is priority(observation), (start, observation)
        assert len(events(observation)) == 6


def test_the_message_carries_the_states():
    text = (ROOT / "msg/OperatingState.msg").read_text()
    constants = {n: int(v) for n, v in re.findall(r"^uint8 STATE_([A-Z_]+) = (\d+)", text, re.MULTILINE)}
    assert constants == {state.name: state.value for state in OperatingState}
    assert re.search(r"^uint8 state\b", text, re.MULTILINE)
