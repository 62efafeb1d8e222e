"""Python code run in a fresh interpreter, so that a crash (a signal, an abort, a Rust panic)
fails the test that caused it instead of killing pytest with it."""

import os
import resource
import signal
import subprocess
import sys
import tempfile

# Exit statuses of a process that died instead of raising: a Rust panic (101), and SIGABRT
# and SIGKILL as a shell reports them (134: abort, `free(): invalid next size`; 137: the
# kernel's OOM killer).
CRASH_STATUSES = (101, 134, 137)


def run_isolated(code, timeout=300, memory_bytes=None, stdin=None, env=None):
    """Runs ``code`` with this interpreter in a new process (its address space limited to
    ``memory_bytes`` if given, so that a huge allocation fails there instead of exhausting
    the machine; ``stdin`` its input text; ``env`` variables to set in its environment, a
    value of None removing one); returns the ``CompletedProcess`` with text output."""
    environment = dict(os.environ)
    for name, value in (env or {}).items():
        if value is None:
            environment.pop(name, None)
        else:
            environment[name] = value

    def limit():
        if memory_bytes is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))

    # Run away from the source tree, so that the installed package is the one imported.
    return subprocess.run([sys.executable, "-c", code], input=stdin, capture_output=True,
                          text=True, timeout=timeout, preexec_fn=limit, check=False,
                          cwd=tempfile.gettempdir(), env=environment)


def death(proc):
    """How ``proc`` died (a signal or a crash status), or None when it exited normally."""
    if proc.returncode < 0:
        return f"killed by {signal.Signals(-proc.returncode).name}"
    if proc.returncode in CRASH_STATUSES:
        return f"exit status {proc.returncode}"
    return None
