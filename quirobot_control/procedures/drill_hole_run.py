"""One DrillHole goal's run (`DrillHoleRun`): the state the executor's loop carries from the
request to the result, steps 1-5 of procedures.drill_hole_executor's docstring (wait, check, plan,
drive and watch, end), its `CancelPolicy`'s actions carried out.

Made and run by `DrillHoleExecutor.run`, its owner (`GoalOwner`: the port, the settings, the
cancel requests and the fault latch).
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Protocol

import numpy as np

from quirobot_control.planning.drill_hole import (
    BONE_PHASES,
    INVALID,
    DrillPlan,
    GoalRejectedError,
    goal_in_world,
    phase_progress,
    plan_cancel_retract,
    plan_drill_hole,
    slowed_for_lag,
    tip_progress,
)
from quirobot_control.planning.tasks import IncisionTask, TaskError, load_task
from quirobot_control.planning.trajectory import JointTrajectory, Phase
from quirobot_control.procedures.cancel_policy import Action, CancelPolicy, Event, State
from quirobot_control.procedures.drill_hole_port import PARTS, Motion, MotionPort, MotionStatus
from quirobot_control.procedures.drill_hole_types import (
    DrillFeedback,
    DrillRequest,
    DrillResult,
    ErrorCode,
    ExecutorConfig,
    Outcome,
)
from quirobot_control.procedures.path_check import PathCheck
from quirobot_control.safety.stop_codes import Stop, StopCode
from quirobot_description.parameters import DrillParameters, axes_for

#: The frame goals are planned in (the robot's base, the URDF's root).
WORLD = "world"

#: m: a tip this far past the entry (or more) counts as in bone when a goal ends.
IN_BONE_MARGIN = 0.0

#: The path check's exempt joints after a breakthrough (the feed, held) and otherwise (none).
FEED_EXEMPT = frozenset({DrillParameters.feed_joint})
NONE_EXEMPT: frozenset[str] = frozenset()


class GoalOwner(Protocol):
    """What a run needs of the executor that owns it (procedures.drill_hole_executor)."""

    port: MotionPort
    config: ExecutorConfig

    def waiting_for(self) -> list[str]: ...

    def robot_fault(self) -> Stop: ...

    def cancels_requested(self) -> int: ...

    def cancel_requested_cause(self) -> str: ...

    def set_phase(self, phase: str) -> None: ...

    def latch_fault(self, stop: Stop, bit_in_bone: bool) -> None:
        """Latch `stop` (unless a fault is latched already) and bit_in_bone until reset_fault."""
        ...


class DrillHoleRun:
    """One goal's execution: the state the loop carries (module docstring, steps 1-5)."""

    def __init__(self, executor: GoalOwner, request: DrillRequest) -> None:
        self.executor = executor
        self.port = executor.port
        self.config = executor.config
        self.request = request
        self.policy = CancelPolicy()
        self.sent: list[Motion] = []  # every motion sent: cancelled at the end of a failed goal
        self.active: dict[str, Motion] = {}  # the motions whose outcome the goal waits for
        self.motion: JointTrajectory | None = None  # what is being executed now
        self.motion_start = 0.0  # s, its start time on the port's clock
        self.sent_at = 0.0  # s, when the last retract or withdraw was sent
        self.plan: DrillPlan | None = None
        self.deepest = float("nan")
        self.widest = float("nan")
        self.depth = float("nan")  # the latest measured tip depth past the entry
        self.why = ""  # the error that changed the course, "" for a cancel
        self.code = ErrorCode.ABORTED_FAULT  # the code of that error
        self.stop_code = StopCode.NONE  # the stop behind that error (safety.stop_codes)
        self.cancels_seen = 0
        self.canceled = False  # a cancel started the way out (the goal ends canceled)
        self.cancel_cause = "canceled"  # or the client's disappearance
        self.clients_gone_at = float("nan")  # s, since when no action client is left
        # the plan's path, time-aligned
        self.path = PathCheck(self.config.tolerance, axes_for("drill"), self.config.path_time_out)
        self.breakthrough = ""  # the drives' far-cortex breakthrough during this goal, "" if none
        self.breakthrough_early = False  # it came short of the imaged exit: retracted, but no success
        self.unwatched = ""  # what the drive side does not watch of this goal's hole (StackStatus)

    # --- steps ---------------------------------------------------------------------------------
    def execute(self) -> DrillResult:
        refused = self.check_fault() or self.wait_ready() or self.check_now()
        if refused is not None:
            return refused
        plan = self.plan_goal()
        if isinstance(plan, DrillResult):
            return plan
        self.plan = plan
        goal_id = self.request.goal_id or uuid.uuid4().hex
        machine = None if self.config.calibration is None else self.config.calibration.machine
        self.port.publish_context(goal_id, plan.hole_context(goal_id, machine))
        try:
            return self.wait_hole_in_force(goal_id) or self.drive()
        finally:
            self.port.publish_context(goal_id, None)

    def wait_ready(self) -> DrillResult | None:
        # The bound starts with the port's clock: ROS time reads 0 until the first /clock sample
        # (use_sim_time), then jumps to the simulation's epoch; counting from 0 would spend the
        # whole ready_timeout at that jump (seen in the ROS tier on a fresh sim.launch.py).
        deadline = None
        while missing := self.executor.waiting_for():
            now = self.port.now()
            if deadline is None and now > 0.0:
                deadline = now + self.config.ready_timeout
            if self.executor.cancels_requested():
                cause = self.executor.cancel_requested_cause()
                return self.finish(
                    Outcome.CANCELED, ErrorCode.CANCELED_RETRACTED, f"{cause} while waiting: nothing moved"
                )
            if deadline is not None and now > deadline:
                return self.refuse(
                    ErrorCode.REJECTED_NOT_READY,
                    f"not ready after {self.config.ready_timeout:.0f} s: waiting for {'; '.join(missing)}",
                )
            self.port.publish_feedback(
                DrillFeedback("waiting", float("nan"), float("nan"), float("nan"), 0.0)
            )
            self.port.sleep(self.config.feedback_period)
        return None

    def wait_hole_in_force(self, goal_id: str) -> DrillResult | None:
        """Nothing moves before the drive side runs this goal's hole (its monitor, fixtures and
        kinematics): a hole it refuses (a calibration of another machine, another goal's hole
        active) refuses the goal with the drive side's reason, as does no answer within
        response_timeout; nothing has moved."""
        deadline = self.port.now() + self.config.response_timeout
        while True:
            status = self.port.status()
            if status.hole_goal_id == goal_id:
                self.unwatched = status.hole_unwatched
                return None
            if status.hole_refused_goal_id == goal_id:
                return self.refuse(
                    ErrorCode.REJECTED_NOT_READY, f"the drives refused the goal's hole: {status.hole_refused}"
                )
            if (refused := self.check_fault()) is not None:
                return refused
            if self.executor.cancels_requested():
                cause = self.executor.cancel_requested_cause()
                return self.finish(
                    Outcome.CANCELED, ErrorCode.CANCELED_RETRACTED, f"{cause} before motion: nothing moved"
                )
            if self.port.now() > deadline:
                return self.refuse(
                    ErrorCode.REJECTED_NOT_READY,
                    f"the drives did not take the goal's hole within {self.config.response_timeout:.0f} s "
                    "(drive_node's /quirobot/drives/state names the hole it runs)",
                )
            self.port.sleep(self.config.dt)  # in process the hole is in force a period later

    def check_fault(self) -> DrillResult | None:
        """A latched fault refuses at once (no wait: nothing clears it but reset_fault)."""
        fault = self.executor.robot_fault()
        if fault:
            self.stop_code = fault.code
            return self.refuse(ErrorCode.REJECTED_NOT_READY, f"in fault: {fault.reason} (reset_fault)")
        return None

    def check_now(self) -> DrillResult | None:
        if (refused := self.check_fault()) is not None:
            return refused
        status = self.port.status()
        if not status.enabled:
            return self.refuse(ErrorCode.REJECTED_NOT_READY, "disabled: call /quirobot/enable")
        if not status.homed:
            return self.refuse(ErrorCode.REJECTED_NOT_READY, "not homed: call /quirobot/home")
        return self.goal_to_world()

    def goal_to_world(self) -> DrillResult | None:
        """The request's entry and direction mapped from their frames to the world (at goal time:
        a registration changes between goals, not during one)."""
        goal = self.request.goal
        entry_frame, direction_frame = (frame or WORLD for frame in self.request.frames)
        transforms = {}
        for frame in dict.fromkeys((entry_frame, direction_frame)):
            if frame == WORLD:
                continue
            try:
                transforms[frame] = self.port.world_from(frame)
            except LookupError as error:
                return self.refuse(
                    ErrorCode.REJECTED_FRAME,
                    f"goal rejected: frame {frame!r} has no transform to world: {error}",
                )
        try:
            if entry_frame != WORLD:
                goal = replace(goal, entry=goal_in_world(goal, transforms[entry_frame]).entry)
            if direction_frame != WORLD:
                goal = replace(goal, direction=goal_in_world(goal, transforms[direction_frame]).direction)
        except GoalRejectedError as error:
            return self.refuse(ErrorCode.REJECTED_FRAME, f"goal rejected: frame transform: {error}")
        self.request = replace(self.request, goal=goal, frames=(WORLD, WORLD))
        return None

    def goal_task(self) -> IncisionTask | DrillResult:
        """The request's task file; without one the shipped incision's settings (standoff,
        approach, dwell, retract rate) with neither its bone nor its no-go zones."""
        name = self.request.task
        if not name:
            return replace(self.config.base_task, no_go_zones=())
        if isinstance(name, IncisionTask):
            return name
        try:
            task = load_task(name)
        except (TaskError, OSError, ValueError) as error:
            return self.refuse(ErrorCode.REJECTED_INVALID, f"goal rejected: task {name!r}: {error}")
        if not isinstance(task, IncisionTask):
            return self.refuse(
                ErrorCode.REJECTED_INVALID, f"goal rejected: task {name!r} is not a drilling task"
            )
        return task

    def plan_goal(self) -> DrillPlan | DrillResult:
        config = self.config
        task = self.goal_task()
        if isinstance(task, DrillResult):
            return task
        measurement = self.port.measured()
        try:
            return plan_drill_hole(
                self.request.goal,
                measurement.position,
                config.params,
                config.dt,
                task,
                start_tolerance=config.goal_tolerance,
                bone_model=bool(self.request.task),
                calibration=None if config.calibration is None else config.calibration.errors,
                feed_mass=config.feed_mass,
            )
        except GoalRejectedError as error:  # InvalidGoalError too: its kind is INVALID
            code = ErrorCode.REJECTED_INVALID if error.kind == INVALID else ErrorCode.REJECTED_LIMIT
            return self.refuse(code, f"goal rejected: {error}")

    def drive(self) -> DrillResult:
        config = self.config
        trajectory = slowed_for_lag(self.plan.trajectory, config.tracking_lag, config.tolerance)
        for part in PARTS:  # the messages built before the start is fixed (MotionPort.prepare)
            self.port.prepare(part, trajectory)
        start = self.port.now() + config.start_delay
        for part in PARTS:
            self.send(part, trajectory, start)
        self.motion, self.motion_start = trajectory, start
        self.policy.handle(Event.GOAL)
        while True:
            if (result := self.accepted_in_time(start)) is not None:
                return result
            if all(m.status() is not MotionStatus.PENDING for m in self.active.values()):
                break
            self.port.sleep(config.monitor_period or config.dt)
        # The checks run every control period whatever the feedback rate (a cancel in bone waited
        # for a 10 s feedback period: the tip went on from 2.0 to 11.8 mm, issue 33 item 4); the
        # feedback is published every feedback_period.
        feedback_due = -np.inf
        while True:
            now = self.port.now()
            publish = now >= feedback_due
            if publish:
                feedback_due = now + config.feedback_period
            phase = self.observe(publish)
            event = self.next_event()
            action = self.policy.handle(event) if event is not None else Action.NONE
            result = self.act(action, event, phase)
            if result is not None:
                return result
            self.port.sleep(config.monitor_period or config.dt)

    # --- the loop's parts ------------------------------------------------------------------------
    def send(self, part: str, trajectory: JointTrajectory, start: float) -> None:
        motion = self.port.send(part, trajectory, start)
        self.sent.append(motion)
        self.active[part] = motion

    def accepted_in_time(self, start: float) -> DrillResult | None:
        """While the plan's acceptance is awaited: a refusal, or no acceptance by the start time
        (a controller that gets a trajectory after its start time jumps to that time's sample),
        aborts before anything moves."""
        statuses = {part: m.status() for part, m in self.active.items()}
        refused = [part for part, s in statuses.items() if s is MotionStatus.REFUSED]
        if refused:
            self.stop_code = StopCode.CONTROLLER
            reason = "; ".join(self.active[p].reason() for p in refused if self.active[p].reason())
            return self.abort_before_motion(
                ErrorCode.REJECTED_NOT_READY,
                f"the {' and '.join(refused)} controller refused the plan"
                + (f": {reason}" if reason else ""),
            )
        pending = [part for part, s in statuses.items() if s is MotionStatus.PENDING]
        if pending and self.port.now() > start:
            self.stop_code = StopCode.CONTROLLER
            return self.abort_before_motion(
                ErrorCode.ABORTED_FAULT,
                f"the {' and '.join(pending)} controller did not accept the plan before its start time",
            )
        stop = self.port.status().drive_stop
        if stop:
            self.stop_code = stop.code
            return self.abort_before_motion(ErrorCode.ABORTED_FAULT, f"drives stopped: {stop.reason}")
        measurement = self.port.measured()
        if measurement is None or measurement.age > self.config.states_lost:
            self.stop_code = StopCode.STATES_LOST
            return self.abort_before_motion(ErrorCode.ABORTED_FAULT, "joint states lost")
        return None

    def observe(self, publish: bool = True) -> str:
        """The measured state (depth, deepest and widest in bone), published as feedback if
        `publish`; the phase of the current motion (plan events too)."""
        t = self.port.now() - self.motion_start
        phase, progress = phase_progress(self.motion, t)
        if self.policy.state in (State.MOVING, State.DRILLING):
            event = self.policy.phase_event(phase)
            if event is not None:
                self.policy.handle(event)
        measurement = self.port.measured()
        task = self.plan.task
        depth = lateral = thrust = float("nan")
        if measurement is not None:
            depth, lateral = tip_progress(self.config.tip(measurement.position), task.entry, task.direction)
            thrust = float(measurement.effort[DrillParameters.feed_index])
            self.depth = depth
            if (phase in BONE_PHASES or self.policy.in_bone) and depth >= 0.0:
                self.deepest = depth if not self.deepest >= depth else self.deepest
                self.widest = lateral if not self.widest >= lateral else self.widest
        self.executor.set_phase(phase)
        if publish:
            self.port.publish_feedback(DrillFeedback(phase, depth, thrust, lateral, float(progress)))
        return phase

    def next_event(self) -> Event | None:
        """This cycle's event, the most severe first."""
        status = self.port.status()
        stop = status.drive_stop
        if stop:
            self.why, self.stop_code = f"drives stopped: {stop.reason}", stop.code
            monitor = stop.code is StopCode.DRILLING_MONITOR
            self.code = ErrorCode.ABORTED_MONITOR if monitor else ErrorCode.ABORTED_FAULT
            return Event.DRIVE_STOP
        measurement = self.port.measured()
        if measurement is None or measurement.age > self.config.states_lost:
            age = float("inf") if measurement is None else measurement.age
            return self.error(f"joint states lost for {age:.2f} s", StopCode.STATES_LOST)
        if status.breakthrough and not self.breakthrough and self.policy.state is State.DRILLING:
            self.breakthrough = status.breakthrough  # this goal's (latched while it drills)
            self.breakthrough_early = status.breakthrough_early
        if self.policy.state in (State.MOVING, State.DRILLING):  # the plan runs (not a way out)
            # After a breakthrough the drives stop the feed and hold it for the retract
            # (safety.feed_stop): behind its plan by design, not a path error.
            exempt = FEED_EXEMPT if self.breakthrough else NONE_EXEMPT
            deviation = self.path.check(
                self.motion, measurement.stamp - self.motion_start, measurement.position, exempt
            )
            if deviation is not None:
                return self.error(deviation, StopCode.PATH_TOLERANCE)
        for part, motion in self.active.items():
            status_ = motion.status()
            if status_ in (MotionStatus.REFUSED, MotionStatus.ABORTED, MotionStatus.CANCELED):
                detail = motion.reason() or status_.value
                return self.error(f"{part} controller stopped the motion: {detail}", StopCode.CONTROLLER)
            if (
                status_ is MotionStatus.PENDING
                and self.port.now() - self.sent_at > self.config.response_timeout
            ):
                return self.error(
                    f"the {part} controller did not answer within {self.config.response_timeout:.0f} s",
                    StopCode.CONTROLLER,
                )
        cancels = self.executor.cancels_requested()
        if cancels > self.cancels_seen:
            self.cancels_seen = cancels
            self.cancel_cause = self.executor.cancel_requested_cause()
            return Event.CANCEL
        if self.client_gone():
            self.cancel_cause = "canceled (the client disappeared)"
            return Event.CANCEL
        # all() over a generator, as a loop (every control period): each status read, in order,
        # until the first that has not succeeded
        for motion in self.active.values():
            if motion.status() is not MotionStatus.SUCCEEDED:
                return None
        return Event.MOTION_DONE

    def client_gone(self) -> bool:
        """True once, when no action client has been left for `client_lost` s (a client that
        died or lost its connection mid-goal: its goal is cancelled as if it had asked)."""
        if self.port.goal_clients() > 0:
            self.clients_gone_at = float("nan")
            return False
        now = self.port.now()
        if not np.isfinite(self.clients_gone_at):
            self.clients_gone_at = now
        if now - self.clients_gone_at >= self.config.client_lost:
            self.clients_gone_at = float("inf")  # once
            return True
        return False

    def error(self, why: str, stop_code: StopCode) -> Event:
        self.why, self.code, self.stop_code = why, ErrorCode.ABORTED_FAULT, stop_code
        return Event.ERROR

    def act(self, action: Action, event: Event | None, phase: str) -> DrillResult | None:
        if action is Action.RETRACT:
            self.canceled = True
            self.retract()
        elif action is Action.WITHDRAW:
            if event is Event.MOTION_DONE:
                self.why = "the motion ended with the bit in a bone phase"
                self.stop_code = StopCode.CONTROLLER
            self.withdraw()
        elif action is Action.STOP:
            return self.stop(phase)
        elif action is Action.SUCCEED and self.breakthrough_early:  # the plan ran out, the bit retracted
            self.stop_code = StopCode.DRILLING_MONITOR
            return self.fail(
                Outcome.ABORTED,
                ErrorCode.ABORTED_MONITOR,
                f"{self.breakthrough}; the feed stopped there and the task retracted the bit "
                f"(deepest {self.deepest * 1000:.3f} mm of {self.plan.task.depth * 1000:.3f} mm)",
            )
        elif action is Action.SUCCEED:
            task = self.plan.task
            ended = (
                f"; the feed ended on the far cortex' breakthrough ({self.breakthrough})"
                if self.breakthrough
                else ""
            )
            return self.finish(
                Outcome.SUCCEEDED,
                ErrorCode.SUCCESS,
                f"drilled {self.deepest * 1000:.3f} mm (goal {task.depth * 1000:.3f} mm), "
                f"lateral deviation {self.widest * 1000:.4f} mm{ended}; {self.path.summary()}",
            )
        elif action is Action.FINISH_OUT:
            where = f"tip {-self.depth * 1000:.2f} mm above the entry"
            if self.canceled and self.why:
                return self.finish(
                    Outcome.CANCELED,
                    ErrorCode.CANCELED_RETRACTED,
                    f"{self.cancel_cause}: the retract failed ({self.why}); the feed withdrew the bit, "
                    f"{where}",
                )
            if self.why:
                return self.fail(Outcome.ABORTED, self.code, f"{self.why}; bit withdrawn, {where}")
            return self.finish(
                Outcome.CANCELED, ErrorCode.CANCELED_RETRACTED, f"{self.cancel_cause}: bit retracted, {where}"
            )
        return None

    def retract(self) -> None:
        """The arm holds; the feed stops from the plan's commanded state and retracts along the axis."""
        config = self.config
        self.active.pop("arm").cancel()
        t = self.port.now() - self.motion_start
        planned_q, planned_v, _ = self.motion.sample(t)
        retract = slowed_for_lag(
            plan_cancel_retract(
                planned_q, self.plan.task, config.params, config.dt, planned_v[DrillParameters.feed_index]
            ),
            config.tracking_lag,
            config.tolerance,
        )
        self.start_motion("feed", retract)

    def withdraw(self) -> None:
        """Every motion cancelled; the feed alone back out from its measured pose, at rest."""
        config = self.config
        for motion in self.active.values():
            motion.cancel()
        self.active = {}
        measurement = self.port.measured()
        q = (
            self.motion.sample(self.port.now() - self.motion_start)[0]
            if measurement is None
            else measurement.position
        )
        out = plan_cancel_retract(q, self.plan.task, config.params, config.dt)
        out = replace(out, phases=tuple(Phase("feed_withdraw", p.start_time, p.end_time) for p in out.phases))
        self.start_motion("feed", slowed_for_lag(out, config.tracking_lag, config.tolerance))

    def start_motion(self, part: str, trajectory: JointTrajectory) -> None:
        now = self.port.now()
        self.send(part, trajectory, now)
        self.motion, self.motion_start, self.sent_at = trajectory, now, now

    def stop(self, phase: str) -> DrillResult:
        self.cancel_all()
        in_bone = self.depth >= IN_BONE_MARGIN or not np.isfinite(self.depth)
        if self.why:
            if in_bone and self.bone_was_entered():
                # The drilling monitor's own stop keeps its code (bit_in_bone says where the bit is).
                monitor = self.code is ErrorCode.ABORTED_MONITOR
                return self.fail(
                    Outcome.CANCELED if self.canceled else Outcome.ABORTED,
                    ErrorCode.ABORTED_MONITOR if monitor else ErrorCode.CANCELED_BIT_IN_BONE,
                    f"{self.why}; the bit is in the bone, {max(self.depth, 0.0) * 1000:.2f} mm past "
                    "the entry",
                    bit_in_bone=True,
                )
            return self.fail(Outcome.ABORTED, self.code, self.why)
        return self.finish(
            Outcome.CANCELED,
            ErrorCode.CANCELED_RETRACTED,
            f"{self.cancel_cause}: stopped at once in phase {phase}",
        )

    def bone_was_entered(self) -> bool:
        return bool(np.isfinite(self.deepest))

    def cancel_all(self) -> None:
        """Every motion sent that may still move (or whose acceptance may still arrive)."""
        for motion in self.sent:
            if motion.status() in (MotionStatus.PENDING, MotionStatus.ACTIVE):
                motion.cancel()

    # --- endings -----------------------------------------------------------------------------------
    def refuse(self, code: ErrorCode, message: str) -> DrillResult:
        return self.finish(Outcome.ABORTED, code, message)

    def abort_before_motion(self, code: ErrorCode, message: str) -> DrillResult:
        """Nothing has moved yet: every motion sent is cancelled (pending ones on arrival), no latch."""
        self.cancel_all()
        return self.finish(Outcome.ABORTED, code, message)

    def fail(
        self, outcome: Outcome, code: ErrorCode, message: str, *, bit_in_bone: bool = False
    ) -> DrillResult:
        """An ending that latches the fault (and bit_in_bone) until reset_fault."""
        # Every path here has named its stop (next_event, error); INTERNAL if one forgot, so that
        # the latch is never a falsy NONE.
        self.executor.latch_fault(Stop(self.stop_code or StopCode.INTERNAL, message), bit_in_bone)
        self.port.state_changed()
        return self.finish(outcome, code, message, bit_in_bone=bit_in_bone)

    def finish(
        self, outcome: Outcome, code: ErrorCode, message: str, *, bit_in_bone: bool = False
    ) -> DrillResult:
        if self.unwatched:  # the hole ran on a drive side that does not watch all of it
            message = f"{message}. Not watched: {self.unwatched}"
        return DrillResult(
            outcome=outcome,
            error_code=code,
            message=message,
            achieved_depth=self.deepest,
            max_lateral_deviation=self.widest,
            bone_model=bool(self.request.task),
            bit_in_bone=bit_in_bone,
            stop_code=self.stop_code,
        )
