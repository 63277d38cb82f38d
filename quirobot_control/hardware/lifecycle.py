"""The hardware component's lifecycle as data: ros2_control's hardware lifecycle states, the
callbacks' return values, and the table of (state, request) -> state that `QuirobotHardware`
applies (a pair not listed is refused; hardware.component says what each request does).
"""

from __future__ import annotations

import enum
from collections.abc import Callable


class CallbackReturn(enum.Enum):
    SUCCESS = "success"
    FAILURE = "failure"
    ERROR = "error"


class ReturnType(enum.Enum):
    OK = "ok"
    ERROR = "error"


class LifecycleState(enum.Enum):
    UNCONFIGURED = "unconfigured"
    INACTIVE = "inactive"
    ACTIVE = "active"
    FINALIZED = "finalized"


#: (state, request) -> the state it leads to; a pair not listed is refused (ERROR, drives untouched).
#: The code applies it (QuirobotHardware._transition: a request's callback runs only for a listed
#: pair, and its SUCCESS lands in the listed state). "acknowledge" is `acknowledge_stop`; read and
#: write are allowed only while ACTIVE; "stop" (`stop(reason)`) is never refused: every state lists it.
LIFECYCLE_TRANSITIONS: dict[tuple[LifecycleState, str], LifecycleState] = {
    (LifecycleState.UNCONFIGURED, "configure"): LifecycleState.INACTIVE,
    (LifecycleState.INACTIVE, "activate"): LifecycleState.ACTIVE,
    (LifecycleState.ACTIVE, "deactivate"): LifecycleState.INACTIVE,
    (LifecycleState.INACTIVE, "cleanup"): LifecycleState.UNCONFIGURED,
    (LifecycleState.UNCONFIGURED, "error"): LifecycleState.UNCONFIGURED,
    (LifecycleState.INACTIVE, "error"): LifecycleState.UNCONFIGURED,
    (LifecycleState.ACTIVE, "error"): LifecycleState.UNCONFIGURED,
    (LifecycleState.UNCONFIGURED, "acknowledge"): LifecycleState.UNCONFIGURED,
    (LifecycleState.INACTIVE, "acknowledge"): LifecycleState.INACTIVE,
    (LifecycleState.INACTIVE, "home"): LifecycleState.INACTIVE,
    (LifecycleState.ACTIVE, "hold"): LifecycleState.ACTIVE,
    (LifecycleState.ACTIVE, "read"): LifecycleState.ACTIVE,
    (LifecycleState.ACTIVE, "write"): LifecycleState.ACTIVE,
    (LifecycleState.UNCONFIGURED, "stop"): LifecycleState.UNCONFIGURED,
    (LifecycleState.INACTIVE, "stop"): LifecycleState.INACTIVE,
    (LifecycleState.ACTIVE, "stop"): LifecycleState.INACTIVE,
}


def _states_listing() -> dict[str, tuple[LifecycleState, ...]]:
    states: dict[str, tuple[LifecycleState, ...]] = {}
    for state, request in LIFECYCLE_TRANSITIONS:
        states[request] = (*states.get(request, ()), state)
    return states


#: request -> the states LIFECYCLE_TRANSITIONS lists it for: `_allowed`'s fast test (read and
#: write run it at 1 kHz), a tuple searched by identity (an Enum member's hash is Python code).
ALLOWED_IN = _states_listing()


class LifecycleTable:
    """LIFECYCLE_TRANSITIONS applied to a component's `lifecycle` state; a request refused says
    why in its `refused`."""

    lifecycle: LifecycleState
    refused: str | None

    def _next_state(self, request: str) -> LifecycleState | None:
        """LIFECYCLE_TRANSITIONS[(lifecycle, request)]: the state `request` leads to from here; None
        if the table does not list the pair (`refused` says so)."""
        target = LIFECYCLE_TRANSITIONS.get((self.lifecycle, request))
        if target is None:
            self.refused = f"{request} refused in state {self.lifecycle.value}"
        return target

    def _allowed(self, request: str) -> bool:
        """May `request` run now (the table lists it)? If not, say why in `refused`."""
        if self.lifecycle in ALLOWED_IN.get(request, ()):
            return True
        return self._next_state(request) is not None

    def _transition(self, request: str, callback: Callable[[], CallbackReturn]) -> CallbackReturn:
        """A lifecycle request applied from LIFECYCLE_TRANSITIONS: a pair the table does not list
        is refused (ERROR, `refused` says why, nothing touched); else `callback()` runs, and its
        SUCCESS lands in the table's state (a failure leaves the state where the callback left it:
        a stop inside it takes ACTIVE to INACTIVE)."""
        target = self._next_state(request)
        if target is None:
            return CallbackReturn.ERROR
        result = callback()
        if result is CallbackReturn.SUCCESS:
            self.lifecycle = target
        return result
