"""drive_node's status half (`DrivesStatusOut`, a base of nodes.drive_node.DriveNode): the
bridge's events and the safety layer's messages in the log, the stop logged once, the drives'
state on /quirobot/drives/state (quirobot/msg/DrivesState, latched) and /diagnostics made from the
same status, the controllers stopped or started with the drives, and the real drives' latest
joint state. rclpy and the messages are imported only inside functions (drive_node's docstring).
"""

from __future__ import annotations


class DrivesStatusOut:
    """DriveNode's drives' state out: the log, /quirobot/drives/state and /diagnostics, and the
    real drives' latest joint state (the attributes it uses are DriveNode's)."""

    def report(self, stop_reason: str | None) -> None:
        """The bridge's new events and safety-layer messages in the log; the stop logged once and
        the status published when the lifecycle or the stop changed."""
        bridge, reported, logger = self.bridge, self.reported, self.node.get_logger()
        for event in bridge.events[reported["events"] :]:
            logger.info(event)
        reported["events"] = len(bridge.events)
        log = bridge.hardware.log  # the safety layer's events (clamps, watchdog holds), bounded
        total = len(log.messages) + log.dropped
        if total != reported["safety"]:
            messages = list(log.messages)  # real drives: as the cycle process sent them
            new = min(total - reported["safety"], len(messages))
            for event in messages[len(messages) - new :]:
                logger.warning(event)
            reported["safety"] = total
        if stop_reason and reported["stop"] != stop_reason:
            logger.error(f"drives stopped: {stop_reason}")
        reported["stop"] = stop_reason or None
        # Cheap per period; homed once a second. The breakthrough ends the executor's feed check.
        key = (
            bridge.hardware.lifecycle,
            stop_reason,
            bridge.breakthrough,
            bridge.started,
            bridge.hole.context and bridge.hole.context.goal_id,  # a goal waits for its hole
            bridge.hole_refused,
        )
        if key != reported["state"]:
            reported["state"] = key
            self.publish_status()

    def publish_status(self, status=None) -> None:
        """/quirobot/drives/state and /diagnostics of the drives' status (real drives: a request
        the cycle process answers); the controllers stopped or started with the drives."""
        from quirobot.msg import DrivesState

        from quirobot_control.bridge.diagnostics import drive_diagnostics
        from quirobot_control.bridge.drive_bridge import BridgeError
        from quirobot_control.nodes.diagnostics_msg import diagnostic_array

        if status is None:
            try:
                status = self.bridge.status()
            except (BridgeError, TimeoutError) as error:  # a stalled cycle process: next time
                self.node.get_logger().warning(f"drive status not read: {error}")
                return
        self.stop_controllers(status.enabled, status.stop_reason)
        state = DrivesState()
        state.stamp = self.stamp()
        state.lifecycle, state.enabled, state.homed = status.lifecycle, status.enabled, status.homed
        state.commanded = status.commanded
        state.stop_reason = status.stop_reason or ""
        state.stop_code = int(status.stop_code)
        state.breakthrough = status.breakthrough or ""
        state.breakthrough_early = status.breakthrough_early
        state.hole_goal_id = (status.hole.goal_id or "") if status.hole is not None else ""
        refused = status.hole_refused
        state.hole_refused_goal_id, state.hole_refused = refused if refused is not None else ("", "")
        self.drives_state.publish(state)
        self.diagnostics.publish(diagnostic_array(drive_diagnostics(status), state.stamp))

    def _publish_latest(self) -> None:
        """Real drives, on the node's timer: the cycle's latest joint state if it is new, and the
        cycle's messages in the log."""
        cycle = self.cycle
        while cycle.messages:
            self.node.get_logger().warning(cycle.messages.popleft())
        latest = cycle.latest
        if latest is not None and latest.cycle != self.published_cycle:
            self.published_cycle = latest.cycle
            self.publish_sample(latest.sample)
