"""Safety checks run every control cycle, and the plan-time check they rely on.

- motion_monitor: `SafetyMonitor` (command limiter braking at the acceleration limits, soft
  limits, following error, overspeed, command watchdog armed at activation; one latched stop);
- event_log: `EventLog`, the bounded, counted log of non-fatal safety events;
- drilling_monitor: `DrillingMonitor`, the drilling process safety run every cycle on the feed's
  effort and the spindle (thrust limit, far-cortex breakthrough, early breakthrough, spindle
  interlock and stall, non-finite input);
- breakthrough_plan: `plan_breakthrough`, the plan-time check that the breakthrough detector will
  see the breakthrough a plan relies on, or `BreakthroughPlanError` naming why not;
- state_age: `age_fault`, how old a stamped input (a servo command, a joint state) may be, and
  `StateAge`, the joint-state watchdog of a servo (the scope servo's, on the robot and in
  simulation alike);
- pin_torque: `PinTorqueMonitor`, the pin insertion's torque limit on its driver (the drive bridge's
  pin in force and the pin simulation alike), and `PinInsertion`, what a pin goal hands the drive
  side.

The virtual fixtures' per-cycle check is axes.fixture_monitor.FixtureMonitor (run by the
hardware component); the goal's monitor settings are procedures.goal_monitor.
No re-exports: importing one module loads only what it needs.
"""
