"""The launch tests' post-shutdown check: every process ended with an allowed exit code, and a
process that did not is reported with the end of what it printed.

launch_testing's own assertExitCodes names the process and its code only ("Proc task_node-4
exited with code -11"): the cause (faulthandler's stacks of a crashed node, a traceback) is in
the process's output, which CI does not keep. Here it is in the failure's message.

One upstream exception, narrow and loud: an rclcpp node run with use_sim_time can deadlock while
it is destroyed (ros2/rclcpp#2962, open: TimeSource::destroy_clock_sub joins its clock thread
while holding the lock that thread needs). Seen here on robot_state_publisher at the end of a
launch test in CI, consistent with it: its signal handler logged SIGINT and then SIGTERM, it
printed nothing else and never ended, and launch killed it (-9) 15 s later. For the upstream C++
nodes this project runs with use_sim_time (UPSTREAM_SHUTDOWN_DEADLOCK: robot_state_publisher, and
ros2_control_node, which has the same rclcpp TimeSource), a -9 at the launch's shutdown passes
with a printed note naming the issue; any other code fails as before, and the project's own
nodes get no such allowance.

A second, as narrow: ros2_control_node can segfault at the very end of its own shutdown
(ros-controls/ros2_control#2012, open for Jazzy: "Segfault on Ctrl-C"; ros2_controllers#2028,
JTC during deactivation). Seen here once in a CI rehearsal, after every goal had passed: the
controller manager logged its controllers deactivated, the hardware's deactivate and shutdown
successful and "Shutting down the controller manager.", then died (-11). A -11 of
ros2_control_node passes with a printed note only when its output shows that whole orderly
shutdown first (SHUTDOWN_DONE, the hardware QuirobotSystem included): our hardware was stopped
before the crash. A crash before it, or of any other process, fails as before.
"""

from __future__ import annotations

from launch_testing.util import resolveProcesses

#: A node stopped by the launch's shutdown: it returned 0 or died of its SIGINT or SIGTERM.
STOPPED = (0, -2, -15)
#: Launch's SIGKILL, after SIGINT and SIGTERM went unanswered.
KILLED = -9
#: Upstream rclcpp nodes run with use_sim_time (launch/bringup.launch.py, sim.launch.py): their
#: destruction can deadlock in rclcpp's TimeSource (module docstring).
UPSTREAM_SHUTDOWN_DEADLOCK = ("robot_state_publisher", "ros2_control_node")
UPSTREAM_ISSUE = "ros2/rclcpp#2962 (TimeSource::destroy_clock_sub deadlock with use_sim_time)"
#: A segfault (SIGSEGV).
CRASHED = -11
#: What ros2_control_node prints through its orderly shutdown, in this order: the hardware stopped
#: (deactivate, shutdown) and the controller manager's last words before the upstream crash.
SHUTDOWN_DONE = (
    "Successful 'deactivate' of hardware 'QuirobotSystem'",
    "Successful 'shutdown' of hardware 'QuirobotSystem'",
    "Shutting down the controller manager.",
)
UPSTREAM_CRASH_ISSUE = "ros-controls/ros2_control#2012 (segfault ending the controller manager's shutdown)"
#: Lines of a failing process's output quoted in the failure.
TAIL_LINES = 60


def assert_exit_codes(proc_info, proc_output, allowed=STOPPED, process=None) -> None:
    """Every process of `proc_info` (or only `process`: a name or the launch action) ended with a
    code in `allowed`; AssertionError naming each that did not, with the last TAIL_LINES lines it
    printed (stdout and stderr, in order)."""
    failures = []
    for item in resolveProcesses(proc_info, process=process):
        info = proc_info[item]
        if info.returncode in allowed:
            continue
        if upstream_deadlock(info.process_name, info.returncode, allowed):
            print(f"exit_codes: {info.process_name} killed ({KILLED}) at shutdown: {UPSTREAM_ISSUE}")
            continue
        output = output_text(proc_output, info.process_name)
        if upstream_crash_after_shutdown(info.process_name, info.returncode, allowed, output):
            print(
                f"exit_codes: {info.process_name} crashed ({CRASHED}) after its orderly shutdown "
                f"(hardware deactivated and shut down first): {UPSTREAM_CRASH_ISSUE}"
            )
            continue
        failures.append(
            f"Proc {info.process_name} exited with code {info.returncode} (allowed: {list(allowed)})\n"
            f"--- the last lines of {info.process_name}:\n{output_tail(proc_output, info.process_name)}"
        )
    assert not failures, "\n".join(failures)


def upstream_deadlock(process_name: str, returncode: int, allowed) -> bool:
    """Whether a process's end is the upstream shutdown deadlock: one of UPSTREAM_SHUTDOWN_DEADLOCK,
    killed by launch, where a stop by the launch's shutdown was expected."""
    node = process_name.rsplit("-", 1)[0]  # launch names a process "<executable>-<n>"
    return returncode == KILLED and tuple(allowed) == STOPPED and node in UPSTREAM_SHUTDOWN_DEADLOCK


def upstream_crash_after_shutdown(process_name: str, returncode: int, allowed, output: str) -> bool:
    """Whether a process's end is the upstream crash after an orderly shutdown: ros2_control_node
    segfaulted where a stop by the launch's shutdown was expected, after printing every line of
    SHUTDOWN_DONE in order (module docstring)."""
    node = process_name.rsplit("-", 1)[0]
    if returncode != CRASHED or tuple(allowed) != STOPPED or node != "ros2_control_node":
        return False
    position = 0
    for line in SHUTDOWN_DONE:
        position = output.find(line, position)
        if position < 0:
            return False
        position += len(line)
    return True


def output_text(proc_output, process_name: str) -> str:
    """Everything a process printed (launch_testing's proc_output), "" if nothing."""
    if process_name not in proc_output.process_names():
        return ""
    return b"".join(event.text for event in proc_output[process_name]).decode(errors="replace")


def output_tail(proc_output, process_name: str, lines: int = TAIL_LINES) -> str:
    """The last `lines` lines a process printed (launch_testing's proc_output), or why none."""
    text = output_text(proc_output, process_name)
    if not text:
        return "(it printed nothing)"
    return "\n".join(text.splitlines()[-lines:])
