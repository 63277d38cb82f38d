"""The pin insertion in force on the drive bridge: the feed geared to the pin driver, the driver's
approach and its torque monitor, every period.

A pin goal hands the bridge its insertion (`set_pin_insertion(goal_id, insertion)`, a
safety.pin_torque.PinInsertion: torque limit, target depth, driver speed, thread pitch, approach
rate). It is checked in the caller's thread and swapped in by `step` at the next period boundary,
in one step, as a hole is (bridge.hole_in_force). From then on, each active period:
- the pin driver (the backend's `spindle`) runs at the insertion's speed, its command falling in
  proportion to the depth left within one pitch of the target (`PinInsertion.driver_command`), and
  it is switched off at the depth (`pin_reached`);
- the feed follows the thread, overriding the feed controller's command (as the breakthrough hold
  does): feed = its position at the start + pitch x the driver's revolutions since (the driver's
  speed integrated each period: its encoder on a robot), with pitch x the driver's speed as its
  velocity. In the drive cycle, not in a controller: a thread strips if the feed lags the pin by
  a fraction of a pitch, and the cycle is the one loop that sees both every period. After the
  depth the feed goes on following the driver's run-down: every revolution is in the depth;
- after write, safety.pin_torque.PinTorqueMonitor checks the driver's torque (the monitor
  `quirobot simulate --task pin` runs too); above the limit, not a number, or the driver stalled:
  the driver stops and every drive with it (the hardware's category 1 stop,
  StopCode.DRILLING_MONITOR, the monitor's reason);
- a stop from anything else stops the driver too: a pin turning against a stopped feed would
  strip its thread.
The goal ends the insertion (None) once the pin is at rest, after taking the feed over with its
controller at the pin's final position (else the feed controller's last command, the start,
would pull the pin back). An insertion belongs to one goal: refused while another goal's
insertion or a hole is active, and ended by its own goal only or by acknowledging a stop. Refused
as well: a backend with no pin driver whose torque it could read (the CANopen drives: no spindle
drive on the bus yet), and a bridge without a drill feed (the arthroscope). The depth in the
monitor's message is the feed's measured travel since the insertion began (m).
"""

from __future__ import annotations

from quirobot_control.bridge.bridge_error import BridgeError
from quirobot_control.hardware.lifecycle import LifecycleState
from quirobot_control.safety.pin_torque import PinInsertion
from quirobot_control.safety.stop_codes import StopCode
from quirobot_description.parameters import DrillParameters


