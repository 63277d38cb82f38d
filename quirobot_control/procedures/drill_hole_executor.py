"""The DrillHole procedure, ROS-free: readiness, checks, plan, execution, cancel, result.

`DrillHoleExecutor.run(request)` carries one goal from its request to its `DrillResult`:

1. waits (feedback phase "waiting", bounded by `ready_timeout` s of the port's clock) until the
   stack is up (`waiting_for`: drive state heard, controllers active, joint states flowing, the
   robot description, and at start-up the drives enabled);
2. refuses what cannot be done now (a fault, disabled, not homed: REJECTED_NOT_READY), a goal in a
   frame the port cannot transform to the world (REJECTED_FRAME, naming it; a known frame's goal
   is mapped to the world at this moment: `planning.drill_hole.goal_in_world`), a malformed goal
   (REJECTED_INVALID) or one beyond a limit (REJECTED_LIMIT) before anything moves;
3. plans it (`planning.drill_hole.plan_drill_hole`), slows every phase but the feed and the dwell
   for the joint states' lag, and sends the arm's and the feed's parts to the port with one start
   time `start_delay` s ahead; a part refused or not accepted by its start time aborts the goal;
4. every control period (`monitor_period` s, the controllers'; default `dt`; whatever the feedback
   rate): the measured tip depth, distance
   from the axis (FK) and feed effort, published with the plan's phase and progress as feedback
   every `feedback_period` s; events in order of severity (a drive stop, lost joint states, a
   joint beyond its path tolerance at the state's own stamp (procedures.path_check: the
   controllers leave the path unchecked), a motion that ended otherwise than as planned, a cancel,
   the motion done) go through
   `CancelPolicy` (procedures.cancel_policy), whose actions this class carries out;
5. ends with every motion it sent cancelled unless the goal succeeded (a motion whose acceptance
   has not arrived yet included: `Motion.cancel` covers it), the drilling context published
   inactive, and the result with its `ErrorCode`.

The port (`MotionPort`) is the only way out: task_node gives it FollowJointTrajectory clients and
subscriptions (nodes/task_node.py); tests give it an in-process plant. Times are the port's clock
(simulated time in simulation), never the wall clock.

The goal's data (request, feedback, result, `ErrorCode`, `ExecutorConfig`) are in
procedures.drill_hole_types, the port and its motions in procedures.drill_hole_port, one goal's run
(steps 1-5) in procedures.drill_hole_run; the names are importable from here too.
"""

from __future__ import annotations

import threading

from quirobot_control.procedures.drill_hole_port import (
    PARTS,
    Measurement,
    Motion,
    MotionPort,
    MotionRecord,
    MotionStatus,
    StackStatus,
    waiting_for,
)
from quirobot_control.procedures.drill_hole_run import IN_BONE_MARGIN, WORLD, DrillHoleRun
from quirobot_control.procedures.drill_hole_types import (
    DrillFeedback,
    DrillRequest,
    DrillResult,
    ErrorCode,
    ExecutorConfig,
    Outcome,
)
from quirobot_control.safety.stop_codes import NO_STOP, Stop, merged_fault

__all__ = [
    "IN_BONE_MARGIN",
    "PARTS",
    "WORLD",
    "DrillFeedback",
    "DrillHoleExecutor",
    "DrillRequest",
    "DrillResult",
    "ErrorCode",
    "ExecutorConfig",
    "Measurement",
    "Motion",
    "MotionPort",
    "MotionRecord",
    "MotionStatus",
    "Outcome",
    "StackStatus",
    "waiting_for",
]


class DrillHoleExecutor:
    """Runs DrillHole goals one at a time over a `MotionPort` (module docstring)."""

    def __init__(self, port: MotionPort, config: ExecutorConfig) -> None:
        self.port = port
        self.config = config
        self._lock = threading.Lock()
        self._cancels = 0
        self._cancel_cause = "canceled"  # the latest request_cancel's
        self.started = False  # the stack has been ready once
        self.busy = False
        self.phase = ""
        self.fault = NO_STOP  # latched by an aborted goal; reset_fault clears it
        self.bit_in_bone = False  # the last goal ended with the bit in bone

    # --- called from other threads (the node's callbacks) ------------------------------------
    def accept(self) -> bool:
        """Take a new goal (False while one runs): reserves the executor, forgets old cancels."""
        with self._lock:
            if self.busy:
                return False
            self.busy, self._cancels, self._cancel_cause = True, 0, "canceled"
            return True

    def request_cancel(self, cause: str = "canceled") -> None:
        """Cancel the running goal as a client's cancel does (CancelPolicy: in bone the feed
        retracts; the goal ends canceled); `cause` opens the result's message (task_node's
        deactivation passes its own)."""
        with self._lock:
            self._cancels += 1
            self._cancel_cause = cause

    def reset_fault(self) -> str:
        """Clear the executor's latch; the reason cleared ("" if none)."""
        with self._lock:
            reason, self.fault, self.bit_in_bone = self.fault.reason, NO_STOP, False
        return reason

    @property
    def fault_reason(self) -> str:
        """The latched fault's words ("" if none)."""
        return self.fault.reason

    def robot_fault(self) -> Stop:
        """The robot's fault now: the drives' latched stop, else this executor's latch
        (safety.stop_codes.merged_fault, the one rule)."""
        return merged_fault(self.port.status().drive_stop, self.fault)

    def waiting_for(self) -> list[str]:
        """What a goal waits for now (marks the stack started once nothing is missing)."""
        missing = waiting_for(self.port.status(), self.port.measured(), self.config.states_lost, self.started)
        if not missing:
            self.started = True
        return missing

    # --- one goal ------------------------------------------------------------------------------
    def run(self, request: DrillRequest) -> DrillResult:
        """Carry out one goal (`accept` first when goals come from other threads)."""
        self.busy = True
        self.set_phase("waiting")
        try:
            return DrillHoleRun(self, request).execute()
        finally:
            self.busy = False
            self.set_phase("")

    # --- called by the goal's run (procedures.drill_hole_run.GoalOwner) ------------------------
    def set_phase(self, phase: str) -> None:
        if phase != self.phase:
            self.phase = phase
            self.port.state_changed()

    def cancels_requested(self) -> int:
        with self._lock:
            return self._cancels

    def cancel_requested_cause(self) -> str:
        with self._lock:
            return self._cancel_cause

    def latch_fault(self, stop: Stop, bit_in_bone: bool) -> None:
        """Latch `stop` (unless a fault is latched already) and bit_in_bone until reset_fault."""
        with self._lock:
            self.fault = self.fault or stop
            self.bit_in_bone = bit_in_bone
