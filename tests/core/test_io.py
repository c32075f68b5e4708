"""Safe, stable artifacts (``lttw.io``): atomic writers leave nothing on failure, safetensors
with metadata are byte-identical across writes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

# ------------------------------------------------------------------ safe, stable artifacts


def test_atomic_writers_leave_nothing_on_failure_and_clean_stale_temporaries(tmp_path):
    import tempfile

    from lttw.io import atomic_dir, write_json

    target = tmp_path / "fold_0"
    with pytest.raises(RuntimeError):
        with atomic_dir(target) as tmp:
            (tmp / "half.json").write_text("{")
            raise RuntimeError("killed")
    assert list(tmp_path.iterdir()) == []
    # what a kill -9 leaves (no cleanup ran): removed by the next write of the same target
    stale_dir = tempfile.mkdtemp(prefix=".fold_0.", suffix=".tmp", dir=tmp_path)
    stale_file = tempfile.mkstemp(prefix=".fold_0.json.", suffix=".tmp", dir=tmp_path)[1]
    other = tempfile.mkstemp(prefix=".fold_1.", suffix=".tmp", dir=tmp_path)[1]
    with atomic_dir(target) as tmp:
        (tmp / "a.json").write_text("{}")
    assert not Path(stale_dir).exists() and Path(stale_file).exists()
    write_json(tmp_path / "fold_0.json", {"a": 1})
    assert sorted(p.name for p in tmp_path.iterdir()) == [Path(other).name, "fold_0", "fold_0.json"]


def test_safetensors_with_metadata_are_byte_identical(tmp_path):
    """safetensors keeps metadata in a hash map: write_arrays sorts it, so identical inputs
    give identical bytes (and DVC hashes) in every process."""
    from safetensors import safe_open

    from lttw.io import read_arrays, write_arrays

    metadata = {name: str(i) for i, name in enumerate("zyxwvutsrq")}
    arrays = {"train": np.arange(12, dtype=np.float32).reshape(3, 4), "ids": np.arange(3)}
    blobs = set()
    for i in range(6):
        write_arrays(tmp_path / f"{i}.safetensors", metadata=metadata, **arrays)
        blobs.add((tmp_path / f"{i}.safetensors").read_bytes())
    assert len(blobs) == 1
    path = tmp_path / "0.safetensors"
    with safe_open(str(path), "np") as f:
        assert f.metadata() == metadata
    assert all(np.array_equal(read_arrays(path)[k], v) for k, v in arrays.items())
    header = path.read_bytes()[8:200].decode("utf-8", errors="replace")
    assert header.startswith('{"__metadata__":{"q":"9","r":"8"')
