"""Knee arthroscopy as a procedure (procedures.procedure): hold the scope through a portal.

The scripted servo stream of config/tasks/arthroscopy.yaml goes through the servo mode that
scope_servo_node runs (procedures.scope_servo.ScopeServoSession over the RCM servo,
planning.remote_centre) at the control rate: entered from the docked pose, each twist stamped
and framed as the node receives them, the same limits, cone, dead-man and joint-state watchdog
(safety.state_age). Its joint commands are the plan the robot's own path tracks (the drive bridge
on the simulated backend, simulation.executor_run.run_trajectory: no bone, the feed held
retracted), so the states the session measures are its own previous commands, stamped when
they were sent: the watchdog runs but finds them fresh by construction (its test against stale
and missing states is the node's over DDS, test/ros/test_launch_scope_servo.py).
metrics.rcm_error is the largest distance of the portal from the scope axis of the plant's true
joints over the whole run (m): the servo keeps it zero at every command, so what it measures is
the robot's tracking (the drives' own loops in CSP on the ideal plant, the host's PID and the
compensation on the realistic one).
Simplification: the plant carries the drill's masses (the arthroscope's 4.5 g rod is not swapped
in), and the hardware component checks no tool fixtures (the servo checks the scope against the
no-go zones before every step).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from quirobot_control.axes.virtual_fixtures import VirtualFixtures
from quirobot_control.planning.arthroscopy import ArthroscopyTask, load_arthroscopy
from quirobot_control.planning.remote_centre import axis_distance
from quirobot_control.planning.trajectory import JointTrajectory, Phase, hold
from quirobot_control.procedures.procedure import SummaryRow, register
from quirobot_control.procedures.scope_servo import ScopeServoSession, check_command_period
from quirobot_control.simulation.executor_run import run_trajectory
from quirobot_control.simulation.incision import TARGETS, TaskResult, common_metrics
from quirobot_control.simulation.metrics import TaskMetrics
from quirobot_control.simulation.plant import SimulationError
from quirobot_description.parameters import JOINT_NAMES, RobotParameters

#: The procedure's targets (m): the issue's portal drift bound.
RCM_TARGET = 0.5e-3


@dataclass(frozen=True)
class ArthroscopyMetrics:
    """An arthroscopy run (module docstring); lengths m."""

    rcm_error: float  # m, largest distance of the portal from the true scope axis, whole run
    rcm_error_commanded: float  # m, the same for the servo's commanded joints
    servo_commands: int  # TwistStamped messages received
    dead_man_holds: int  # control cycles held by the dead-man timeout
    limit_holds: int  # control cycles held by the workspace, a no-go zone or a speed limit
    final_depth: float  # m, the tip past the portal at the end (commanded)


def run_servo(task: ArthroscopyTask, session: ScopeServoSession, dt: float) -> JointTrajectory:
    """The scripted stream through the servo mode at the control period dt (s), entered at the
    docked pose: the joints it commands (phases start, servo, end; the feed held at its park value,
    4 mm: see incision.yaml). SimulationError if the mode refuses to start or leaves on a fault."""
    check_command_period(task, dt)
    feed = 0.004
    t = 0.0
    q = session.docked_joints
    session.measure(q, t, t)
    started, why = session.enter(t)
    if not started:
        raise SimulationError(f"{task.path.name}: the servo mode did not start: {why}")
    positions, velocities = [np.append(q, feed)], [np.zeros(6)]
    next_message = 0.0
    for segment in task.servo:
        end = t + segment.duration
        while t < end - 1e-12:
            if segment.send and t >= next_message - 1e-12:
                session.receive(segment.linear, segment.angular, t, t)
                next_message = t + 1.0 / task.servo_rate
            session.measure(q, t, t)  # the previous command, sent at t (module docstring)
            step = session.step(t, dt)
            if step is None:
                raise SimulationError(f"{task.path.name}: the servo mode left at {t:.3f} s: {session.fault}")
            q = step.q
            positions.append(np.append(step.q, feed))
            velocities.append(np.append(step.qd, 0.0))
            t += dt
        if not segment.send:
            next_message = t
    q = np.array(positions)
    qd = np.array(velocities)
    qdd = np.vstack([np.zeros((1, 6)), np.diff(qd, axis=0) / dt])
    start = hold(q[0], task.settle, dt, "start")
    motion = JointTrajectory(dt, q, qd, qdd, phases=(Phase("servo", 0.0, (len(q) - 1) * dt),))
    return start.then(motion).then(hold(q[-1], task.settle, dt, "end"))


@dataclass(frozen=True)
class ArthroscopyProcedure:
    """Hold the arthroscope through a portal under servo commands (a remote centre of motion)."""

    name: str = "arthroscopy"
    tool: str = "arthroscope"
    phases: tuple[str, ...] = ("start", "servo", "end")
    options: frozenset[str] = frozenset()
    summary_rows: tuple[SummaryRow, ...] = (
        SummaryRow("portal drift (RCM error)", "rcm_error", 1e6, "um"),
        SummaryRow("RCM error of the commands", "rcm_error_commanded", 1e6, "um"),
        SummaryRow("servo commands", "servo_commands", 1.0, ""),
        SummaryRow("dead-man holds (cycles)", "dead_man_holds", 1.0, ""),
    )
    panels: tuple[str, ...] = ()  # the tracking and current panels only
    targets: dict[str, float] = field(
        default_factory=lambda: (
            {"rcm_error": RCM_TARGET} | {key: TARGETS[key] for key in ("controller_p99", "real_time_factor")}
        )
    )

    def load(self, path: Path) -> ArthroscopyTask:
        return load_arthroscopy(path)

    def plan(self, task: ArthroscopyTask, params: RobotParameters, dt: float) -> JointTrajectory:
        return run_servo(task, ScopeServoSession(task, params), dt)

    def fixtures(self, task: ArthroscopyTask, params: RobotParameters) -> VirtualFixtures:
        from quirobot_control.axes.virtual_fixtures import ToolGeometry

        return VirtualFixtures(zones=task.no_go_zones, tool=ToolGeometry.from_parameters(params))

    def simulate(self, task: ArthroscopyTask, params: RobotParameters, **options: Any) -> TaskResult:
        from quirobot_control.hardware.control_config import control_configuration

        control = options.get("control") or control_configuration(params)
        session = ScopeServoSession(task, params)
        trajectory = run_servo(task, session, control.dt)
        servo = session.servo
        if options.get("on_plan") is not None:
            options["on_plan"](trajectory)
        log = run_trajectory(
            trajectory,
            params,
            control,
            plant=options.get("plant") or "ideal",
            compensated=options.get("compensated", True),
            progress=options.get("progress"),
        )
        model = servo.model
        dead_man = servo.holds.get("dead-man", 0)
        metrics = ArthroscopyMetrics(
            rcm_error=float(axis_distance(log.position[:, : len(JOINT_NAMES)], task.portal, model).max()),
            rcm_error_commanded=float(
                axis_distance(trajectory.positions[:, : len(JOINT_NAMES)], task.portal, model).max()
            ),
            servo_commands=servo.commands,
            dead_man_holds=dead_man,
            limit_holds=sum(servo.holds.values()) - dead_man,
            final_depth=servo.depth,
        )
        run = common_metrics(log, trajectory)
        return TaskResult(task, trajectory, log, TaskMetrics(run, procedure=metrics))

    def document(self, result: TaskResult, base: dict[str, Any]) -> dict[str, Any]:
        task = result.task
        return {"arthroscopy": {"portal": task.portal.tolist(), "direction": task.direction.tolist()}, **base}


register(ArthroscopyProcedure())
