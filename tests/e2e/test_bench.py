"""The benchmark scripts run (quick settings, on the CPU) and write what their READMEs say:
the profile's phases come from the loop's own labelled ranges, and real token lengths give
trimmed batches."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_profile_train_attributes_time_to_the_step_phases(tmp_path):
    import train_step

    out = tmp_path / "profile.json"
    result = train_step.main(["profile", "--quick", "--steps", "1", "--out", str(out)])
    assert json.loads(out.read_text()) == result
    # the step extrapolated to a 60k-text epoch beside MiniLM's GPU target; gpu.sh's
    # compile off / on summary (train_step.py compile-summary) names the card
    assert result["epoch_s"] > 0 and result["target_epoch_s"] == 3.0
    from steps import compile_summary

    (tmp_path / "profile-train-minilm-compile-off.json").write_text(out.read_text())
    summary = compile_summary.summary(tmp_path)
    assert summary["card"] == result["device_name"] and len(summary["rows"]) == 1
    assert summary["rows"][0]["compiled"] is False
    phases = result["ms_per_step_by_phase"]
    assert {"forward", "backward", "optimizer", "clip_grad_norm", "batch"} <= set(phases)
    assert phases["forward"] > 0 and phases["backward"] > 0 and phases["optimizer"] > 0
    # nearly all op time lies inside the labelled phases
    assert phases.get("other (outside the step's phases)", 0) < 0.05 * sum(phases.values())
    assert result["forward_backward_ms_per_step_by_category"]["matmul"] > 0
    assert set(result["forward_ms_per_step_cpu_inclusive"]) == {
        "forward: encoder",
        "forward: attention block 0",
        "forward: classifier",
    }


def test_train_throughput_with_real_lengths_trims_batches(tmp_path):
    import train_step

    texts = tmp_path / "texts.parquet"
    import pandas as pd

    pd.DataFrame({"text": ["short text"] * 30 + ["a somewhat longer text " * 3] * 2}).to_parquet(
        texts
    )
    result = train_step.main(
        [
            "throughput",
            "--quick",
            "--encoders",
            "minilm",
            "--variants",
            "lttw",
            "--precisions",
            "fp32",
            "--lengths-from",
            str(texts),
            "--out",
            str(tmp_path / "t.json"),
        ]
    )
    row = result["rows"][0]
    assert row["lengths_from"] == str(texts)
    assert 8 <= row["mean_batch_width"] < 32  # quick seq 32: most batches trim to 8
    full = train_step.main(
        [
            "throughput",
            "--quick",
            "--encoders",
            "minilm",
            "--variants",
            "lttw",
            "--precisions",
            "fp32",
            "--out",
            str(tmp_path / "f.json"),
        ]
    )
    assert row["gflops_per_sample_fwd_bwd"] < full["rows"][0]["gflops_per_sample_fwd_bwd"]


def test_attention_mode_times_linformer_and_both_mhas(tmp_path):
    """`train_step.py attention`: one block per kind and length, the SDPA kernel that ran."""
    import train_step

    out = tmp_path / "attention.json"
    result = train_step.main(
        ["attention", "--quick", "--ns", "64,128", "--reps", "1", "--warmup", "1"]
        + ["--out", str(out)]
    )
    assert json.loads(out.read_text()) == result
    rows = result["rows"]
    assert {(r["n"], r["kind"]) for r in rows} == {
        (n, kind) for n in (64, 128) for kind in ("linformer", "mha", "mha_nomask")
    }
    assert all(r["ms_median"] > 0 and r["sdpa_kernel"] for r in rows)


@pytest.mark.slow
def test_startup_times_a_stage_as_dvc_runs_it(tmp_path, tiny_repro):
    """bench/startup.py stage times a stage as DVC runs it (in a copy of the session's tiny
    run, whose outputs it reads), and says what the stage imported."""
    import startup

    project = tiny_repro.copy(tmp_path / "p")
    out = tmp_path / "startup.json"
    result = startup.main(
        [
            "stage",
            "--project",
            str(project),
            "--stage",
            "nmf",
            "--fold",
            "0",
            "--runs",
            "1",
            "--out",
            str(out),
        ]
    )
    assert json.loads(out.read_text()) == result
    assert result["command"] == "python stages/nmf.py --fold 0" and result["median_s"] > 0
    assert result["imported"]["transformers"] is False


def test_gpu_sh_packs_minilm_in_fp16_that_loads_as_fp32(tmp_path):
    """`bench/gpu.sh --pack-fp16 DIR`: a MiniLM copy small enough to carry (< 64 MiB) that
    lttw loads as a float32 encoder giving the original's outputs to fp16 precision."""
    import subprocess

    from lttw.encoder.pretrained import DEFAULT_ENCODER, load_pretrained_encoder, resolve_encoder

    original = Path(resolve_encoder(DEFAULT_ENCODER))
    if not (original / "model.safetensors").is_file():
        pytest.skip("the embedded MiniLM package is not installed")
    packed = tmp_path / "minilm"
    proc = subprocess.run(
        ["bash", str(BENCH / "gpu.sh"), "--pack-fp16", str(packed)],
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "PYTHON": sys.executable},
    )
    assert proc.returncode == 0, proc.stderr
    size = sum(f.stat().st_size for f in packed.iterdir())
    assert size < 64 * 2**20 and (packed / "tokenizer.json").is_file()
    ids = torch.tensor([[101, 7592, 2088, 102]])
    outputs = []
    for folder in (original, packed):
        model = load_pretrained_encoder(folder).eval()
        assert next(model.parameters()).dtype == torch.float32
        with torch.no_grad():
            outputs.append(model(input_ids=ids).last_hidden_state)
    torch.testing.assert_close(outputs[1], outputs[0], atol=5e-3, rtol=5e-3)
    # and as the few-shot baselines read it: a sentence-transformers body (mean pooling,
    # normalised), in fp32, the original's sentence vectors to fp16 precision
    from steps.few_shot import sentence_body

    texts = ["Stocks rally as oil prices fall", "A late goal wins the cup final"]
    vectors = []
    for folder in (original, packed):
        body = sentence_body(folder, "cpu")
        assert next(body.parameters()).dtype == torch.float32
        assert [type(m).__name__ for m in body] == ["Transformer", "Pooling", "Normalize"]
        vectors.append(torch.as_tensor(body.encode(texts)))
    torch.testing.assert_close(vectors[1], vectors[0], atol=5e-3, rtol=5e-3)


