"""Where the test suite's CPU goes. Runs pytest (by default the README's test command's
pytest part: ``-n 2 --dist loadgroup``) with every Python process it starts logging its own
CPU time at exit, then prints the CPU seconds by test file and by program (stage scripts,
dvc, the xdist workers, ...). On 2 cores the suite cannot take less wall time than half its
CPU time, so this says which tests to make cheaper.

    python bench/suite_cpu.py                      # the whole suite
    python bench/suite_cpu.py -- tests/e2e -x      # pytest arguments after --
    python bench/suite_cpu.py --log FILE           # summarise the log of an earlier run

The processes log through ``bench/suite_cpu_site/sitecustomize.py``, put first on PYTHONPATH.
Every stage script and ``dvc`` that a test's DVC run starts is a process of its own (a fresh
interpreter) and logs its CPU; a stage script that a test runs in its own process
(``tests/support/stage_scripts.py``) counts in that test's xdist worker. Not logged: programs
that are not Python (git), processes that end without running atexit (killed, ``os._exit``;
the direct runner's stages, children of its warm ``stage_host``, count in the host's line),
those started with another ``sitecustomize`` first on PYTHONPATH (the param-traced stages of
the ``tiny_repro`` build and of ``test_ensemble_pipeline`` / ``test_final_stage``) or without
PYTHONPATH (``test_init_project``'s virtual environment and the stages it runs). The total
line, the CPU of the pytest process's children that it waited for (``getrusage``), counts
them too. Writes ``bench/results/suite_cpu.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from common import describe  # noqa: E402  (bench/ is on sys.path: the script's folder)

ROOT = Path(__file__).resolve().parents[1]
SITE = Path(__file__).resolve().parent / "suite_cpu_site"
OUT = ROOT / "bench" / "results" / "suite_cpu.json"
PYTEST = ["-q", "-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider"]


def read_log(text: str) -> list[dict]:
    """The processes of a log: pid, start, wall_s, cpu_s, test (its file), argv."""
    procs = []
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) != 6:
            continue  # a line cut short
        pid, start, wall, cpu, test, argv = fields
        procs.append(
            {
                "pid": int(pid),
                "start": float(start),
                "wall_s": float(wall),
                "cpu_s": float(cpu),
                "test": test.split("::")[0] or "(outside a test)",
                "argv": argv,
            }
        )
    return procs


def program(argv: str) -> str:
    """What a process was: ``stage train``, ``dvc``, ``lttw``, ``python -c`` (the xdist
    workers, ...), else its script's name."""
    words = argv.split()
    first = words[0] if words else ""
    if "stages/" in first:
        return "stage " + Path(first).stem
    if first.endswith(("/dvc", "dvc/__main__.py")) or first == "dvc":
        return "dvc"
    if first.endswith("/lttw") or first == "lttw":
        return "lttw"
    if first == "-c":
        return "python -c (xdist workers, ...)"
    return Path(first).name or "(no argv)"


def summarise(procs: list[dict]) -> dict:
    """CPU seconds and process counts by test file and by program, largest first."""

    def table(key) -> dict:
        cpu: dict[str, float] = defaultdict(float)
        count: dict[str, int] = defaultdict(int)
        for proc in procs:
            cpu[key(proc)] += proc["cpu_s"]
            count[key(proc)] += 1
        order = sorted(cpu, key=lambda name: -cpu[name])
        return {name: {"cpu_s": round(cpu[name], 1), "processes": count[name]} for name in order}

    return {
        "logged_cpu_s": round(sum(proc["cpu_s"] for proc in procs), 1),
        "logged_processes": len(procs),
        "by_test_file": table(lambda proc: proc["test"]),
        "by_program": table(lambda proc: program(proc["argv"])),
    }


def run_suite(pytest_args: list[str], log: Path) -> dict:
    """Run pytest with the logging site first on PYTHONPATH; wall time, the children's CPU."""
    path = os.pathsep.join(filter(None, [str(SITE), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "SUITE_CPU_LOG": str(log)}
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("DVC_NO_ANALYTICS", "1")
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", *pytest_args], cwd=ROOT, env=env)
    wall = time.perf_counter() - start
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "pytest_args": pytest_args,
        "returncode": done.returncode,
        "wall_s": round(wall, 1),
        "children_user_s": round(children.ru_utime, 1),
        "children_system_s": round(children.ru_stime, 1),
    }


def show(result: dict, rows: int) -> None:
    if "wall_s" in result:
        cpu = result["children_user_s"] + result["children_system_s"]
        print(
            f"pytest {' '.join(result['pytest_args'])}: exit {result['returncode']}, "
            f"{result['wall_s']:.0f} s wall, {cpu:.0f} CPU-s in all (user + system)"
        )
    summary = result["summary"]
    print(f"logged: {summary['logged_processes']} processes, {summary['logged_cpu_s']:.0f} CPU-s")
    for title in ("by_test_file", "by_program"):
        print(f"\n| {title.replace('_', ' ')} | CPU-s | processes |\n|---|---|---|")
        for name, row in list(summary[title].items())[:rows]:
            print(f"| {name} | {row['cpu_s']:.1f} | {row['processes']} |")


def main(argv: list[str] | None = None) -> dict:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--log", type=Path, help="summarise this log instead of running")
    parser.add_argument("--rows", type=int, default=20, help="rows of each table (default 20)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"the JSON (default {OUT})")
    args = parser.parse_args(argv)
    if args.log is not None:
        result: dict = {"log": str(args.log)}
        text = args.log.read_text(encoding="utf-8")
    else:
        with tempfile.TemporaryDirectory(prefix="suite-cpu-") as tmp:
            log = Path(tmp) / "processes.tsv"
            result = run_suite(PYTEST + extra, log)
            text = log.read_text(encoding="utf-8") if log.is_file() else ""
    result["summary"] = summarise(read_log(text))
    result["machine"] = describe()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    show(result, args.rows)
    return result


if __name__ == "__main__":
    sys.exit(main().get("returncode", 0))
