"""The hole being drilled, prepared for the drive bridge's cycle (ROS-free).

The DrillHole executor decides a goal's hole once (safety.hole_context.HoleContext: thrust limit,
breakthrough arming from the plan, no-go zones, tip speed near the entry, the imaged bone) and
sends it (msg/DrillingContext over ROS). `hole_setup` turns it into what the bridge runs every
period, all of it built here, off the cycle:

- a hole: the tip's depth measured on the plan's kinematics (calibrated as the plan was: one
  model on both sides), the whole drilling monitor (safety.hole_context.hole_monitor_settings: the goal's
  thrust limit, breakthrough detection armed where the plan said, the spindle interlock) on the
  tip's depth along the hole, the hole's virtual fixtures (no-go zones, tip speed near the
  entry), and with a bone model and `thrust_feedforward` the bone's predicted thrust fed forward
  (hardware.thrust_feedforward);
- no hole (between goals, or nobody sends one): the thrust limit alone on the feed joint's
  position (safety.hole_context.thrust_limit_only), no fixtures.

Nothing here reads a task file or imports the planner: the drive side runs what it is sent.
"""

from __future__ import annotations

from dataclasses import dataclass

from quirobot_control.axes.virtual_fixtures import ToolGeometry, VirtualFixtures
from quirobot_control.hardware.control_config import ControlConfig
from quirobot_control.hardware.thrust_feedforward import ThrustFeedForward, tip_depth_constants
from quirobot_control.safety.drilling_monitor import DrillingMonitor
from quirobot_control.safety.hole_context import HoleContext, hole_monitor_settings, thrust_limit_only
from quirobot_description.parameters import DrillParameters, RobotParameters

__all__ = ["HoleSetup", "HoleStatus", "hole_setup"]


@dataclass(frozen=True)
class HoleStatus:
    """The drive side's view of the hole in force, for /diagnostics (`HoleSetup.status`)."""

    goal_id: str | None  # the goal whose hole it is; None: no hole (the thrust limit only)
    kinematics: str  # "calibrated" (the plan's calibration) or "nominal": the model of tip_depth
    #: m, the drilling monitor's latest depth: the tip past the entry along the hole (FK of the
    #: measured joints) with a hole, else the feed joint's position; None before its first period.
    tip_depth: float | None


@dataclass(frozen=True)
class HoleSetup:
    """What the bridge runs for a hole (or for none): the drilling monitor (None without a drill
    feed), the fixtures (None: none), the thrust feed-forward (None: none) and the hole itself
    (None: no hole; the monitor's depth is then the feed joint's position)."""

    monitor: DrillingMonitor | None
    fixtures: VirtualFixtures | None
    feedforward: ThrustFeedForward | None
    context: HoleContext | None
    tool: ToolGeometry  # the tool on the kinematics the tip's depth is measured with (the plan's)
    #: The compiled tip depth's constants for this hole (hardware.thrust_feedforward.
    #: tip_depth_constants), None: numpy's every period.
    tip_depth: tuple[float, ...] | None = None

    @property
    def kinematics(self) -> str:
        """The model the tip is measured with: "calibrated" (the plan's calibration) or "nominal"."""
        calibrated = self.context is not None and self.context.calibration is not None
        return "calibrated" if calibrated else "nominal"

    def status(self) -> HoleStatus | None:
        """What /diagnostics shows of it; None without a drill feed (nothing is watched)."""
        if self.monitor is None:
            return None
        goal = self.context.goal_id if self.context is not None else None
        return HoleStatus(goal, self.kinematics, self.monitor.depth)

    def describe(self) -> str:
        """What is watched, in one line (drive_node logs it)."""
        if self.context is None:
            return "drilling context: none (thrust limit only, on the feed position)"
        context = self.context
        settings = self.monitor.settings if self.monitor is not None else None
        if settings is None:
            return f"drilling context of goal {context.goal_id}: no drill feed to watch"
        armed = "breakthrough detection off (the plan reaches no far cortex)"
        if settings.arm_depth is not None:
            armed = f"breakthrough armed at {settings.arm_depth * 1e3:.2f} mm"
        if settings.exit_depth is not None:
            armed += f", far cortex exit {settings.exit_depth * 1e3:.2f} mm"
        zones = len(self.fixtures.zones) if self.fixtures is not None else 0
        bone = "bone model" if context.bone_model else "no bone model"
        return (
            f"drilling context of goal {context.goal_id}: thrust limit {settings.thrust_limit:.1f} N, "
            f"{armed} ({bone}), spindle interlock, {zones} no-go zone(s), tip on the {self.kinematics} "
            "kinematics" + (", thrust feed-forward" if self.feedforward is not None else "")
        )


def hole_setup(
    context: HoleContext | None,
    params: RobotParameters,
    control: ControlConfig,
    joints: tuple[str, ...],
    *,
    thrust_feedforward: bool = False,
) -> HoleSetup:
    """What the bridge of `joints` runs for `context` (module docstring); None: no hole."""
    feed = DrillParameters.feed_joint
    has_feed = feed in joints
    feed_mass = control.joint(feed).effective_inertia if has_feed else 0.0
    if context is None:
        monitor = DrillingMonitor(thrust_limit_only(params, feed_mass)) if has_feed else None
        return HoleSetup(monitor, None, None, None, ToolGeometry.from_parameters(params))
    monitor = None
    if has_feed:
        settings = hole_monitor_settings(
            params, feed_mass, context.thrust_limit, context.arm_depth, context.exit_depth
        )
        monitor = DrillingMonitor(settings)
    feedforward = None
    if thrust_feedforward and context.bone is not None:
        feedforward = ThrustFeedForward(
            params, context.entry, context.direction, context.bone, control.dt, context.calibration
        )
    tool = context.tool(params)
    constants = tip_depth_constants(tool.model, context.entry, context.direction)
    return HoleSetup(monitor, context.fixtures(params), feedforward, context, tool, constants)
