"""The paper's hyper-parameter sweeps (section 4.3, Tables 6-8, AG News) as DVC experiment grids.

A sweep is a list of settings of one or two parameters; ``lttw sweep NAME`` queues one
``dvc exp run --queue -n NAME-KEY -S ...`` per setting (``-frozen`` appended to the name with
``--frozen``, i.e. ``train.freeze_encoder: true``) and runs the queue. Every experiment starts
from the same commit, so the samples, folds, tokens, counts and NMF are DVC's cached ones:
only the stages that read the swept parameter rerun (a k / s change: features, train,
evaluate, summary). ``lttw report`` finds the experiments by these names
(``reporting.sweep_report``).

The paper's numbers are P / R / F1 in % (Tables 6-8); the only numbers written here.
Table 6 gives the total k + s only; it is split evenly, the odd one to the top words
(25 = 13 + 12, 15 = 8 + 7). Two cells of the paper are misprinted and read as the
neighbouring cells imply: Table 6's F1 at 10 ("93.303", with P 93.05 and R 93.02: 93.03)
and Table 8's F1 at K = 16 ("3.17": 93.17).
"""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lttw.errors import UserError

FROZEN_SUFFIX = "-frozen"


@dataclass(frozen=True)
class Setting:
    key: str  # in the experiment's name: letters, digits, '-'
    label: str  # in the report
    params: dict[str, Any]  # dotted params.yaml name -> value
    paper: tuple[float, float, float]  # the paper's P / R / F1 (%)


@dataclass(frozen=True)
class Sweep:
    name: str
    title: str
    column: str  # the report's first column
    settings: tuple[Setting, ...]
    chosen: str  # the key of the paper's chosen setting (the paired tests' reference)

    def experiment(self, key: str, frozen: bool = False) -> str:
        return f"{self.name}-{key}{FROZEN_SUFFIX if frozen else ''}"

    def setting(self, key: str) -> Setting:
        return next(s for s in self.settings if s.key == key)


def _lr(value: float) -> str:
    return f"{value:.0e}".replace("e-0", "e-")


def _sweeps() -> dict[str, Sweep]:
    def ks(rows, key, label):  # settings of model.k / model.s from (k, s, paper) rows
        return tuple(
            Setting(key(k, s), label(k, s), {"model.k": k, "model.s": s}, paper)
            for k, s, paper in rows
        )

    def single(prefix, param, rows):  # settings of one parameter from (value, paper) rows
        return tuple(Setting(f"{prefix}{v}", str(v), {param: v}, paper) for v, paper in rows)

    sweeps = [
        Sweep(
            "table6",
            "Table 6: number of latent factors (k + s)",
            "k + s",
            ks(
                (
                    (15, 15, (93.46, 93.44, 93.41)),
                    (13, 12, (93.58, 93.52, 93.53)),
                    (10, 10, (93.65, 93.62, 93.64)),
                    (8, 7, (93.36, 93.34, 93.33)),
                    (5, 5, (93.05, 93.02, 93.03)),
                ),
                lambda k, s: f"ks{k + s}",
                lambda k, s: f"{k + s} ({k} + {s})",
            ),
            "ks20",
        ),
        Sweep(
            "table7",
            "Table 7: top k + bottom s latent factors",
            "k + s",
            ks(
                (
                    (15, 15, (93.08, 93.06, 93.03)),
                    (15, 5, (93.60, 93.58, 93.58)),
                    (10, 10, (93.73, 93.73, 93.70)),
                    (5, 15, (93.38, 93.36, 93.37)),
                    (5, 5, (93.36, 93.34, 93.33)),
                ),
                lambda k, s: f"k{k}s{s}",
                lambda k, s: f"{k} + {s}",
            ),
            "k10s10",
        ),
        Sweep(
            "table8-depth",
            "Table 8: depth (attention blocks)",
            "depth",
            single(
                "depth",
                "model.depth",
                (
                    (1, (93.73, 93.71, 93.70)),
                    (2, (93.47, 93.44, 93.43)),
                    (3, (92.82, 92.81, 92.78)),
                    (4, (93.32, 93.22, 93.24)),
                    (5, (92.80, 92.76, 92.76)),
                ),
            ),
            "depth1",
        ),
        Sweep(
            "table8-K",
            "Table 8: Linformer K",
            "K",
            single(
                "K",
                "model.linformer_k",
                (
                    (8, (92.80, 92.76, 92.76)),
                    (16, (93.22, 93.17, 93.17)),
                    (32, (93.73, 93.71, 93.70)),
                    (64, (93.00, 92.98, 92.96)),
                    (128, (93.12, 93.10, 93.09)),
                ),
            ),
            "K32",
        ),
        Sweep(
            "table8-batch",
            "Table 8: batch size",
            "batch",
            single(
                "batch",
                "train.batch_size",
                (
                    (16, (93.02, 92.92, 92.96)),
                    (32, (93.13, 93.15, 93.14)),
                    (64, (93.69, 93.62, 93.62)),
                    (128, (93.73, 93.71, 93.70)),
                    (256, (93.21, 93.14, 93.16)),
                ),
            ),
            "batch128",
        ),
        # the paper has one learning rate: here it sets the encoder's and the new layers'
        Sweep(
            "table8-lr",
            "Table 8: learning rate (encoder and new layers)",
            "lr",
            tuple(
                Setting(f"lr{_lr(lr)}", _lr(lr), {"train.lr": lr, "train.head_lr": lr}, paper)
                for lr, paper in (
                    (1e-5, (93.46, 93.42, 93.43)),
                    (2e-5, (93.73, 93.71, 93.70)),
                    (3e-5, (93.39, 93.32, 93.34)),
                    (4e-5, (93.01, 93.01, 93.00)),
                    (5e-5, (92.88, 92.86, 92.85)),
                )
            ),
            "lr2e-5",
        ),
    ]
    return {s.name: s for s in sweeps}


