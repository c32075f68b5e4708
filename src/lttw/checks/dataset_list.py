"""``lttw data list``: which datasets are available locally (present / partial / missing, rows
per split), the Hugging Face dataset `lttw data fetch` reads each from, and how to get the ones
that are missing or partial (``lttw data fetch``)."""

from __future__ import annotations

import json
from pathlib import Path

from lttw.data.dataset_sources import KNOWN_DATASETS
from lttw.data.fetch_sources import SOURCES
from lttw.data.tables import PARQUET_SUFFIXES, TABLE_SUFFIXES


def _split_rows(path: Path) -> int | None:
    if path.suffix.lower() in PARQUET_SUFFIXES:
        import pyarrow.parquet as pq

        return pq.ParquetFile(path).metadata.num_rows
    return None


def describe_local(folder: Path) -> dict:
    """Status of one dataset folder: present / partial / missing, rows per split, complete."""
    manifest_path = folder / "manifest.json"
    if not manifest_path.is_file():
        tables = sorted(p for p in folder.glob("*") if p.suffix.lower() in TABLE_SUFFIXES)
        status = "present (no manifest)" if tables else "missing"
        return {
            "status": status,
            "rows": {p.stem: _split_rows(p) for p in tables},
            "complete": None,
            "official_rows": {},
        }
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    files = {split: folder / name for split, name in manifest.get("splits", {}).items()}
    present = {split: path.is_file() for split, path in files.items()}
    rows = {
        split: (_split_rows(path) if present[split] else None)
        or (manifest.get("rows", {}).get(split) if present[split] else None)
        for split, path in files.items()
    }
    status = (
        "present" if all(present.values()) else "partial" if any(present.values()) else "missing"
    )
    return {
        "status": status,
        "rows": rows,
        "complete": manifest.get("complete"),
        "official_rows": manifest.get("official_rows", {}),
        "hub": manifest.get("hub_dataset"),
    }


def list_datasets(root: str | Path) -> list[dict]:
    """The known datasets (and any other folder under ``root``), where each is found locally
    and the Hugging Face dataset `lttw data fetch` reads it from."""
    root = Path(root)
    names = list(SOURCES) + [n for n in KNOWN_DATASETS if n not in SOURCES]
    if root.is_dir():
        names += sorted(  # not the hidden download / temporary folders of lttw data fetch
            p.name
            for p in root.iterdir()
            if p.is_dir() and p.name not in names and not p.name.startswith(".")
        )
    out = []
    for name in names:
        local = (
            describe_local(root / name)
            if (root / name).is_dir()
            else {"status": "missing", "rows": {}, "complete": None, "official_rows": {}}
        )
        hub = (
            local.pop("hub", None)
            or (KNOWN_DATASETS[name].name if name in KNOWN_DATASETS else None)
            or (SOURCES[name].hub if name in SOURCES else None)
        )
        get = None
        if name in SOURCES and local["status"] != "present":
            get = f"lttw data fetch {name}"
        elif name in SOURCES and local["complete"] is False:
            get = f"lttw data fetch {name} --to DIR (the full data)"
        out.append(
            {
                "name": name,
                "path": str(root / name),
                **local,
                "hub": f"hf://datasets/{hub}" if hub else None,
                "get": get,
            }
        )
    return out


def render_list(rows: list[dict], root: str, console) -> None:
    """Draw ``list_datasets`` as a rich table."""
    from rich.table import Table

    table = Table(title="Datasets", caption=f"data.root: {root}")
    for name in ("name", "local copy", "rows per split", "with internet", "to get it"):
        table.add_column(name, overflow="fold")
    for r in rows:
        split_rows = (
            ", ".join(f"{s} {n:,}" if n is not None else f"{s} ?" for s, n in r["rows"].items())
            or "–"
        )
        copy = {True: ", complete", False: ", partial", None: ""}[r["complete"]]
        table.add_row(r["name"], r["status"] + copy, split_rows, r["hub"] or "–", r["get"] or "–")
    console.print(table)
