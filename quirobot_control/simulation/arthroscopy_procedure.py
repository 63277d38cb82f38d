"""Knee arthroscopy as a procedure (procedures.procedure): hold the scope through a portal.

The scripted servo stream of config/tasks/arthroscopy.yaml goes through the servo mode that
scope_servo_node runs (procedures.scope_servo.ScopeServoSession over the RCM servo,
planning.remote_centre) at the control rate: entered from the docked pose, each twist stamped
and framed as the node receives them, the same limits, cone, dead-man and joint-state watchdog
(safety.state_age). It runs live on the robot's own path (executor_run.run_streamed, `LiveServo`):
every control period the session measures the joint states the drive bridge published (the
encoders, with their stamps, as drive_node publishes them) and its next command goes to the
trajectory controller, the drive bridge and the simulated plant, as scope_servo_node streams it
over DDS; in-process the states are never late (their watchdog's test against stale and missing
states is the node's over DDS, test/ros/test_launch_scope_servo.py), and a measured axis off the
portal would end the mode. metrics.rcm_error is the largest distance of the portal from the scope
axis of the plant's true joints over the whole run (m): the servo keeps it zero at every command,
so what it measures is the robot's tracking (the drives' own loops in CSP on the ideal plant, the
host's PID and the compensation on the realistic one). `run_servo`, the same stream against its
own commands, is the plan's preview (`plan`, the CLI's on_plan).
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
from quirobot_control.planning.arthroscopy import ArthroscopyTask, ServoSegment, load_arthroscopy
from quirobot_control.planning.remote_centre import axis_distance
from quirobot_control.planning.trajectory import JointTrajectory
from quirobot_control.procedures.procedure import SummaryRow, register
from quirobot_control.procedures.scope_servo import ScopeServoSession, check_command_period
from quirobot_control.simulation.bridge_port import BridgePort
from quirobot_control.simulation.executor_run import StreamedCommand, run_streamed, streamed_trajectory
from quirobot_control.simulation.incision import TARGETS, TaskResult, common_metrics
from quirobot_control.simulation.metrics import TaskMetrics
from quirobot_control.simulation.plant import SimulationError
from quirobot_description.parameters import JOINT_NAMES, RobotParameters

#: The procedure's targets (m): the issue's portal drift bound.
RCM_TARGET = 0.5e-3
#: m: the drill feed held at its park value while the scope servos (see incision.yaml).
FEED_PARK = 0.004


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
    docked pose, against its own commands (each period measures the previous command, stamped when
    it was sent): the joints it commands (phases start, servo, end; the feed held at its park
    value), the plan's preview. SimulationError if the mode refuses to start or leaves on a fault."""
    stream = LiveServo(task, session, dt)
    initial = np.append(session.docked_joints, FEED_PARK)
    q, t, commands = initial, 0.0, []
    while (command := stream.command(t, q[: len(JOINT_NAMES)], t)) is not None:
        commands.append(command)
        q, t = command[0], t + dt
    return streamed_trajectory(initial, commands, dt)


class LiveServo:
    """The scripted stream through the servo mode live on the robot's path (executor_run.
    run_streamed's `next_command`): each control period the session measures the joint states the
    bridge published (drive_node's, with their stamp) and commands the next point, as
    scope_servo_node does over DDS: a settle at the docked pose, the servo segments, a settle at
    the end, the feed held at its park value. `run_servo` runs the same against its own commands."""

    def __init__(self, task: ArthroscopyTask, session: ScopeServoSession, dt: float) -> None:
        check_command_period(task, dt)
        self.task, self.session, self.dt = task, session, dt
        settle = [("start", None)] * int(round(task.settle / dt))
        servo = []
        for segment in task.servo:
            servo += [("servo", segment)] * int(np.ceil(segment.duration / dt - 1e-9))
        self.schedule = [*settle, *servo, *[("end", None)] * int(round(task.settle / dt))]
        self.period = 0
        self.q = session.docked_joints
        self.qd = np.zeros(len(JOINT_NAMES))
        self.next_message = 0.0
        self.previous: ServoSegment | None = None

    def __call__(self, port: BridgePort) -> StreamedCommand | None:
        """This period's command from the joint states the bridge published."""
        measured = port.measured()
        return self.command(port.time, measured.position[: len(JOINT_NAMES)], measured.stamp)

    def command(self, now: float, q: np.ndarray, stamp: float) -> StreamedCommand | None:
        """This period's command (its joints and velocities (6,), its phase) at `now` (s), the arm
        measured at q (5,) stamped `stamp` (s); None once the schedule is done."""
        if self.period >= len(self.schedule):
            return None
        phase, segment = self.schedule[self.period]
        self.period += 1
        session = self.session
        session.measure(q, stamp, now)
        if phase == "servo":
            if self.previous is None:
                started, why = session.enter(now)
                if not started:
                    raise SimulationError(f"{self.task.path.name}: the servo mode did not start: {why}")
            if segment is not self.previous and self.previous is not None and not self.previous.send:
                self.next_message = now  # the stream resumes where the silence ended
            self.previous = segment
            if segment.send and now >= self.next_message - 1e-12:
                session.receive(segment.linear, segment.angular, now, now)
                self.next_message = now + 1.0 / self.task.servo_rate
            step = session.step(now, self.dt)
            if step is None:
                raise SimulationError(
                    f"{self.task.path.name}: the servo mode left at {now:.3f} s: {session.fault}"
                )
            self.q, self.qd = step.q, step.qd
        else:
            self.qd = np.zeros(len(JOINT_NAMES))
        return np.append(self.q, FEED_PARK), np.append(self.qd, 0.0), phase


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
        if options.get("on_plan") is not None:  # the preview: the stream against its own commands
            options["on_plan"](run_servo(task, ScopeServoSession(task, params), control.dt))
        session = ScopeServoSession(task, params)
        trajectory, log = run_streamed(
            np.append(session.docked_joints, FEED_PARK),
            LiveServo(task, session, control.dt),
            params,
            control,
            plant=options.get("plant") or "ideal",
            compensated=options.get("compensated", True),
            progress=options.get("progress"),
        )
        servo = session.servo
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
