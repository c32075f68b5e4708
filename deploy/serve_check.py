"""The slim serving install, checked the way deploy/Dockerfile builds and starts it, without
Docker: ``pip install`` of the image's build context (deploy/Dockerfile.dockerignore) into a
fresh virtual environment, which must hold no torch, transformers, dvc, matplotlib, jieba,
scikit-learn or scipy; then the image's command (ENTRYPOINT + CMD) serving a tiny model
exported to ONNX by the full install, probed as its HEALTHCHECK and a Kubernetes readiness
probe do; its answers, ``lttw predict``'s and ``lttw.load_model``'s there must be the full
install's ONNX answers (same labels, probabilities within 1e-5). A torch model folder there
must give one line saying what to install. Prints the site-packages size of both installs.

Run it with the full install's Python, from the repository root (CI does, after ``make
install``)::

    .venv/bin/python deploy/serve_check.py [--venv DIR] [--keep]

``--venv DIR`` reuses (or creates) the slim environment in DIR instead of a temporary one.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
DOCKERIGNORE = ROOT / "deploy" / "Dockerfile.dockerignore"
#: the versions the image installs (``pip install -c``), relative to the build context
CONSTRAINTS = "deploy/constraints.txt"
#: what the slim install leaves out (import names)
LEFT_OUT = ("torch", "transformers", "dvc", "dvclive", "matplotlib", "jieba", "sklearn", "scipy")
#: texts of several lengths, one empty: batches of mixed lengths
TEXTS = [
    "the team won the match in the last minute of the season",
    "oil",
    "stock market news and bank shares",
    "",
    "computer internet technology " * 10,
    "government president war world news",
]
ATOL = 1e-5
#: bounded waits: a server that does not start fails the check instead of hanging it
START_S, REQUEST_S = 120, 60


class Checks:
    """The checks' outcomes, printed as they come: ``ok`` or ``FAILED`` and what."""

    def __init__(self) -> None:
        self.passed = self.failed = 0

    def __call__(self, ok: bool, what: str) -> bool:
        print(f"{'ok' if ok else 'FAILED'}: {what}", flush=True)
        self.passed += ok
        self.failed += not ok
        return ok


def instructions(path: Path = DOCKERFILE) -> dict[str, str]:
    """The Dockerfile's instructions by name (continuation lines joined; the last wins)."""
    text = re.sub(r"\\\n\s*", " ", path.read_text(encoding="utf-8"))
    found = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, rest = line.partition(" ")
            found[name.upper()] = rest.strip()
    return found


def exec_form(value: str) -> list[str]:
    """A JSON-array (exec form) instruction's argv; after HEALTHCHECK's options, its CMD's."""
    start = value.index("[")
    argv = json.loads(value[start:])
    assert isinstance(argv, list) and all(isinstance(a, str) for a in argv), value
    return argv


def context_names(path: Path = DOCKERIGNORE) -> list[str]:
    """The top-level names the image's build context keeps (the ``!NAME`` lines)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line[1:].strip() for line in lines if line.startswith("!")]


def copy_context(target: Path) -> Path:
    """The build context as deploy/Dockerfile.dockerignore cuts it, copied into ``target``."""
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
    for name in context_names():
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=ignore)
        else:
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def tiny_model(work: Path) -> tuple[Path, Path]:
    """The tests' tiny LTTW model folder (a random 2-layer BERT, latent factors) and its
    ``lttw export --onnx`` made by this (full) install: (torch folder, ONNX folder)."""
    sys.path.insert(0, str(ROOT / "tests"))
    import conftest
    from support.serving_models import build_lttw_folder

    factory = SimpleNamespace(mktemp=lambda name: Path(tempfile.mkdtemp(prefix=name, dir=work)))
    encoder = conftest.tiny_encoder_dir.__wrapped__(factory)
    torch_dir = build_lttw_folder(work / "model", encoder)
    onnx_dir = work / "onnx"
    run([sys.executable, "-m", "lttw.cli", "export", "--model", str(torch_dir), "--out",
         str(onnx_dir), "--onnx"])  # fmt: skip
    return torch_dir, onnx_dir


def slim_environ() -> dict[str, str]:
    """The environment of the slim install's commands: no PYTHONPATH (nothing but the
    environment's own packages), and the tests' offline and one-thread settings."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    """``argv``, its output captured; a failure shows the command and its output."""
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, **kwargs)
    if done.returncode != 0 and kwargs.get("check", True):
        sys.exit(f"{shlex.join(argv)} exited {done.returncode}:\n{done.stdout}{done.stderr}")
    return done


def fresh_env(venv: Path, *requirements: str) -> float:
    """``venv`` created (unless it exists) and ``requirements`` installed in it with pip, as
    the image's ``RUN pip install`` does; the seconds the install took."""
    python = venv / "bin" / "python"
    if not python.exists():
        run([sys.executable, "-m", "venv", str(venv)])
    start = time.perf_counter()
    run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *requirements])
    return time.perf_counter() - start


