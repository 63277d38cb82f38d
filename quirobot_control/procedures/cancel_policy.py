"""What a cancel, an error or a drive stop does in each state of a DrillHole goal (ROS-free).

`TRANSITIONS` is the whole table, (state, event) -> (next state, action), every pair; the
executor (`procedures.drill_hole_executor`) feeds it events and carries out its actions.

Rules (issue 17 item 5: every cancel ends out of the bone):
- a cancel while the bit is out of the bone holds the robot where it is (STOP);
- a cancel in a bone phase retracts the feed along the axis (RETRACT); further cancels change
  nothing: the retract goes on (a second cancel that stopped at once would leave the bit in bone);
- an error in bone (a controller refusing or aborting, joint states lost) or a refused or aborted
  retract makes the feed axis alone withdraw the bit from its measured pose (WITHDRAW);
- a drive stop (every drive quick-stopped by the hardware) or an error of the withdraw itself
  holds at once: only then can the bit stay in the bone, and the result says so;
- a plan that ends in a bone phase is an error (the plan always retracts): withdraw.

Rejected alternative: "a second cancel stops at once" (the previous table). Over DDS a second
cancel never reaches the server (rcl_action refuses to cancel a goal already CANCELING), and where
it could it would leave the bit in bone.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from quirobot_control.planning.drill_hole import BONE_PHASES


class State(Enum):
    IDLE = "idle"
    MOVING = "moving"  # executing, the bit out of bone
    DRILLING = "drilling"  # executing a bone phase (feed, dwell, retract)
    RETRACTING = "retracting"  # a cancel's retract along the axis out of the bone
    WITHDRAWING = "withdrawing"  # the feed alone withdraws the bit (a fallback)
    SUCCEEDED = "succeeded"
    OUT_OF_BONE = "out_of_bone"  # ended by a cancel or an error with the bit withdrawn
    STOPPED = "stopped"  # held at once: out of bone, or a drive stop / failed withdraw in bone


class Event(Enum):
    GOAL = "goal"  # a goal accepted: start executing
    BONE_ENTERED = "bone_entered"  # the plan enters a bone phase
    BONE_LEFT = "bone_left"  # the plan leaves the bone phases
    CANCEL = "cancel"
    ERROR = "error"  # a controller refusing or aborting, lost joint states: the feed can still move
    DRIVE_STOP = "drive_stop"  # the drives stopped (fault, watchdog, e-stop): nothing moves
    MOTION_DONE = "motion_done"  # the commanded motion finished


class Action(Enum):
    NONE = "none"
    EXECUTE = "execute"  # send the plan to the controllers
    RETRACT = "retract"  # the arm holds, the feed stops and retracts from its commanded state
    WITHDRAW = "withdraw"  # every motion cancelled, the feed alone back out from its measured pose
    STOP = "stop"  # hold where the robot is, at once (cancel every motion sent)
    SUCCEED = "succeed"
    FINISH_OUT = "finish_out"  # the goal ends (canceled, or aborted with its error), the bit out


_TERMINAL = (State.IDLE, State.SUCCEEDED, State.OUT_OF_BONE, State.STOPPED)
_IN_BONE = (State.DRILLING, State.RETRACTING, State.WITHDRAWING)

TRANSITIONS: dict[tuple[State, Event], tuple[State, Action]] = {
    **{(s, Event.GOAL): (State.MOVING, Action.EXECUTE) for s in _TERMINAL},
    **{(s, e): (s, Action.NONE) for s in _TERMINAL for e in Event if e is not Event.GOAL},
    **{(s, Event.GOAL): (s, Action.NONE) for s in (State.MOVING, *_IN_BONE)},
    **{(s, Event.DRIVE_STOP): (State.STOPPED, Action.STOP) for s in (State.MOVING, *_IN_BONE)},
    (State.MOVING, Event.BONE_ENTERED): (State.DRILLING, Action.NONE),
    (State.MOVING, Event.BONE_LEFT): (State.MOVING, Action.NONE),
    (State.MOVING, Event.CANCEL): (State.STOPPED, Action.STOP),
    (State.MOVING, Event.ERROR): (State.STOPPED, Action.STOP),
    (State.MOVING, Event.MOTION_DONE): (State.SUCCEEDED, Action.SUCCEED),
    (State.DRILLING, Event.BONE_ENTERED): (State.DRILLING, Action.NONE),
    (State.DRILLING, Event.BONE_LEFT): (State.MOVING, Action.NONE),
    (State.DRILLING, Event.CANCEL): (State.RETRACTING, Action.RETRACT),
    (State.DRILLING, Event.ERROR): (State.WITHDRAWING, Action.WITHDRAW),
    (State.DRILLING, Event.MOTION_DONE): (State.WITHDRAWING, Action.WITHDRAW),
    (State.RETRACTING, Event.BONE_ENTERED): (State.RETRACTING, Action.NONE),
    (State.RETRACTING, Event.BONE_LEFT): (State.RETRACTING, Action.NONE),
    (State.RETRACTING, Event.CANCEL): (State.RETRACTING, Action.NONE),
    (State.RETRACTING, Event.ERROR): (State.WITHDRAWING, Action.WITHDRAW),
    (State.RETRACTING, Event.MOTION_DONE): (State.OUT_OF_BONE, Action.FINISH_OUT),
    (State.WITHDRAWING, Event.BONE_ENTERED): (State.WITHDRAWING, Action.NONE),
    (State.WITHDRAWING, Event.BONE_LEFT): (State.WITHDRAWING, Action.NONE),
    (State.WITHDRAWING, Event.CANCEL): (State.WITHDRAWING, Action.NONE),
    (State.WITHDRAWING, Event.ERROR): (State.STOPPED, Action.STOP),
    (State.WITHDRAWING, Event.MOTION_DONE): (State.OUT_OF_BONE, Action.FINISH_OUT),
}


@dataclass
class CancelPolicy:
    """The goal's execution state; `handle(event)` moves it by TRANSITIONS and says what to do."""

    state: State = State.IDLE

    def handle(self, event: Event) -> Action:
        self.state, action = TRANSITIONS[(self.state, event)]
        return action

    @property
    def in_bone(self) -> bool:
        """The state is one in which the bit may be in the bone."""
        return self.state in _IN_BONE

    def phase_event(self, phase: str) -> Event | None:
        """The event a plan phase implies in the current state (None: nothing changes)."""
        in_bone = phase in BONE_PHASES
        if in_bone and self.state is State.MOVING:
            return Event.BONE_ENTERED
        if not in_bone and self.state is State.DRILLING:
            return Event.BONE_LEFT
        return None
