"""trace_check.py — what the trace tests' checking scripts share: a failure
reported in one line under the script's name, and running mmtrace (or the
program) with a failure for a non-zero status, its stderr's end quoted.

    from trace_check import Check
    c = Check("check_x")
    r = c.run([mmtrace, "record", "-o", trace, "--", prog], "record")
    c.fail("what is wrong")
"""
import subprocess
import sys


class Check:
    def __init__(self, name):
        self.name = name

    def fail(self, msg):
        print(f"{self.name}: FAIL: {msg}", file=sys.stderr)
        sys.exit(1)

    def run(self, argv, what):
        """argv run to its end, its output captured; a failure unless its status is 0."""
        r = subprocess.run(argv, capture_output=True, text=True)
        if r.returncode != 0:
            self.fail(f"{what}: status {r.returncode}: {r.stderr[-500:]}")
        return r