SWEEPS = _sweeps()
#: ``make table8`` runs these four
TABLE8 = ("table8-depth", "table8-K", "table8-batch", "table8-lr")


def get_sweep(name: str) -> Sweep:
    if name not in SWEEPS:
        raise UserError(f"unknown sweep {name!r}; one of {', '.join(SWEEPS)}")
    return SWEEPS[name]


def param_value(value: Any) -> str:
    """A value as ``-S`` takes it (floats in a YAML 1.1 form, which every reader parses)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        mantissa, exponent = f"{value:e}".split("e")
        return f"{float(mantissa)}e{int(exponent)}" if math.log10(abs(value)) < -3 else repr(value)
    return str(value)


def queue_commands(
    sweep: Sweep, frozen: bool, extra: Sequence[str] = (), only: list[str] | None = None
) -> list[list[str]]:
    """One ``dvc exp run --queue`` per setting (``only``: these keys), each naming its
    experiment and setting ``train.freeze_encoder`` and the swept parameters; ``extra``:
    more ``-S`` assignments for every setting (e.g. ``folds.run=[0,1,2]``)."""
    keys = [s.key for s in sweep.settings]
    unknown = [k for k in only or () if k not in keys]
    if unknown:
        raise UserError(
            f"{sweep.name} has no setting {', '.join(unknown)}; its settings: {', '.join(keys)}"
        )
    commands = []
    for setting in sweep.settings:
        if only and setting.key not in only:
            continue
        assignments = [
            f"train.freeze_encoder={param_value(frozen)}",
            *(f"{k}={param_value(v)}" for k, v in setting.params.items()),
            *extra,
        ]
        commands.append(
            [
                sys.executable,
                "-m",
                "dvc",
                "exp",
                "run",
                "--queue",
                "-n",
                sweep.experiment(setting.key, frozen),
                *(arg for a in assignments for arg in ("-S", a)),
            ]
        )
    return commands


def sweep_commands(
    name: str, frozen: bool, extra: list[str], only: list[str] | None, run: bool, data_root
) -> list[list[str]]:
    """``lttw sweep``'s commands: queue the settings, then (``run``) run the queue. Queued
    experiments run in a copy of the repository, where a relative ``data.root`` does not
    resolve: they get ``data_root`` (absolute) unless ``extra`` sets it."""
    if not any(a.startswith("data.root=") for a in extra):
        extra = [*extra, f"data.root={data_root}"]
    commands = queue_commands(get_sweep(name), frozen, extra, only)
    taken = sorted(set(c[c.index("-n") + 1] for c in commands) & existing_experiments())
    if taken:
        raise UserError(
            f"experiments {', '.join(taken)} exist already for this commit; "
            f"remove them first (`dvc exp remove {' '.join(taken)}`)"
        )
    if run:
        commands.append([sys.executable, "-m", "dvc", "exp", "run", "--run-all"])
    return commands


def existing_experiments(cwd: str = ".") -> set[str]:
    """Names of the experiments of the current commit (``dvc exp list --name-only``;
    none where dvc cannot tell)."""
    proc = subprocess.run(
        [sys.executable, "-m", "dvc", "exp", "list", "--name-only"],
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    return set(proc.stdout.split()) if proc.returncode == 0 else set()


def run_commands(commands: list[list[str]], cwd: str = ".") -> None:
    """Run each command in turn (its output passes through); stop at the first failure."""
    for command in commands:
        shown = " ".join(command[2:] if command[0] == sys.executable else command)
        print(f"$ {shown}", flush=True)
        if subprocess.run(command, cwd=cwd).returncode != 0:
            raise UserError(f"`{shown}` failed (its output is above)")
