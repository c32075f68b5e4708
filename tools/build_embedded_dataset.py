"""Build the embedded default dataset, ``datasets/ag_news/``, from a full AG News folder.

The default profile (params.yaml: 2,500 train rows, 1,000 test and 500 predict rows, class
balanced, test and predict from the test split) draws its samples from the folder this script
writes, and so can any profile up to ``DRAW``'s sizes. It holds:

* every row a ``DRAW``-sized sample (5,000 train, 1,000 test and 1,000 predict rows, with
  params.yaml's other data settings) draws from the full folder (the sample stage's own draw,
  seed 42), so none of those rows is missing here;
* a seeded, class-balanced margin of other rows of the same splits, so that the sample stage
  still samples (it draws 5,000 of the train rows here at most, not all of them).

Deterministic: the same full folder gives byte-identical files (parquet written without
timestamps, rows sorted). The manifest names the source, its licence terms and each file's
sha256. Run it where a full AG News folder is (the workplace's copy, or one fetched with
``lttw data fetch ag_news --to DIR``)::

    python tools/build_embedded_dataset.py --from DIR/ag_news            # rewrite datasets/ag_news
    python tools/build_embedded_dataset.py --from DIR/ag_news --check    # exit 1 where it differs
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))  # lttw from this checkout when it is not installed

from lttw.data.dataset_manifest import file_sha256  # noqa: E402
from lttw.data.datasets import load_dataset  # noqa: E402
from lttw.data.sampling import draw_samples  # noqa: E402
from lttw.settings import read_settings  # noqa: E402

#: where the sample lives, relative to the repository root
TARGET = Path("datasets") / "ag_news"
#: the sample sizes whose draw from the full data the folder holds (params.yaml's are smaller)
DRAW = {"train_size": 5000, "test_size": 1000, "predict_size": 1000}
#: rows per class in each split of the sample: the draw of ``DRAW`` plus a margin
PER_CLASS = {"train": 1500, "test": 625}
SEED = 20240501
HUB = "fancyzhx/ag_news"
LICENCE = (
    "No licence is stated (the Hugging Face card says 'unknown'). The AG corpus, from which "
    "Zhang, Zhao & LeCun (2015) built AG News, is provided by the academic community for "
    "research purposes and any other non-commercial activity "
    "(http://groups.di.unipi.it/~gulli/AG_corpus_of_news_articles.html)."
)


def build(source: Path, out: Path) -> dict:
    """Write the sample's parquet files and manifest.json into ``out``; the manifest."""
    settings = read_settings(ROOT / "params.yaml")
    data = settings.data.model_copy(
        update={"root": str(source.parent), "dataset": source.name, **DRAW}
    )
    dataset = load_dataset(data)
    frames, info = draw_samples(dataset, data, settings.seed)
    drawn = set(np.concatenate([f["source_row"].to_numpy() for f in frames.values()]).tolist())
    position = {row: i for i, row in enumerate(dataset.source_rows.tolist())}
    rng = np.random.default_rng(SEED)
    manifest_in = json.loads((source / "manifest.json").read_text(encoding="utf-8"))
    files, rows, checksums = {}, {}, {}
    for split, per_class in PER_CLASS.items():
        chosen = []
        in_split = np.flatnonzero(dataset.splits == split)
        for c in range(len(dataset.classes)):
            of_class = in_split[dataset.labels[in_split] == c]
            must = [i for i in of_class if int(dataset.source_rows[i]) in drawn]
            rest = np.setdiff1d(of_class, must)
            extra = rng.choice(rest, size=per_class - len(must), replace=False)
            chosen.extend(must + sorted(extra.tolist()))
        chosen = sorted(chosen, key=lambda i: int(dataset.source_rows[i]))
        frame = pd.DataFrame(
            {
                "text": pd.array(dataset.texts[chosen].tolist(), dtype="str"),
                "label": dataset.labels[chosen].astype(np.int64),
            }
        )
        name = f"{split}.parquet"
        frame.to_parquet(out / name, index=False, compression="zstd")
        files[split], rows[split] = name, len(frame)
        checksums[name] = file_sha256(out / name)
    assert all(int(r) in position for r in drawn)
    manifest = {
        "name": "ag_news",
        "description": "AG News topic classification (Zhang, Zhao & LeCun 2015): the embedded, "
        "class-balanced sample the default profile draws from",
        "text_column": "text",
        "label_column": "label",
        "classes": list(dataset.classes),
        "splits": files,
        "rows": rows,
        "official_rows": manifest_in.get("official_rows", {"train": 120000, "test": 7600}),
        "complete": False,
        "hub_dataset": HUB,
        "source": "AG News (Zhang, Zhao & LeCun 2015, from A. Gulli's AG corpus of news "
        f"articles; on the Hugging Face hub as {HUB}): rows of its official train and test "
        "splits, text = title + ' ' + description (a quarter of the train rows hold the description only)",
        "licence": LICENCE,
        "sha256": checksums,
        "built_by": "tools/build_embedded_dataset.py",
        "seed": SEED,
        "notes": f"{PER_CLASS['train']:,} train and {PER_CLASS['test']:,} test rows per class: "
        "every row a 5,000 / 1,000 / 1,000 sample (seed 42) draws from the full data (the "
        "default profile draws fewer from here), plus a seeded "
        "margin of other rows. The full data: `lttw data fetch ag_news`.",
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--from",
        dest="source",
        type=Path,
        required=True,
        help="a full AG News dataset folder (manifest.json + parquet files)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 where the files in the repository differ from a rebuild",
    )
    args = parser.parse_args()
    target = ROOT / TARGET
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as tmp:
        built = build(args.source.resolve(), Path(tmp))
        names = ["manifest.json", *built["splits"].values()]
        if args.check:
            stale = [
                n
                for n in names
                if not (target / n).is_file()
                or file_sha256(target / n) != file_sha256(Path(tmp, n))
            ]
            print("up to date" if not stale else f"differs: {', '.join(stale)}")
            return 1 if stale else 0
        target.mkdir(parents=True, exist_ok=True)
        for name in names:
            Path(tmp, name).replace(target / name)
    size = sum((target / n).stat().st_size for n in names)
    print(f"wrote {TARGET}: {built['rows']} rows, {size / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
