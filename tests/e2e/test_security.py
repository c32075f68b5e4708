"""Static safety checks: no unsafe deserialisation or remote code anywhere, outputs only under
the output folders, no parameter naming an output path."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import yaml
from support.params import base_params

from lttw import layout

REPO = Path(__file__).resolve().parents[2]
OUTPUT_ROOTS = ("data", "metrics", "models", "dvclive")


# ------------------------------------------------------------------ security

UNSAFE = [
    (
        re.compile(r"^\s*(import|from)\s+(c?pickle|dill|cloudpickle|joblib)\b"),
        "imports a pickle module",
    ),
    (re.compile(r"\b(c?pickle|dill|cloudpickle)\.loads?\("), "unpickles"),
    (re.compile(r"\bjoblib\b"), "uses joblib"),
    (re.compile(r"\btrust_remote_code\s*=\s*True"), "runs remote code"),
    (re.compile(r"\ballow_pickle\s*=\s*True"), "allows pickle in numpy"),
    (re.compile(r"\b(pd|pandas)\.read_pickle\(|\.to_pickle\("), "uses pandas pickle"),
    (re.compile(r"\btorch\.save\("), "writes a pickle (torch.save)"),
    (re.compile(r"\byaml\.(unsafe_)?load\((?![^)]*SafeLoader)"), "unsafe YAML load"),
]


def _calls(source: str, name: str) -> list[tuple[int, str]]:
    """(line number, full call text) of every ``name(`` call in ``source``."""
    out = []
    for match in re.finditer(re.escape(name) + r"\(", source):
        depth, end = 0, match.end() - 1
        for end in range(match.end() - 1, len(source)):
            depth += {"(": 1, ")": -1}.get(source[end], 0)
            if depth == 0:
                break
        out.append((source.count("\n", 0, match.start()) + 1, source[match.start() : end + 1]))
    return out


def unsafe_code(paths: list[Path], base: Path = REPO) -> list[str]:
    """``file:line: what: code`` for every unsafe (de)serialisation in ``paths``."""
    offenders = []
    for path in paths:
        source = path.read_text(encoding="utf-8")
        where = path.relative_to(base)
        for number, line in enumerate(source.splitlines(), 1):
            code = line.split("#", 1)[0]
            for pattern, what in UNSAFE:
                if pattern.search(code):
                    offenders.append(f"{where}:{number}: {what}: {line.strip()}")
        for number, call in _calls(source, "torch.load"):
            if not re.search(r"weights_only\s*=\s*True", call):
                offenders.append(
                    f"{where}:{number}: torch.load without weights_only=True: "
                    f"{call.splitlines()[0]}"
                )
    return offenders


def test_no_unsafe_deserialisation_in_code():
    paths = sorted((REPO / "src").rglob("*.py")) + sorted((REPO / "stages").glob("*.py"))
    assert len(paths) > 20
    offenders = unsafe_code(paths)
    assert not offenders, "unsafe code:\n" + "\n".join(offenders)


def test_unsafe_code_detector_finds_offenders(tmp_path):
    bad = tmp_path / "probe.py"
    bad.write_text(
        "import pickle\nx = torch.load(\n    f, map_location='cpu')\n"
        "y = torch.load(f, weights_only=True)\nm(trust_remote_code=True)\n"
        "np.load(f, allow_pickle=True)\nimport joblib\nyaml.load(s)\n"
        "ok = yaml.load(s, Loader=yaml.SafeLoader)\n# import pickle\n"
    )
    found = unsafe_code([bad], base=tmp_path)
    assert [f.split(":")[1] for f in found] == ["1", "5", "6", "7", "7", "8", "2"], found


def _dvc_outputs() -> list[str]:
    spec = yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))
    outs = []
    for stage in spec["stages"].values():
        body = stage.get("do", stage)
        for key in ("outs", "metrics", "plots"):
            for entry in body.get(key, []):
                outs.append(next(iter(entry)) if isinstance(entry, dict) else entry)
    return outs


def test_outputs_only_under_output_folders():
    """Outputs come from layout.py / dvc.yaml, never from a parameter: no ``${param}`` in any
    output path (only the foreach ``${item}``), and every path lies under data/, metrics/,
    models/ or dvclive/."""
    outs = _dvc_outputs()
    assert len(outs) >= 12
    for out in outs:
        assert Path(out).parts[0] in OUTPUT_ROOTS, out
        assert set(re.findall(r"\$\{([^}]*)\}", out)) <= {"item"}, out
    checked = 0
    for name in dir(layout):
        value = getattr(layout, name)
        if isinstance(value, Path):
            path = value
        elif (
            inspect.isfunction(value) and value.__module__ == layout.__name__ and name != "fold_dir"
        ):
            path = value(*[0] * len(inspect.signature(value).parameters))
        else:
            continue
        assert isinstance(path, Path) and path.parts[0] in OUTPUT_ROOTS, (name, path)
        assert ".." not in path.parts and not path.is_absolute(), (name, path)
        checked += 1
    assert checked >= 20


def test_no_parameter_names_an_output_path():
    """The only path-valued parameters are inputs (data.root, data.dataset, model.encoder)."""
    path_like = {"root", "dataset", "encoder"}
    flat = []
    for group, values in base_params().items():
        for name in values if isinstance(values, dict) else {group: values}:
            flat.append(name)
            assert not re.search(
                r"(^|_)(out|output|outdir|save|dest|dir|path|file)s?($|_)", name
            ), f"{group}.{name} looks like an output path"
    assert path_like <= set(flat)
    stages_src = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "stages").glob("*.py"))
    for name in path_like:  # inputs are read, never written to
        assert not re.search(
            rf"(atomic_dir|atomic_path|write_\w+|to_parquet)\([^)]*\.{name}\b", stages_src
        ), name
