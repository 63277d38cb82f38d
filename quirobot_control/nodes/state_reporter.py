"""task_node's /quirobot/state (quirobot/msg/OperatingState, transient local) and its "quirobot/task"
diagnostic, from the motion port and the DrillHole executor.

The state is procedures.operating_state's table, fed what the node observes; the fault is
safety.stop_codes.merged_fault (the drives' latched stop first), the same rule the executor
refuses a goal by. Published on every change and once a second (steady clock: also before the
simulated clock runs). rclpy is imported only inside functions.
"""

from __future__ import annotations

import threading

from quirobot_control.procedures.operating_state import Observation, OperatingStateMachine


class StateReporter:
    """/quirobot/state and the "quirobot/task" diagnostic (module docstring). `node` has `port`,
    `drill` (the executor), `active` (bool) and `state_publisher`."""

    def __init__(self, node) -> None:
        from diagnostic_msgs.msg import DiagnosticArray

        self.node = node
        self.lock = threading.Lock()
        self.machine = OperatingStateMachine()
        self.diagnostics = node.create_publisher(DiagnosticArray, "/diagnostics", 10)

    def publish(self) -> None:
        from quirobot.msg import OperatingState

        from quirobot_control.bridge.diagnostics import task_diagnostic
        from quirobot_control.nodes.diagnostics_msg import diagnostic_array

        node, executor = self.node, self.node.drill
        with self.lock:
            status = node.port.status()
            missing = executor.waiting_for()
            fault = executor.robot_fault()  # safety.stop_codes.merged_fault, the one rule
            state = self.machine.observe(
                Observation(
                    active=node.active,
                    fault=bool(fault),
                    busy=executor.busy,
                    up=not missing,
                    homed=status.homed,
                    enabled=status.enabled,
                )
            )
            message = OperatingState(
                state=int(state),
                ready=not missing,
                waiting_for="; ".join(missing),
                enabled=status.enabled,
                homed=status.homed,
                busy=executor.busy,
                fault=bool(fault),
                fault_reason=fault.reason,
                stop_code=int(fault.code),
                bit_in_bone=executor.bit_in_bone,
                phase=executor.phase if executor.started or executor.busy else "starting",
            )
            message.stamp = node.get_clock().now().to_msg()
            node.state_publisher.publish(message)
            entry = task_diagnostic(
                enabled=message.enabled,
                homed=message.homed,
                busy=message.busy,
                phase=message.phase,
                fault_reason=fault.reason,
            )
            self.diagnostics.publish(diagnostic_array([entry], message.stamp))
