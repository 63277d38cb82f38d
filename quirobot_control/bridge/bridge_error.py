"""The drive bridge's refusal (bridge.drive_bridge, and its hole in force, bridge.hole_in_force)."""

from __future__ import annotations


class BridgeError(ValueError):
    """A request the bridge refuses: a malformed command (unknown joint, mismatched lengths), or
    a step after close()."""