def site_packages_mb(python: Path | str) -> float:
    """MB (10^6 bytes) of the files in ``python``'s site-packages (purelib and platlib)."""
    code = (
        "import json, sysconfig; "
        "print(json.dumps(sorted({sysconfig.get_path('purelib'), sysconfig.get_path('platlib')})))"
    )
    folders = json.loads(run([str(python), "-c", code]).stdout)
    total = 0
    for folder in folders:
        for dirpath, _, files in os.walk(folder):
            total += sum(os.lstat(os.path.join(dirpath, f)).st_size for f in files)
    return total / 1e6


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def image_command(venv: Path, model: Path, port: int) -> list[str]:
    """The image's ENTRYPOINT + CMD with the slim environment's ``lttw``, ``model`` for
    /model and ``port`` for 8000."""
    found = instructions()
    argv = exec_form(found["ENTRYPOINT"]) + exec_form(found["CMD"])
    assert argv[0] == "lttw", argv
    swap = {"/model": str(model), "8000": str(port)}
    return [str(venv / "bin" / "lttw")] + [swap.get(a, a) for a in argv[1:]]


def get(port: int, path: str) -> tuple[int, bytes]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    try:
        with urllib.request.urlopen(request, timeout=REQUEST_S) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def post(port: int, path: str, doc: dict) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=json.dumps(doc).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=REQUEST_S) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as err:
        return err.code, {"error": err.read().decode(errors="replace")}


def probe_paths(port: int) -> tuple[str, str]:
    """The liveness and readiness paths of the image's probes (GET /live, GET /ready); an
    lttw whose server answers 404 there is probed on GET /health for both."""
    if get(port, "/live")[0] == 404:
        print("note: this lttw has no GET /live; probing GET /health", flush=True)
        return "/health", "/health"
    return "/live", "/ready"


def wait_ready(server: subprocess.Popen, port: int) -> bool:
    """Until GET /ready answers 200 (the warm-up pass has run; /health answers 200 before
    it), or GET /health does on an lttw without /ready."""
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline and server.poll() is None:
        try:
            status = get(port, "/ready")[0]
            if status == 200 or (status == 404 and get(port, "/health")[0] == 200):
                return True
        except OSError:
            pass
        time.sleep(0.25)
    return False


def probabilities(records: list[dict], classes: list[str]) -> np.ndarray:
    """(n, C) probabilities in class order from answers listing every class in ``top``."""
    return np.array(
        [[{t["label"]: t["prob"] for t in r["top"]}[c] for c in classes] for r in records]
    )


