"""Plan-time check of the far-cortex breakthrough detector: will it see the breakthrough this plan
relies on? If not, the plan is refused, saying why (issue 19 item 6).

Before, the detector was silently off or blind for a bone ending in soft bone, a far cortex under
the cortical factor (models.bone.CORTICAL_FACTOR), a far cortex too thin or a feed too slow for
its minimum thrust, a second cortex behind a gap (the fibula: it armed on the last cortex only),
and a feed decelerating before the breakthrough (the detector runs at a constant feed rate only).

The check, `plan_breakthrough(bone, plan, settings, ...)`:
- the target is the far cortex the plan drills into: the last run of consecutive cortical layers
  (thrust factor >= CORTICAL_FACTOR) that starts before the planned depth, the first run (the near
  cortex, where the bit enters) excepted unless it is the bone's only one and ends it;
- no target and the plan drills out of the bone's end: refused (nothing would see the exit);
- another cortex' exit after the detector arms (tools.drill.breakthrough_arm_margin before the
  target): refused, its exit would be taken for the breakthrough;
- the detector itself (safety.drilling_monitor, the same code the host runs) is run along the plan
  on the bone model's quasi-static thrust (models.bone.BoneThrust, as imaged). It must not fire
  early on the imaged bone; its held peak must reach tools.drill.breakthrough_min_thrust (else a
  bone thinner than imaged goes unseen); and where the plan goes more than `overshoot_limit`
  past the exit (the plan relies on the detector to stop it), it must fire before the plan ends.
The returned settings arm the host's monitor on the target (start, exit).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from quirobot_control.models.bone import CORTICAL_FACTOR, BoneParameters, BoneThrust
from quirobot_control.safety.drilling_monitor import DrillingMonitor, DrillingMonitorSettings, DrillingStop


class BreakthroughPlanError(ValueError):
    """The plan relies on a breakthrough the detector would not see (the reason in the message)."""


@dataclass(frozen=True)
class Cortex:
    """A run of consecutive cortical layers: start and exit depths below the entry (m)."""

    names: tuple[str, ...]
    start: float
    exit: float

    @property
    def name(self) -> str:
        return "+".join(self.names)


@dataclass(frozen=True)
class FeedPlan:
    """The planned feed, sample by sample (each (N,)): the tip's depth below the entry along the
    axis (m), the feed's commanded velocity (m/s) and acceleration (m/s^2); dt the period (s)."""

    depth: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray
    dt: float


def cortices(bone: BoneParameters) -> list[Cortex]:
    """The bone's cortices in drilling order (runs of layers with thrust factor >= CORTICAL_FACTOR)."""
    runs: list[Cortex] = []
    start, previous_cortical = 0.0, False
    for layer in bone.layers:
        end = start + layer.thickness
        cortical = layer.thrust_factor >= CORTICAL_FACTOR
        if cortical and previous_cortical:
            last = runs[-1]
            runs[-1] = Cortex(last.names + (layer.name,), last.start, end)
        elif cortical:
            runs.append(Cortex((layer.name,), start, end))
        start, previous_cortical = end, cortical
    return runs


def target_cortex(bone: BoneParameters, depth: float) -> Cortex | None:
    """The far cortex a plan to `depth` (m) drills into (module docstring), None if none."""
    runs = cortices(bone)
    candidates = runs[1:] if len(runs) > 1 else [c for c in runs if c.exit >= bone.thickness - 1e-12]
    reached = [c for c in candidates if c.start < depth]
    return reached[-1] if reached else None


