"""drive_node's services half (`DriveServices`, a base of nodes.drive_node.DriveNode): the
hardware's lifecycle as /quirobot/drives/<acknowledge_stop|enable|disable|home> (std_srvs/Trigger,
run beside the real drives' cycle), ~/inject_fault for tests (test_fault_injection), and the close
(the cycle stopped, every drive stopped, the buses released). rclpy and the messages are imported
only inside functions (drive_node's docstring).
"""

from __future__ import annotations


class DriveServices:
    """DriveNode's services: /quirobot/drives/<lifecycle> (std_srvs/Trigger), ~/inject_fault for
    tests, and the close (the attributes it uses are DriveNode's)."""

    # --- services --------------------------------------------------------------------------------
    def _create_services(self) -> None:
        """/quirobot/drives/<lifecycle> (std_srvs/Trigger), and ~/inject_fault for tests."""
        from std_srvs.srv import Trigger

        for name, action in (  # self.bridge when called: attach() sets it
            (
                "acknowledge_stop",
                lambda: self.bridge.acknowledge_stop("operator: /quirobot/drives/acknowledge_stop"),
            ),
            ("enable", lambda: self.bridge.enable(self.bridge_now())),
            ("disable", lambda: self.bridge.disable()),
            ("home", lambda: self.bridge.home()),
        ):
            self.node.create_service(Trigger, f"/quirobot/drives/{name}", self._lifecycle_service(action))
        if self.parameters.fault_injection:
            self.node.create_service(Trigger, "~/inject_fault", self._inject_fault)

    def _lifecycle_service(self, action):
        from quirobot_control.bridge.drive_bridge import BridgeError

        def serve(request, response):
            try:
                # Real drives: a request the cycle process runs while its cycle keeps the bus alive.
                response.message = action()
                response.success = True
            except (BridgeError, TimeoutError) as error:
                response.success, response.message = False, " ".join(str(error).split())
            self.node.get_logger().info(f"{response.message}")
            self.report(self.bridge.hardware.stop_reason)
            self.publish_status()
            return response

        return serve

    def _inject_fault(self, request, response):
        from quirobot_description.parameters import DrillParameters

        feed = DrillParameters.feed_joint
        self.bridge.drives[feed].inject_fault("injected by ~/inject_fault (test)")
        response.success, response.message = True, f"{feed} drive faulted"
        return response

    def close(self) -> None:
        """No more cycles (real drives), then every drive stopped and the buses released."""
        if self.cycle is not None:
            self.cycle.stop()
        for problem in self.bridge.close():
            self.node.get_logger().warning(f"shutdown: {problem}")