def same(check: Checks, what: str, labels, probs, ref_labels, ref_probs) -> None:
    diff = float(np.abs(np.asarray(probs) - ref_probs).max())
    check(
        list(labels) == list(ref_labels) and diff <= ATOL,
        f"{what}: the same labels as the full install's ONNX path, max probability "
        f"difference {diff:.1e} (<= {ATOL:g})",
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", type=Path, help="the slim environment [default: a temporary one]")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument(
        "--full",
        action="store_true",
        help="also install the full package (TORCH, default the Makefile's torch==2.13.0, and "
        "the train extra) in a fresh environment, for its site-packages size",
    )
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    started = time.perf_counter()
    check = Checks()
    work = Path(tempfile.mkdtemp(prefix="lttw-serve-check-"))
    try:
        torch_dir, onnx_dir = tiny_model(work)
        from lttw import load_model
        from lttw.inference.loading import backend_name

        reference = load_model(onnx_dir, device="cpu")
        check(
            backend_name(reference) == "onnx-fp32",
            "full install: load_model runs the ONNX folder on onnxruntime",
        )
        classes = list(reference.classes)
        ref_probs = reference.predict_proba(TEXTS)
        ref_labels = reference.predict(TEXTS)

        venv, context = args.venv or work / "slim", copy_context(work / "context")
        install_s = fresh_env(venv, "-c", str(context / CONSTRAINTS), str(context))
        python = venv / "bin" / "python"
        code = f"import importlib.util as u, json; print(json.dumps([m for m in {LEFT_OUT!r} if u.find_spec(m)]))"
        found = run([str(python), "-c", code], cwd=work, env=slim_environ()).stdout
        check(
            json.loads(found) == [],
            f"slim install holds none of {', '.join(LEFT_OUT)} (found: {found.strip()})",
        )

        port = free_port()
        command = image_command(venv, onnx_dir, port)
        print(f"starting: {shlex.join(command)}", flush=True)
        log = open(work / "serve.log", "w")  # noqa: SIM115 (closed below)
        server = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, cwd=work, env=slim_environ()
        )
        try:
            if not check(
                wait_ready(server, port), "slim `lttw serve` (the image's command) is ready"
            ):
                print((work / "serve.log").read_text(), flush=True)
                return 1
            live, ready = probe_paths(port)
            statuses = (get(port, live)[0], get(port, ready)[0])
            check(
                statuses == (200, 200),
                f"GET {live} and GET {ready} answer {statuses} (want 200, 200)",
            )
            if live == "/live":
                health = exec_form(instructions()["HEALTHCHECK"])
                health = [
                    str(python) if a == "python" else a.replace(":8000/", f":{port}/")
                    for a in health
                ]
                check(
                    run(health, check=False, env=slim_environ()).returncode == 0,
                    "the image's HEALTHCHECK passes",
                )
            # the server refuses an empty text (422): it gets the others
            served = [i for i, text in enumerate(TEXTS) if text.strip()]
            doc = {"texts": [TEXTS[i] for i in served], "top_k": len(classes)}
            status, answer = post(port, "/predict", doc)
            if check(status == 200, f"POST /predict: {status}"):
                records = answer["predictions"]
                same(check, "slim `lttw serve`", [r["label"] for r in records],
                     probabilities(records, classes), [ref_labels[i] for i in served],
                     ref_probs[served])  # fmt: skip
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
            log.close()
        check(
            server.returncode in (0, -signal.SIGTERM),  # uvicorn exits by the signal it caught
            f"slim `lttw serve` stops on SIGTERM (exit {server.returncode})",
        )

        lttw = str(venv / "bin" / "lttw")
        out = run(
            [
                lttw,
                "predict",
                "--model",
                str(onnx_dir),
                "--json",
                "--top-k",
                str(len(classes)),
                *TEXTS,
            ],
            cwd=work,
            env=slim_environ(),
        )
        records = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
        same(check, "slim `lttw predict`", [r["label"] for r in records],
             probabilities(records, classes), ref_labels, ref_probs)  # fmt: skip
        code = (
            "import json, sys, lttw; m = lttw.load_model(sys.argv[1]); "
            "print(json.dumps([m.predict(sys.argv[2:]), m.predict_proba(sys.argv[2:]).tolist()]))"
        )
        labels, probs = json.loads(
            run(
                [str(python), "-c", code, str(onnx_dir), *TEXTS], cwd=work, env=slim_environ()
            ).stdout
        )
        same(check, "slim `lttw.load_model`", labels, probs, ref_labels, ref_probs)

        refused = run(
            [lttw, "predict", "--model", str(torch_dir), "a text"],
            check=False,
            cwd=work,
            env=slim_environ(),
        )
        lines = refused.stderr.strip().splitlines()
        check(
            refused.returncode != 0 and len(lines) == 1 and "pip install 'lttw[train]'" in lines[0]
            and "lttw export" in lines[0],
            f"slim `lttw predict` on a torch folder: one line saying what to install ({lines[-1:]})",
        )  # fmt: skip

        print(
            f"site-packages of the slim install (pip install .): "
            f"{site_packages_mb(python):.0f} MB, installed in {install_s:.0f} s",
            flush=True,
        )
        if args.full:
            torch = os.environ.get("TORCH", "torch==2.13.0").split()
            full_s = fresh_env(
                work / "full", *torch, "-c", str(context / CONSTRAINTS), f"{context}[train]"
            )
            print(
                f"site-packages of the full install (pip install {shlex.join(torch)} "
                f"'.[train]'): {site_packages_mb(work / 'full' / 'bin' / 'python'):.0f} MB, "
                f"installed in {full_s:.0f} s",
                flush=True,
            )
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"took {time.perf_counter() - started:.0f} s")
    print(f"serve-check: {check.passed} passed, {check.failed} failed")
    return 1 if check.failed else 0


if __name__ == "__main__":
    sys.exit(main())
