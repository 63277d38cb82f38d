"""The DrillHole executor watches every control period whatever the feedback rate (issue 33
item 4: at a 0.1 Hz feedback rate a cancel in bone was acted on 6.5 s late, the tip going on from
2.0 to 11.8 mm), a cancel with a cause (task_node's deactivation, issue 33 item 3) ends the goal
canceled, retracted, saying why, and the feedback rate has bounds. On the in-process plant
(drill_hole_plant); the tip is measured with the forward kinematics of the plant's motion."""

from __future__ import annotations

import math

import numpy as np
import pytest
from drill_hole_plant import PlantPort

from quirobot_control.planning.drill_hole import DrillGoal, tip_progress
from quirobot_control.planning.tasks import Kinematics, load_task
from quirobot_control.procedures.drill_hole_executor import (
    DrillHoleExecutor,
    DrillRequest,
    ErrorCode,
    ExecutorConfig,
    Outcome,
)
from quirobot_control.procedures.scope_servo_parameters import SCOPE_SERVO_NODE
from quirobot_control.procedures.task_node_parameters import TASK_NODE, executor_timing
from quirobot_description import robot_parameters
from quirobot_description.node_parameters import NodeParameterError
from quirobot_kinematics import KinematicModel

CANCEL_DEPTH = 2.0e-3  # m past the entry: the cancel in bone


@pytest.fixture(scope="module")
def task():
    return load_task("incision")


@pytest.fixture(scope="module")
def tip():
    return Kinematics(KinematicModel.from_parameters(robot_parameters())).tip


def executor_config(**changes) -> ExecutorConfig:
    # dt 2 ms, the plant's step: coarser than the control period, the monitoring period here.
    shipped = ExecutorConfig.shipped(robot_parameters(), start_delay=1.0, tracking_lag=0.0)
    return ExecutorConfig(**{**shipped.__dict__, "dt": 0.002, "ready_timeout": 20.0, **changes})


def cancel_in_bone(task, tip, config: ExecutorConfig, cause: str | None = None):
    """Run the shipped incision and cancel (with `cause` if given) once the plant's tip is
    CANCEL_DEPTH past the entry, from inside the plant's own step (never through the feedback).
    (result, port, cancel time s, tip depth at the cancel m)."""
    port = PlantPort(task.park)
    executor = DrillHoleExecutor(port, config)
    port.executor = executor
    step = port._advance
    cancel: list[tuple[float, float]] = []

    def advance(seconds: float) -> None:
        step(seconds)
        depth = tip_progress(tip(port.position), task.entry, task.direction)[0]
        if not cancel and depth >= CANCEL_DEPTH:
            cancel.append((port.time, depth))
            executor.request_cancel() if cause is None else executor.request_cancel(cause)

    port._advance = advance
    goal = DrillGoal(task.entry, task.direction, task.depth, task.feed_rate, 60.0)
    result = executor.run(DrillRequest(goal=goal, task="incision"))
    assert cancel, "the tip never reached the cancel depth"
    return result, port, *cancel[0]


def test_a_cancel_in_bone_is_acted_on_within_a_control_period_whatever_the_feedback_rate(task, tip):
    """Feedback at 0.1 Hz (the issue's): the retract is sent within one monitoring period of the
    cancel and the tip goes no deeper than the feed's stop from its rate (v^2 / 2a at the feed's
    acceleration limit, 11 um) and one period's feed; the old loop slept a feedback period
    between checks (the tip went on for up to 10 s at 1.5 mm/s)."""
    config = executor_config(feedback_period=10.0)
    result, port, cancelled_at, depth_at_cancel = cancel_in_bone(task, tip, config)
    assert result.outcome is Outcome.CANCELED and result.error_code is ErrorCode.CANCELED_RETRACTED, (
        result.message
    )
    retracts = [start for part, _, start in port.sent if part == "feed" and start > cancelled_at - 1e-9]
    assert retracts, "no retract was sent"
    assert retracts[0] - cancelled_at <= config.dt + 1e-9  # acted on within one monitoring period
    after = [tip_progress(tip(q), task.entry, task.direction)[0] for t, q in port.trace if t >= cancelled_at]
    drill = robot_parameters().drill
    stopping = task.feed_rate**2 / (2.0 * drill.feed.acceleration) + task.feed_rate * 2 * config.dt
    assert max(after) - depth_at_cancel <= stopping + 1e-6, (
        f"the tip went on {(max(after) - depth_at_cancel) * 1e3:.3f} mm after the cancel"
    )
    assert after[-1] < 0.0  # retracted out of the bone
    # The feedback still comes at its own period (the goal lasted about 30 s: a handful).
    assert 1 <= len(port.feedback) <= math.ceil(port.time / config.feedback_period) + 1


def test_a_cancel_with_a_cause_in_bone_retracts_and_says_why(task, tip):
    """task_node's deactivation cancels a running goal as a client does (issue 33 item 3): in
    bone the feed retracts, the goal ends canceled (never success) and its message says why."""
    cause = "canceled (task_node deactivated)"
    result, port, _, _ = cancel_in_bone(task, tip, executor_config(), cause)
    assert result.outcome is Outcome.CANCELED and result.error_code is ErrorCode.CANCELED_RETRACTED
    assert not result.success and not result.bit_in_bone
    assert result.message.startswith(f"{cause}: bit retracted"), result.message
    depth, _ = tip_progress(tip(port.position), task.entry, task.direction)
    assert depth < 0.0
    assert port.contexts[-1] is None  # the goal's hole ended on the drive side


@pytest.mark.parametrize(
    ("schema", "name", "rate", "bounds"),
    [
        (TASK_NODE, "feedback_rate", 0.1, "1 to 1000 Hz"),  # the issue's, accepted before
        (TASK_NODE, "feedback_rate", 0.0, "1 to 1000 Hz"),
        (TASK_NODE, "feedback_rate", 2000.0, "1 to 1000 Hz"),
        (TASK_NODE, "feedback_rate", float("nan"), "1 to 1000 Hz"),
        (SCOPE_SERVO_NODE, "rate", 1.0, "10 to 1000 Hz"),  # issue 33 item 10's, accepted before
    ],
)
def test_a_rate_outside_its_bounds_is_refused(schema, name, rate, bounds):
    """The rate parameters are bounded, the reasons stated where they are declared; a value
    outside is refused naming the parameter, the value and the bounds."""
    with pytest.raises(NodeParameterError, match=rf"{name} = .* Hz is outside {bounds}"):
        schema[name].check(rate)


def test_the_feedback_rate_sets_the_feedback_period_only():
    timing = executor_timing({**TASK_NODE.defaults(), "feedback_rate": 1.0})
    assert timing["feedback_period"] == 1.0 and "dt" not in timing
    assert np.isclose(1.0 / TASK_NODE["feedback_rate"].default, ExecutorConfig.feedback_period)
