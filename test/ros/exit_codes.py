"""The launch tests' post-shutdown check: every process ended with an allowed exit code, and a
process that did not is reported with the end of what it printed.

launch_testing's own assertExitCodes names the process and its code only ("Proc task_node-4
exited with code -11"): the cause (faulthandler's stacks of a crashed node, a traceback) is in
the process's output, which CI does not keep. Here it is in the failure's message.
"""

from __future__ import annotations

import launch_testing.asserts
from launch_testing.util import resolveProcesses

#: A node stopped by the launch's shutdown: it returned 0 or died of its SIGINT or SIGTERM.
STOPPED = (0, -2, -15)
#: Lines of a failing process's output quoted in the failure.
TAIL_LINES = 60


def assert_exit_codes(proc_info, proc_output, allowed=STOPPED, process=None) -> None:
    """launch_testing's assertExitCodes over `proc_info` (or only `process`: a name or the launch
    action), each failure with the last TAIL_LINES lines the failing process printed (stdout and
    stderr, in order)."""
    try:
        launch_testing.asserts.assertExitCodes(proc_info, allowable_exit_codes=list(allowed), process=process)
    except AssertionError as error:
        checked = (proc_info[item] for item in resolveProcesses(proc_info, process=process))
        failed = [info.process_name for info in checked if info.returncode not in allowed]
        tails = [f"--- the last lines of {name}:\n{output_tail(proc_output, name)}" for name in failed]
        raise AssertionError("\n".join([str(error), *tails])) from None


def output_tail(proc_output, process_name: str, lines: int = TAIL_LINES) -> str:
    """The last `lines` lines a process printed (launch_testing's proc_output), or why none."""
    if process_name not in proc_output.process_names():
        return "(it printed nothing)"
    text = b"".join(event.text for event in proc_output[process_name]).decode(errors="replace")
    return "\n".join(text.splitlines()[-lines:])
