"""The robot's operating state as one table, ROS-free: (state, event) -> state, every pair.

task_node publishes the state on /quirobot/state (OperatingState.state, its STATE_* constants);
before, the message was a set of flags assembled in the node. The states, most severe first:

    INACTIVE  task_node deactivated: no goal is taken (a running one was canceled)
    FAULT     a latched fault: the drives' stop or an aborted goal (left only by FAULT_CLEARED,
              /quirobot/reset_fault)
    BUSY      a DrillHole goal runs (left by GOAL_ENDED, a FAULT or the deactivation)
    WAITING   something a goal needs is missing (drives' state, controllers, joint states, the
              robot description)
    UNHOMED   up, but a drive does not know its absolute position
    DISABLED  up and homed, the drives disabled (the user's /quirobot/disable, or after a stop)
    READY     a goal can run now

Events come from what task_node observes (`Observation`): `events(observation)` gives one event
per condition in a fixed order (lifecycle, fault, goal, stack, homing, enable), each the
condition's current level, and `OperatingStateMachine.observe` feeds them to the table. Fed in
that order from any state, they end in the most severe state the observation holds (the
"priority" rule above): test/control/procedures/test_operating_state.py checks every (state,
event) pair against rules written apart from the table, and every state x observation.

Rejected alternative: deriving the state from the flags alone, without a table. That hides which
states are sticky (FAULT until reset, BUSY until the goal ends, INACTIVE until activated) and what
each event does where; the table says it in one place, as the cancel policy and the hardware
lifecycle do (dVRK's one state table per arm).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, IntEnum


class OperatingState(IntEnum):
    """The robot's operating state (msg/OperatingState.msg's STATE_* constants, same values)."""

    INACTIVE = 0
    WAITING = 1
    FAULT = 2
    BUSY = 3
    UNHOMED = 4
    DISABLED = 5
    READY = 6


class Event(Enum):
    ACTIVATED = "activated"  # task_node is active (takes goals)
    DEACTIVATED = "deactivated"
    FAULT = "fault"  # a fault is latched
    FAULT_CLEARED = "fault_cleared"
    GOAL_STARTED = "goal_started"  # a goal runs
    GOAL_ENDED = "goal_ended"
    STACK_UP = "stack_up"  # nothing a goal needs is missing
    STACK_DOWN = "stack_down"
    HOMED = "homed"  # every drive is homed
    UNHOMED = "unhomed"
    ENABLED = "enabled"  # the drives are enabled
    DISABLED = "disabled"


S, E = OperatingState, Event
#: States a goal may start from (the executor waits for what is missing, refuses the rest).
_IDLE = (S.WAITING, S.UNHOMED, S.DISABLED, S.READY)


def _next(state: OperatingState, event: Event) -> OperatingState:
    """The table's rules (module docstring); `TRANSITIONS` is this function evaluated at every
    (state, event) pair, a table built once at import (test_operating_state checks every pair
    against rules written out separately)."""
    if event is E.DEACTIVATED:
        return S.INACTIVE
    if state is S.INACTIVE:
        return S.WAITING if event is E.ACTIVATED else S.INACTIVE
    if event is E.FAULT:
        return S.FAULT
    if state is S.FAULT:
        return S.WAITING if event is E.FAULT_CLEARED else S.FAULT
    if state is S.BUSY:
        return S.WAITING if event is E.GOAL_ENDED else S.BUSY
    if event is E.GOAL_STARTED:
        return S.BUSY
    if event is E.STACK_DOWN:
        return S.WAITING
    if state is S.WAITING:
        return S.READY if event is E.STACK_UP else S.WAITING
    # Up: the drive events; the enable event follows the homing one in an observation, so a
    # homed but disabled robot passes READY on its way to DISABLED.
    moves = {
        (S.READY, E.UNHOMED): S.UNHOMED,
        (S.DISABLED, E.UNHOMED): S.UNHOMED,
        (S.UNHOMED, E.HOMED): S.READY,
        (S.READY, E.DISABLED): S.DISABLED,
        (S.DISABLED, E.ENABLED): S.READY,
    }
    return moves.get((state, event), state)


#: The whole table: (state, event) -> next state, every pair (computed from `_next` at import).
TRANSITIONS: dict[tuple[OperatingState, Event], OperatingState] = {
    (state, event): _next(state, event) for state in OperatingState for event in Event
}


@dataclass(frozen=True)
class Observation:
    """What task_node sees at one moment."""

    active: bool  # the lifecycle node is active
    fault: bool  # a fault is latched (safety.stop_codes.merged_fault)
    busy: bool  # a goal runs
    up: bool  # nothing a goal needs is missing (the executor's waiting_for is empty)
    homed: bool
    enabled: bool


def events(observation: Observation) -> tuple[Event, ...]:
    """The observation as one event per condition, in the table's order (module docstring)."""
    o = observation
    return (
        E.ACTIVATED if o.active else E.DEACTIVATED,
        E.FAULT if o.fault else E.FAULT_CLEARED,
        E.GOAL_STARTED if o.busy else E.GOAL_ENDED,
        E.STACK_UP if o.up else E.STACK_DOWN,
        E.HOMED if o.homed else E.UNHOMED,
        E.ENABLED if o.enabled else E.DISABLED,
    )


class OperatingStateMachine:
    """The operating state, moved by the table (starts INACTIVE: task_node before activation)."""

    def __init__(self, state: OperatingState = OperatingState.INACTIVE) -> None:
        self.state = state

    def handle(self, event: Event) -> OperatingState:
        self.state = TRANSITIONS[(self.state, event)]
        return self.state

    def observe(self, observation: Observation) -> OperatingState:
        """Feed the observation's events; the state after them."""
        for event in events(observation):
            self.handle(event)
        return self.state
