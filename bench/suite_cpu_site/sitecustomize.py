"""Put first on PYTHONPATH by ``bench/suite_cpu.py``: every Python process appends one line
to ``$SUITE_CPU_LOG`` when it exits (pid, start, wall s, user + system CPU s, the test that
started it, argv), tab-separated. The direct runner's warm ``stage_host`` counts the CPU of
the stages it forked and reaped too (they end with ``os._exit``, without a line of their
own). Does nothing without ``SUITE_CPU_LOG``."""

import atexit
import os
import resource
import sys
import time

_START = time.time()


def _log() -> None:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime
    if sys.argv and sys.argv[0].endswith("stage_host.py"):
        forked = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu += forked.ru_utime + forked.ru_stime
    test = os.environ.get("PYTEST_CURRENT_TEST", "").replace("\t", " ")
    argv = " ".join(sys.argv).replace("\t", " ").replace("\n", " ")[:300]
    line = f"{os.getpid()}\t{_START:.2f}\t{time.time() - _START:.2f}\t{cpu:.2f}\t{test}\t{argv}\n"
    try:
        # an argument that is not UTF-8 (lone surrogates in sys.argv) is written escaped
        with open(
            os.environ["SUITE_CPU_LOG"], "a", encoding="utf-8", errors="backslashreplace"
        ) as out:
            out.write(line)  # one short write in append mode: lines of processes never mix
    except OSError:
        pass


if os.environ.get("SUITE_CPU_LOG"):
    atexit.register(_log)