def plan_breakthrough(
    bone: BoneParameters,
    plan: FeedPlan,
    settings: DrillingMonitorSettings,
    arm_margin: float,
    overshoot_limit: float,
) -> DrillingMonitorSettings:
    """`settings` armed on the plan's far cortex (disarmed if the plan reaches none), or
    BreakthroughPlanError naming why the detector would not see the breakthrough. arm_margin (m):
    tools.drill.breakthrough_arm_margin; overshoot_limit (m): how far past the exit the tip may go."""
    deepest = float(np.max(plan.depth))
    target = target_cortex(bone, deepest)
    if target is None:
        if deepest > bone.thickness:
            last = bone.layers[-1]
            raise BreakthroughPlanError(
                f"the plan drills {(deepest - bone.thickness) * 1e3:.2f} mm past the bone's end "
                f"({bone.thickness * 1e3:.2f} mm) but no far cortex ends it (last layer {last.name}: "
                f"thrust factor {last.thrust_factor:.2f}, a cortex from {CORTICAL_FACTOR}): the "
                "breakthrough could not be detected"
            )
        return replace(settings, arm_depth=None, exit_depth=None)
    arm_depth = max(target.start - arm_margin, 0.0)
    for other in cortices(bone):
        if other != target and arm_depth < other.exit <= target.start:
            raise BreakthroughPlanError(
                f"cortex {other.name} ends at {other.exit * 1e3:.2f} mm, within the breakthrough "
                f"detector's {arm_margin * 1e3:.1f} mm arming margin before the far cortex "
                f"{target.name} at {target.start * 1e3:.2f} mm: its exit would be taken for the breakthrough"
            )
    armed = replace(settings, arm_depth=arm_depth, exit_depth=target.exit)
    event, monitor = _predict(bone, plan, armed)
    if event is not None and event.is_fault:  # the prediction stops (a thrust limit): that stop holds
        return armed
    if event is not None and event.kind is DrillingStop.EARLY_BREAKTHROUGH:
        raise BreakthroughPlanError(f"on the bone as imaged the detector would fire early: {event.message}")
    if event is None and monitor.peak < settings.breakthrough_min_thrust and deepest > target.start:
        rate = float(np.max(plan.velocity))
        raise BreakthroughPlanError(
            f"the far cortex {target.name} ({(target.exit - target.start) * 1e3:.2f} mm) gives the "
            f"breakthrough detector a peak of {max(monitor.peak, 0.0):.1f} N at {rate * 1e3:.2f} mm/s, "
            f"under its minimum {settings.breakthrough_min_thrust:.1f} N "
            "(tools.drill.breakthrough_min_thrust): its breakthrough could not be detected"
        )
    if event is None and deepest > target.exit + overshoot_limit + 1e-12:  # at the limit: allowed
        cruise = np.abs(plan.acceleration) < 1e-6
        moving = plan.velocity > 0.0
        slowing = np.nonzero(moving & ~cruise & (plan.depth > target.start))[0]
        where = (
            f"the feed slows down from {plan.depth[slowing[0]] * 1e3:.2f} mm, before"
            if slowing.size
            else "the plan ends before"
        )
        raise BreakthroughPlanError(
            f"{where} the breakthrough of {target.name} (exit {target.exit * 1e3:.2f} mm) would be "
            f"detected (only at a constant feed rate): the tip would go "
            f"{(deepest - target.exit) * 1e3:.2f} mm past it unseen (limit {overshoot_limit * 1e3:.1f} mm)"
        )
    return armed


def _predict(
    bone: BoneParameters, plan: FeedPlan, settings: DrillingMonitorSettings
) -> tuple[object, DrillingMonitor]:
    """Run the detector along the plan on the bone model's thrust: (the first event, the monitor)."""
    monitor = DrillingMonitor(settings)
    thrust = BoneThrust(bone)
    for k, (depth, velocity, acceleration) in enumerate(
        zip(plan.depth.tolist(), plan.velocity.tolist(), plan.acceleration.tolist(), strict=True)
    ):
        force = thrust.update(plan.dt, depth, velocity)
        effort = force + settings.feed_mass * acceleration + settings.feed_damping * velocity
        event = monitor.update(
            k * plan.dt,
            plan.dt,
            depth=depth,
            effort=effort,
            velocity=velocity,
            commanded_velocity=velocity,
            commanded_acceleration=acceleration,
            spindle_at_speed=True,
            spindle_stalled=False,
        )
        if event is not None:
            return event, monitor
    return None, monitor
