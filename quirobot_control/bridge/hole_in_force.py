"""The hole in force on the drive bridge: the drilling monitor, the feed after a breakthrough,
the thrust feed-forward, and the hand-over of a new hole at a period boundary.

Process safety: with a drill feed among the joints, each active period after write runs
safety.drilling_monitor on the feed drive's measured effort (`thrust_monitor`; the commanded
acceleration is the safety layer's filtered feed command's). What it watches is the hole the
DrillHole executor decided (`set_drilling_context(goal_id, context)`, a safety.hole_context.
HoleContext: drive_node passes task_node's /quirobot/drilling_context): without one the thrust
limit alone, on the feed position; with one the whole monitor exactly as sent (the goal's thrust
limit, breakthrough detection armed where the plan said, the spindle interlock: the backend's
`spindle` model if it has one, else taken as at speed, no spindle drive on the bus), on the tip's
depth along the hole (FK of the measured joints), and the hole's virtual fixtures every cycle
(QuirobotHardware.set_fixtures). A fault (thrust limit, spindle) stops every drive (the hardware's
category 1 stop) with the monitor's reason; a breakthrough (the drilling's success) stops the
feed as every path does (safety.feed_stop: decelerated at the feed's acceleration limit, then
held until the controller's command comes back above it, never deeper), and
`status().breakthrough` says so. The hole is prepared by the caller's thread
(bridge.drilling_context.hole_setup: monitor, fixtures, thrust feed-forward) and swapped in by
`step` at the next period boundary, in one step (realtime_tools' RealtimeBuffer pattern): the
cycle never parses, imports or builds it. A hole belongs to one goal:
a new one is refused while another goal's is active, and only its own goal ends it (a stray
message cannot drop the monitor mid-feed), or acknowledging a stop (no goal goes on after one);
disabling, enabling and homing the drives are refused while a hole is active, naming its goal
(cancel the goal: it retracts the bit; issue 33 item 2); acknowledging a stop ends the hole and
says so (the drives are already stopped: nothing moves, and no goal goes on after a stop).
"""

from __future__ import annotations

import numpy as np

from quirobot_control.axes.virtual_fixtures import tool_points_one
from quirobot_control.bridge.bridge_error import BridgeError
from quirobot_control.bridge.drilling_context import HoleSetup, hole_setup
from quirobot_control.hardware.lifecycle import LifecycleState
from quirobot_control.hardware.thrust_feedforward import compiled_tip_depth
from quirobot_control.safety.drilling_monitor import DrillingEvent
from quirobot_control.safety.feed_stop import BreakthroughHold, FeedStop
from quirobot_control.safety.hole_context import HoleContext
from quirobot_control.safety.stop_codes import StopCode
from quirobot_description.parameters import DrillParameters


