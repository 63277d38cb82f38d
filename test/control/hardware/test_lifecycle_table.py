"""The hardware lifecycle against an expectation written here by hand, not read from the component.

The standard part is ros2_control's hardware component lifecycle (hardware_interface docs,
"Lifecycle of a Hardware Component", and the managed-node design it follows): on_configure
UNCONFIGURED -> INACTIVE, on_activate INACTIVE -> ACTIVE, on_deactivate ACTIVE -> INACTIVE,
on_cleanup INACTIVE -> UNCONFIGURED, on_error (SUCCESS) from any primary state -> UNCONFIGURED;
no other transition is valid from a state. The rest are this component's own rules (its module
docstring): acknowledge_stop not while ACTIVE, home() only while INACTIVE, hold/read/write only
while ACTIVE, and stop(reason) never refused, ending ACTIVE (a category 1 stop switches the drives
off). Every (state, event) pair is run on a component over simulated drives.
"""

from __future__ import annotations

import itertools

import pytest
from test_hardware_safety import DT, Q0, Rig

from quirobot_control.hardware.hardware_info import HardwareError
from quirobot_control.hardware.lifecycle import (
    LIFECYCLE_TRANSITIONS,
    CallbackReturn,
    LifecycleState,
    ReturnType,
)

OFF, INACTIVE, ACTIVE = LifecycleState.UNCONFIGURED, LifecycleState.INACTIVE, LifecycleState.ACTIVE
#: event -> {state: the state after it}; a state not listed: the event is refused there.
EXPECTED = {
    # ros2_control's hardware lifecycle
    "configure": {OFF: INACTIVE},
    "activate": {INACTIVE: ACTIVE},
    "deactivate": {ACTIVE: INACTIVE},
    "cleanup": {INACTIVE: OFF},
    "error": {OFF: OFF, INACTIVE: OFF, ACTIVE: OFF},
    # this component's rules
    "acknowledge": {OFF: OFF, INACTIVE: INACTIVE},
    "home": {INACTIVE: INACTIVE},
    "hold": {ACTIVE: ACTIVE},
    "read": {ACTIVE: ACTIVE},
    "write": {ACTIVE: ACTIVE},
    "stop": {OFF: OFF, INACTIVE: INACTIVE, ACTIVE: INACTIVE},
}


def test_the_table_lists_exactly_the_expected_pairs():
    """LIFECYCLE_TRANSITIONS, every (state, event) pair (FINALIZED included), against EXPECTED."""
    for state, event in itertools.product(LifecycleState, EXPECTED):
        assert LIFECYCLE_TRANSITIONS.get((state, event)) is EXPECTED[event].get(state), (state, event)
    assert {event for _, event in LIFECYCLE_TRANSITIONS} == set(EXPECTED)


def _request(hw, event: str) -> bool:
    """Run `event` on the component; True if it was accepted, False if refused."""
    if event == "home":
        try:
            return hw.home(0.0).done
        except HardwareError:
            return False
    if event == "stop":
        hw.stop("test stop")
        return True
    call = {
        "configure": hw.on_configure,
        "activate": hw.on_activate,
        "deactivate": hw.on_deactivate,
        "cleanup": hw.on_cleanup,
        "error": hw.on_error,
        "acknowledge": lambda: hw.acknowledge_stop("test"),
        "hold": lambda: hw.hold("test hold"),
        "read": lambda: hw.read(0.0, DT),
        "write": lambda: hw.write(0.0, DT),
    }[event]
    return call() in (CallbackReturn.SUCCESS, ReturnType.OK)


@pytest.mark.parametrize("state", [OFF, INACTIVE, ACTIVE])
@pytest.mark.parametrize("event", EXPECTED)
def test_every_state_and_event_against_the_lifecycle_standard(parameters, control, info, state, event):
    """Accepted where EXPECTED lists the pair, landing in its state; refused elsewhere: the
    lifecycle, the drives and the stop latch as they were, `refused` naming event and state."""
    rig = Rig(parameters, control, info, Q0)
    hw = rig.hardware
    for step in {OFF: (), INACTIVE: ("configure",), ACTIVE: ("configure", "activate")}[state]:
        assert _request(hw, step), hw.refused
    assert hw.lifecycle is state
    before = rig.states()
    accepted = _request(hw, event)
    target = EXPECTED[event].get(state)
    if target is None:
        assert not accepted
        assert hw.lifecycle is state
        assert rig.states() == before
        assert event in hw.refused and state.value in hw.refused
        assert hw.stop_reason is None  # a refused request is not a stop
    else:
        assert accepted, hw.refused
        assert hw.lifecycle is target
