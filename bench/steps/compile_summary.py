"""The training step with ``torch.compile`` off and on, side by side: reads the JSON that
``bench/gpu.sh profile`` writes (``bench/results/profile-train-<encoder>-compile-<mode>.json``,
from ``bench/train_step.py profile``) and writes ``bench/results/profile_compile.json``: the
card's name and, per encoder and mode, the step's time and its 60,000-text epoch beside the
GPU target (MiniLM <= 3 s, BERT-base <= 10 s).

    python bench/train_step.py compile-summary
"""

from __future__ import annotations

import json
from pathlib import Path

from common import RESULTS  # (bench/ is on sys.path: the script's folder)

PATTERN = "profile-train-*-compile-*.json"


def summary(folder: Path = RESULTS) -> dict:
    rows, cards = [], set()
    for path in sorted(folder.glob(PATTERN)):
        run = json.loads(path.read_text(encoding="utf-8"))
        cards.add(run.get("device_name"))
        rows.append(
            {
                "file": path.name,
                "encoder": run["settings"]["encoder"],
                "precision": run["settings"]["precision"],
                "compiled": run["compiled"],
                "step_ms": run["step_ms"],
                "epoch_s": run.get("epoch_s"),
                "target_epoch_s": run.get("target_epoch_s"),
            }
        )
    return {"card": ", ".join(sorted(str(c) for c in cards)) or None, "rows": rows}


def main(argv: list[str] | None = None) -> dict:
    if argv:
        raise SystemExit(f"compile-summary takes no options (not {' '.join(argv)})")
    result = summary()
    if not result["rows"]:
        raise SystemExit(f"no {PATTERN} in {RESULTS}: run bench/gpu.sh profile first")
    (RESULTS / "profile_compile.json").write_text(json.dumps(result, indent=2) + "\n")
    for row in result["rows"]:
        target = row["target_epoch_s"]
        print(
            f"# {result['card']} | {row['encoder']:9} {row['precision']} compiled "
            f"{row['compiled']!s:5} | {row['step_ms']} ms/step | {row['epoch_s']} s per 60k "
            f"epoch" + (f" (target <= {target} s)" if target else "")
        )
    print(f"# wrote {RESULTS / 'profile_compile.json'}")
    return result
