"""The nodes' one /diagnostics converter: bridge.diagnostics' `Diagnostic` entries as a
diagnostic_msgs/DiagnosticArray (drive_node's drives, task_node's "quirobot/task"). rclpy and the
message packages are imported only inside the function."""

from __future__ import annotations

from collections.abc import Iterable


def diagnostic_array(entries: Iterable, stamp):
    """A DiagnosticArray stamped `stamp` (builtin_interfaces/Time) of bridge.diagnostics.Diagnostic
    entries, in their order."""
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

    array = DiagnosticArray()
    array.header.stamp = stamp
    for entry in entries:
        array.status.append(
            DiagnosticStatus(
                level=bytes([entry.level]),
                name=entry.name,
                message=entry.message,
                hardware_id=entry.hardware_id,
                values=[KeyValue(key=k, value=v) for k, v in entry.values],
            )
        )
    return array