class PinInForce:
    """The pin part of `DriveBridge` (bridge.drive_bridge), whose hardware, backend, hole lock and
    events these methods use."""

    #: The insertion in force (None: none) and the feed's position (m) when it began.
    pin: PinInsertion | None = None
    _pin_start: float = 0.0
    #: rad the driver has turned since the insertion began (its speed integrated each period).
    pin_angle: float = 0.0
    #: The insertion reached its depth: the driver is off, the feed follows its run-down.
    pin_reached: bool = False
    #: The torque monitor stopped the insertion (set where it decides, never read from its words).
    pin_stopped_on_torque: bool = False
    #: The insertion waiting for the next period boundary: (insertion or None for its end,), or
    #: None: nothing waiting.
    _pending_pin: tuple[PinInsertion | None] | None = None

    @property
    def _next_pin(self) -> PinInsertion | None:
        """The insertion in force from the next period: the one waiting if any, else the one in
        force (the caller holds _hole_lock, as for `(self._pending_hole or self.hole)`)."""
        return self._pending_pin[0] if self._pending_pin is not None else self.pin

    def set_pin_insertion(self, goal_id: str, insertion: PinInsertion | None) -> str:
        """Goal `goal_id`'s pin `insertion` watched from the next period on (None: that goal's
        insertion ends: the driver stops). What is watched, as text; BridgeError, with nothing
        changed, for the refusals of the module docstring or an end that is not the active goal's."""
        with self._hole_lock:
            current = self._next_pin
            if insertion is None:
                if current is None:
                    return f"pin insertion: goal {goal_id!r} ended, no insertion was active"
                if current.goal_id != goal_id:
                    raise BridgeError(
                        f"end of goal {goal_id!r}'s pin insertion refused: the active one is goal "
                        f"{current.goal_id!r}'s"
                    )
                self._pending_pin = (None,)
                text = f"pin insertion: goal {goal_id!r}'s ends, the pin driver stops"
            else:
                self._refuse_pin(goal_id, insertion, current)
                self._pending_pin = (insertion,)
                text = (
                    f"pin insertion of goal {goal_id!r}: driver at {insertion.speed:.3f} rad/s, torque limit "
                    f"{insertion.monitor.limit:.2f} N*m to {insertion.monitor.target_depth * 1e3:.2f} mm"
                )
        self.events.append(text)
        return text

    def _refuse_pin(self, goal_id: str, insertion: PinInsertion, current: PinInsertion | None) -> None:
        refused = f"pin insertion of goal {goal_id!r} refused"
        if insertion.goal_id != goal_id:
            raise BridgeError(f"pin insertion names goal {insertion.goal_id!r}, sent for {goal_id!r}")
        if DrillParameters.feed_joint not in self.names:
            raise BridgeError(f"{refused}: no drill feed among the joints ({', '.join(self.names)})")
        if getattr(self.backend, "spindle", None) is None:
            raise BridgeError(
                f"{refused}: the drives have no pin driver whose torque the monitor could read "
                "(no spindle drive on the bus)"
            )
        if current is not None:
            raise BridgeError(f"{refused}: goal {current.goal_id!r}'s insertion is active")
        hole = (self._pending_hole or self.hole).context
        if hole is not None:
            raise BridgeError(f"{refused}: goal {hole.goal_id!r}'s hole is active")

    def _end_pin(self) -> str | None:
        """No goal goes on (a stop acknowledged): no insertion from now on; the goal whose
        insertion ended (None: none was active)."""
        with self._hole_lock:
            current = self._next_pin
            if current is None:
                return None
            self._pending_pin = (None,)
        return current.goal_id

    def _swap_in_pin(self) -> None:
        """The waiting insertion in force from this period on (never blocking the cycle: a caller
        holding the lock defers it by one period)."""
        if self._pending_pin is None or not self._hole_lock.acquire(blocking=False):
            return
        try:
            (insertion,), self._pending_pin = self._pending_pin, None
        finally:
            self._hole_lock.release()
        self.pin = insertion
        driver = getattr(self.backend, "spindle", None)
        if insertion is None:
            if driver is not None:
                driver.switch_off()
            return
        self._pin_start = self.hardware.state(DrillParameters.feed_joint, "position")
        self.pin_angle, self.pin_reached, self.pin_stopped_on_torque = 0.0, False, False
        if not driver.stalled:
            driver.switch_on(insertion.speed)

    @property
    def pin_travel(self) -> float:
        """m the thread has carried the pin since the insertion began (pitch x revolutions)."""
        return self.pin.travel(self.pin_angle) if self.pin is not None else 0.0

    @property
    def pin_feed_command(self) -> float:
        """m: the feed's position command the thread gives now (its start + pitch x revolutions)."""
        return self._pin_start + self.pin_travel

    def _gear_feed_to_pin(self) -> None:
        """The driver's command and the feed's, before the hardware writes (module docstring)."""
        insertion = self.pin
        if insertion is None:
            return
        driver = self.backend.spindle
        if not self.pin_reached and driver.running:
            command = insertion.driver_command(insertion.monitor.target_depth - self.pin_travel)
            if command is None:
                driver.switch_off()
                self.pin_reached = True
                self.events.append(
                    f"pin insertion of goal {insertion.goal_id!r}: at {self.pin_travel * 1e3:.3f} mm, "
                    "the driver off"
                )
            else:
                driver.command = command
        feed = DrillParameters.feed_joint
        self.hardware.set_command(feed, "position", self.pin_feed_command)
        self.hardware.set_command(feed, "velocity", insertion.travel(driver.speed))

    def _advance_pin(self) -> None:
        """The driver's angle after the period (its speed over the period: its encoder on a robot)."""
        if self.pin is not None:
            self.pin_angle += self.backend.spindle.speed * self.dt

    def _run_pin_monitor(self) -> None:
        """The pin driver's torque this period (module docstring): a stop stops it and every drive."""
        insertion = self.pin
        if insertion is None:
            return
        driver, hw = self.backend.spindle, self.hardware
        if hw.lifecycle is not LifecycleState.ACTIVE:
            driver.switch_off()  # the feed stopped: a turning pin would strip its thread
            return
        depth = hw.state(DrillParameters.feed_joint, "position") - self._pin_start
        reason = insertion.monitor.check(driver.motor_torque, depth)
        self.pin_stopped_on_torque = reason is not None
        if reason is None and driver.stalled:
            reason = f"pin driver stalled: {driver.stall_reason}"
        if reason is not None:
            driver.switch_off()
            hw.stop(reason, StopCode.DRILLING_MONITOR)