class HoleInForce:
    """The drilling part of `DriveBridge` (bridge.drive_bridge), whose hardware, hole, lock and
    clock these methods use."""

    def _setup(self, context: HoleContext | None) -> HoleSetup:
        return hole_setup(
            context, self.params, self.control, self.names, thrust_feedforward=self.thrust_feedforward
        )

    @property
    def thrust_monitor(self):
        """The feed's drilling monitor in force (safety.drilling_monitor.DrillingMonitor), None
        without a drill feed."""
        return self.hole.monitor

    def set_drilling_context(self, goal_id: str, context: HoleContext | None) -> str:
        """Drill goal `goal_id`'s hole `context` from the next period on (None: that goal's hole
        ends): prepared here, swapped in by `step` at the period boundary (module docstring). What
        will be watched, as text. BridgeError, with nothing changed, for a hole while another
        goal's is active or waiting, a context whose goal_id is not `goal_id`, a calibrated hole
        on drives that are not its calibration's machine (_check_machine), or an end that is not
        the active goal's (an end with no hole active changes nothing). A hole refused is kept in
        `hole_refused` for its goal to see (DrivesStatus)."""
        try:
            return self._set_drilling_context(goal_id, context)
        except BridgeError as error:
            if context is not None:
                self.hole_refused = (goal_id, str(error))
            raise

    def _check_machine(self, goal_id: str, context: HoleContext) -> None:
        """A calibrated hole only on its calibration's machine: an in-band calibration of another
        machine is invisible to everything the robot measures (quirobot_description.
        machine_identity), so the drives' serial numbers are what tells."""
        if context.calibration is None:
            return
        drives = getattr(self.backend, "machine", None)
        why = (
            "the drives' serial numbers are unknown"
            if drives is None
            else context.calibration_machine.differs_from(drives)
        )
        if why is not None:
            raise BridgeError(
                f"drilling context of goal {goal_id!r} refused: its calibration is of another machine: {why} "
                "(calibrate this machine: quirobot calibrate)"
            )

    def _set_drilling_context(self, goal_id: str, context: HoleContext | None) -> str:
        with self._hole_lock:
            current = (self._pending_hole or self.hole).context
            if context is not None:
                if context.goal_id != goal_id:
                    raise BridgeError(
                        f"drilling context names goal {context.goal_id!r}, sent for {goal_id!r}"
                    )
                self._check_machine(goal_id, context)
                pin = self._next_pin
                if pin is not None:
                    raise BridgeError(
                        f"drilling context of goal {goal_id!r} refused: goal {pin.goal_id!r}'s pin "
                        "insertion is active"
                    )
                if current is not None:
                    raise BridgeError(
                        f"drilling context of goal {goal_id!r} refused: goal {current.goal_id!r}'s hole is "
                        "active (a hole belongs to one goal and cannot change while it runs)"
                    )
            elif current is None:
                return f"drilling context: goal {goal_id!r} ended, no hole was active"
            elif current.goal_id != goal_id:
                raise BridgeError(
                    f"end of goal {goal_id!r}'s drilling context refused: the active hole is goal "
                    f"{current.goal_id!r}'s"
                )
            setup = self._setup(context)
            self._pending_hole = setup
        text = setup.describe()
        self.events.append(text)
        return text

    def _end_hole(self) -> str | None:
        """No goal goes on (a stop acknowledged): no hole from now on; the goal whose hole ended
        (None: none was active)."""
        with self._hole_lock:
            context = (self._pending_hole or self.hole).context
            if context is None:
                return None
            self._pending_hole = self._setup(None)
        self.events.append(
            f"drilling context: goal {context.goal_id!r}'s ended with the drives (no goal runs)"
        )
        return context.goal_id

    def _swap_in_hole(self) -> None:
        """The waiting hole in force from this period on, in one step (never blocking the cycle:
        a caller holding the lock defers it by one period)."""
        if self._pending_hole is None or not self._hole_lock.acquire(blocking=False):
            return
        try:
            setup, self._pending_hole = self._pending_hole, None
        finally:
            self._hole_lock.release()
        self.hole = setup
        self._breakthrough = None
        self.hardware.set_fixtures(setup.fixtures)
        self.hardware.set_load_feedforward(None)
        spindle = getattr(self.backend, "spindle", None)
        if spindle is not None:
            if setup.context is not None and not spindle.stalled:
                spindle.switch_on()
            elif setup.context is None:
                spindle.switch_off()

    #: (the hardware's joint list, its feed joint, whether its positions are the model's q as
    #: they are) of the last period (`_feed_joint`), None: none yet.
    _feed_found: tuple | None = None

    def _feed_joint(self) -> tuple:
        """`_feed_found` for the hardware's joints now: looked up once per joint list (the hardware
        builds a new one at each configure), not every period."""
        hw, found = self.hardware, self._feed_found
        if found is None or found[0] is not hw.joints:
            feed = next(j for j in hw.joints if j.name == DrillParameters.feed_joint)
            size = len(self._model_axes)
            in_order = len(hw.joints) == size and self._axes_columns == list(range(size))
            found = self._feed_found = (hw.joints, feed, in_order)
        return found

    def _feed_depth(self) -> float:
        """The monitor's depth (m): the tip past the entry along the hole (FK of the measured
        joints) with a context, else the feed joint's position."""
        hw, hole = self.hardware, self.hole
        context = hole.context
        if context is None:
            return hw.state(DrillParameters.feed_joint, "position")
        # The hardware's joints are the bridge's, in its order (both info.joints), as in sample().
        positions = hw.states("position")
        if self._feed_joint()[2]:
            q = positions
        else:
            q = [0.0] * len(self._model_axes)  # a joint this bridge does not drive: 0
            for column, position in zip(self._axes_columns, positions, strict=True):
                q[column] = position
        if hole.tip_depth is not None:  # the same numbers compiled (thrust_feedforward)
            depth = compiled_tip_depth(hole.tip_depth, q)
            if depth is not None:
                return depth
        # The tip by the scalar FK of the fixtures' per-cycle check (the same numbers as
        # tip_positions, whose numpy batch FK on one pose cost ~50 us of every period).
        tip = tool_points_one(q, hole.tool)[0][2]
        return float((np.array(tip) - context.entry) @ context.direction)

    def _run_thrust_monitor(self, velocity_before: float | None) -> None:
        """The drilling monitor this period; a fault stops every drive, a breakthrough holds the
        feed (module docstring)."""
        monitor, hw = self.thrust_monitor, self.hardware
        if monitor is None or velocity_before is None or hw.lifecycle is not LifecycleState.ACTIVE:
            return
        feed = self._feed_joint()[1]
        commanded = feed.last_velocity_command  # the safety layer's filtered command, m/s
        spindle = getattr(self.backend, "spindle", None)
        event = monitor.update(
            self.time,
            self.dt,
            depth=self._feed_depth(),
            effort=feed.state["effort"],
            velocity=feed.state["velocity"],
            commanded_velocity=commanded,
            commanded_acceleration=(commanded - velocity_before) / self.dt,
            spindle_at_speed=spindle.at_speed if spindle is not None else True,
            spindle_stalled=spindle.stalled if spindle is not None else False,
            spindle_reason=spindle.stall_reason if spindle is not None else None,
        )
        if event is None:
            return
        if event.is_fault:
            hw.stop(event.message, StopCode.DRILLING_MONITOR)
        elif self._breakthrough is None:  # a breakthrough, early or not: the feed stop (safety.feed_stop)
            stop = FeedStop(
                self.time,
                feed.command["position"],
                feed.command["velocity"],
                self.params.drill.feed.acceleration,
            )
            self._breakthrough = BreakthroughHold(stop)
            self.events.append(
                f"{event.message}: the feed stops at {stop.rest_position * 1e3:.3f} mm, held for the retract"
            )

    def _hold_feed_after_breakthrough(self) -> None:
        """After a breakthrough the feed follows safety.feed_stop: stopped, then held until the
        controller's command comes back above the held position (the retract passing it)."""
        hold = self._breakthrough
        if hold is None:
            return
        feed = DrillParameters.feed_joint
        joint = next(j for j in self.hardware.joints if j.name == feed)
        position, velocity, _, held = hold.command(
            self.time, joint.command["position"], joint.command["velocity"]
        )
        if held:
            self.hardware.set_command(feed, "position", position)
            self.hardware.set_command(feed, "velocity", velocity)

    def _feed_thrust_forward(self) -> None:
        """The bone's predicted thrust at this period's commanded tip, fed forward (thrust_feedforward)."""
        feedforward = self.hole.feedforward
        if feedforward is None:
            return
        hw = self.hardware
        commanded = np.zeros(len(self._model_axes))  # a joint this bridge does not drive: 0
        commanded[self._axes_columns] = [joint.command["position"] for joint in hw.joints]
        hw.set_load_feedforward(feedforward.update(commanded)[self._axes_columns])

    @property
    def _breakthrough_event(self) -> DrillingEvent | None:
        """The monitor's event of the hole in force if it ended the feed (a breakthrough, early or
        not), None otherwise."""
        monitor = self.thrust_monitor
        event = monitor.event if monitor is not None else None
        return event if event is not None and not event.is_fault else None

    @property
    def breakthrough(self) -> str | None:
        """The far-cortex breakthrough of the hole in force, early or not (the monitor's message),
        None: none."""
        event = self._breakthrough_event
        return event.message if event is not None else None

    @property
    def breakthrough_early(self) -> bool:
        """That breakthrough came short of the imaged far cortex' exit (no success)."""
        event = self._breakthrough_event
        return event is not None and not event.success