def test_gpu_sh_few_shot_runs_the_baselines_on_its_device(tmp_path, tiny_encoder_dir):
    """`bench/gpu.sh few-shot ...` is `small_data.py few-shot --device cuda ...` (here its CPU
    dry run, `--device cpu`), with the body from `--encoder`; each run records its device."""
    import os
    import subprocess

    import pandas as pd

    data = tmp_path / "data" / "tiny"
    data.mkdir(parents=True)
    words = {0: "stocks market bank oil price", 1: "goal match team cup season"}
    rows = [(f"{words[label]} {i}", label) for label in (0, 1) for i in range(6)]
    frame = pd.DataFrame(rows, columns=["body", "y"])
    frame.to_parquet(data / "train.parquet")
    frame.to_parquet(data / "test.parquet")
    manifest = {
        "text_column": "body",
        "label_column": "y",
        "classes": ["business", "sport"],
        "splits": {"train": "train.parquet", "test": "test.parquet"},
    }
    (data / "manifest.json").write_text(json.dumps(manifest))
    out = tmp_path / "few_shot.json"
    args = ["--datasets", "tiny", "--per-class", "2", "--seeds", "1", "--methods", "frozen_lr"]
    args += ["--encoder", str(tiny_encoder_dir), "--data-root", str(data.parent)]
    proc = subprocess.run(
        ["bash", str(BENCH / "gpu.sh"), "few-shot", *args, "--out", str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHON": sys.executable, "LTTW_BENCH_QUICK": "1", "OUT": ""},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    written = json.loads(out.read_text())
    (run,) = written["runs"]
    assert (run["method"], run["device"], run["test_rows"]) == ("frozen_lr", "cpu", 12)
    assert 0 <= run["accuracy"] <= 1
    assert run["machine"].startswith(written["machine"]["cpu"] + ", ")  # the run's machine
    assert written["table"][0]["machines"] == [run["machine"]]


def test_serve_bench_reports_the_median_run_and_sums_failures():
    from steps.serve_load import median_run

    def row(rate, failed=0, wrong=0):
        return {
            "texts_per_s": rate,
            "failed": failed,
            "labels_differing_from_batch_path": wrong,
            "p99_ms": 1000 / rate,
        }

    runs = [row(123.5, wrong=1), row(87.2, failed=2), row(98.7)]
    median = median_run(runs)
    assert median["texts_per_s"] == 98.7 and median["p99_ms"] == 1000 / 98.7
    assert median["runs_texts_per_s"] == [123.5, 87.2, 98.7]
    assert median["failed_all_runs"] == 2 and median["labels_differing_all_runs"] == 1
    assert median_run([row(2.0), row(1.0)])["texts_per_s"] == 1.0  # the lower middle one


def test_machine_description_names_the_instruction_sets_that_set_the_speed(tmp_path):
    """Two AMD EPYC machines of one name, with and without VNNI / bf16, tell apart."""
    from common import cpu_flags

    info = tmp_path / "cpuinfo"
    info.write_text(
        "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse2 avx2 avx512f "
        "avx512_vnni avx512_bf16 sha_ni\n",
        encoding="utf-8",
    )
    assert cpu_flags(str(info)) == ["avx2", "avx512f", "avx512_vnni", "avx512_bf16"]
    info.write_text("model name\t: AMD EPYC\nflags\t\t: fpu avx2 fma\n", encoding="utf-8")
    assert cpu_flags(str(info)) == ["avx2"]
    assert cpu_flags(str(tmp_path / "missing")) == []


def test_predict_throughput_builds_and_measures_a_synthetic_lttw_folder(tmp_path, tiny_encoder_dir):
    """--synthetic (the GPU runner's path): a model folder with latent factors that
    `Predictor` loads (k, s and rank as numbers, as the pipeline records them), measured."""
    import prediction

    texts = tmp_path / "texts.txt"
    texts.write_text(
        "stocks rally as oil prices fall\nlate goal wins the final\n", encoding="utf-8"
    )
    out = tmp_path / "predict.json"
    result = prediction.main(
        [
            "batch",
            "--synthetic",
            "--encoder",
            str(tiny_encoder_dir),
            "--quick",
            "--max-len",
            "32",
            "--n",
            "16",
            "--texts",
            str(texts),
            "--out",
            str(out),
        ]
    )
    assert json.loads(out.read_text()) == result
    (row,) = result["rows"]
    assert row["texts_per_s"] > 0 and row["device"] == "cpu" and row["batch_size"] == 64


def test_suite_cpu_logs_each_python_process_and_sums_by_test_and_program(tmp_path):
    """The logging site records a process's own CPU, its test and argv at exit; the summary
    adds them up by test file and by program (``bench/suite_cpu.py``)."""
    import os
    import subprocess

    import suite_cpu

    log = tmp_path / "processes.tsv"
    script = tmp_path / "stages" / "busy.py"
    script.parent.mkdir()
    script.write_text("sum(i * i for i in range(3_000_000))\n")
    env = {
        **os.environ,
        "PYTHONPATH": str(suite_cpu.SITE),
        "SUITE_CPU_LOG": str(log),
        "PYTEST_CURRENT_TEST": "tests/x/test_a.py::test_one (call)",
    }
    for args in ([str(script)], ["-c", "pass"]):
        subprocess.run([sys.executable, *args], env=env, check=True)
    procs = suite_cpu.read_log(log.read_text() + "a line cut sh")
    assert [p["test"] for p in procs] == ["tests/x/test_a.py"] * 2
    busy, idle = procs
    assert busy["argv"] == str(script) and busy["cpu_s"] > idle["cpu_s"]
    summary = suite_cpu.summarise(procs)
    assert summary["logged_processes"] == 2
    assert summary["by_test_file"]["tests/x/test_a.py"]["processes"] == 2
    assert list(summary["by_program"]) == ["stage busy", "python -c (xdist workers, ...)"]
    assert suite_cpu.program("/venv/bin/dvc repro") == "dvc"
    assert suite_cpu.program("/venv/lib/dvc/__main__.py exp show") == "dvc"
    out = tmp_path / "suite.json"
    result = suite_cpu.main(["--log", str(log), "--out", str(out)])
    assert json.loads(out.read_text())["summary"] == result["summary"] == summary


def test_few_shot_resume_keeps_only_runs_of_the_same_settings(tmp_path):
    """--resume keeps an earlier file's runs only where its test rows, data and lttw settings
    (--lttw-set) are the command's, each naming the machine it ran on (the earlier file's
    where the run names none); else one line naming the option."""
    import argparse

    from steps.few_shot import kept_runs

    out = tmp_path / "few_shot.json"
    now = argparse.Namespace(test_rows=0, data_root=tmp_path, lttw_set=[], out=out)
    assert kept_runs(out, now) == []  # no file yet
    earlier = {"test_rows": 0, "data_root": str(tmp_path), "lttw_set": []}
    there = {"cpu": "AMD EPYC", "cpu_flags": ["avx2"], "cpus_usable": 2}
    runs = [{"method": "setfit"}, {"method": "lttw", "machine": "Xeon, avx512f, 16 cores"}]
    out.write_text(json.dumps({"settings": earlier, "machine": there, "runs": runs}))
    assert kept_runs(out, now) == [
        {"method": "setfit", "machine": "AMD EPYC, avx2, 2 cores"},
        {"method": "lttw", "machine": "Xeon, avx512f, 16 cores"},
    ]
    frozen = argparse.Namespace(**{**vars(now), "lttw_set": ["train.freeze_encoder=false"]})
    with pytest.raises(SystemExit, match="--lttw-set"):
        kept_runs(out, frozen)


@pytest.mark.skip(
    reason="bench/small_data.py few-shot at its smallest (one seed, 8 a class, 50 test rows a class) "
    "runs lttw init + dvc repro of eight folds and SetFit's contrastive epoch: minutes on a "
    "CPU, far past this suite's seconds; run it by hand (its docstring)"
)
def test_few_shot_bench_smallest(tmp_path):
    import small_data
    from steps.few_shot import METHODS

    out = small_data.main(
        [
            "few-shot",
            "--datasets",
            "ag_news",
            "--per-class",
            "8",
            "--seeds",
            "1",
            "--test-rows",
            "50",
        ]
        + ["--out", str(tmp_path / "few_shot.json")]
    )
    assert {row["method"] for row in out["table"]} == set(METHODS)


def modes_of(script: str) -> list[str]:
    """The modes a bench script (``script``: its name) hands to ``common.run_mode`` (the keys of its ``modes``
    dict), [] for a script without modes: read from its source, nothing imported."""
    import ast

    tree = ast.parse((BENCH / f"{script}.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            if any(getattr(target, "id", None) == "modes" for target in node.targets):
                return [key.value for key in node.value.keys if isinstance(key, ast.Constant)]
    return []


def test_bench_is_one_script_per_question_and_every_command_names_a_mode():
    """At most 8 scripts at bench/'s top level (common.py the shared code, each part of a
    question a mode); every bench command (script, then mode) in the docs, the README and
    bench/README.md names a script that exists and, for a script with modes, one of them."""
    import re

    root = BENCH.parent
    scripts = sorted(p.stem for p in BENCH.glob("*.py"))
    assert len(scripts) <= 8, scripts
    modes = {name: modes_of(name) for name in scripts if name != "common"}
    assert modes["train_step"] == ["throughput", "profile", "attention", "compile-summary"]
    assert modes["prediction"] == ["batch", "serve", "ray"]
    pages = [root / "README.md", BENCH / "README.md", *sorted((root / "docs").rglob("*.md"))]
    commands = 0
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for name, rest in re.findall(r"bench/([a-z_]+)\.py(?: +([\w-]+))?", text):
            assert name in modes, f"{page}: bench/{name}.py"
            if modes[name] and rest and not rest.startswith("-"):
                assert rest in modes[name], f"{page}: bench/{name}.py {rest}"
                commands += 1
    assert commands > 20


def test_repro_times_dvc_repro_in_a_fresh_clone_and_names_the_machine(tmp_path):
    """``bench/startup.py repro`` (the README's ``make repro`` figure): a fresh clone of the
    checkout's HEAD, ``dvc repro`` there from an empty cache, its wall time beside the
    machine (CPU, instruction sets, cores) and the held-out F1 it reached."""
    import subprocess

    import startup

    repo = tmp_path / "repo"
    (repo / ".dvc").mkdir(parents=True)
    (repo / ".dvc" / "config").write_text("")
    (repo / "make.py").write_text(
        "import json, pathlib\npathlib.Path('metrics').mkdir(exist_ok=True)\n"
        "pathlib.Path('metrics/summary.json').write_text("
        "json.dumps({'test/f1_macro': {'mean': 0.5}}))\n"
    )
    (repo / "dvc.yaml").write_text(
        "stages:\n  summary:\n    cmd: python make.py\n    deps: [make.py]\n"
        "    metrics:\n    - metrics/summary.json:\n        cache: false\n"
    )
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "pipeline"], check=True)
    out = tmp_path / "repro.json"
    result = startup.main(["repro", "--repo", str(repo), "--out", str(out)])
    assert json.loads(out.read_text()) == result
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True)
    assert result["commit"] == head.stdout.strip() and result["seconds"] > 0
    assert result["held_out_f1_macro"] == 0.5
    assert "dvc.lock" in result["files_rewritten"]  # the clone had none committed
    machine = result["machine"]
    assert machine["cpu"] and machine["cpus_usable"] >= 1 and machine["dvc"]
    assert not (repo / "metrics").exists()  # the checkout itself is left alone


def test_readme_timings_name_their_machine_and_the_command_that_reruns_them():
    """Every wall time in the README (``4 min 3 s``, ``637 s``) stands in a paragraph that
    names the machine (cores, CPU, instruction sets) and the command that measures it again
    (a bench script, or ``time`` of the command itself)."""
    import re

    text = re.sub(r"```.*?```", "", (BENCH.parent / "README.md").read_text(), flags=re.S)
    timed = [
        para for para in text.split("\n\n") if re.search(r"\b\d+ (?:min|s|seconds|minutes)\b", para)
    ]
    assert timed
    for para in timed:
        assert re.search(r"\d-core AMD EPYC with (?:AVX2|AVX-512)", para), para
        assert re.search(r"`python bench/\w+\.py|`time ", para), para
