"""tools/other_kernels.py (issue 59): `make test` runs the tests that compare floats again
under another CPU kernel family than the machine's; its subset names tests that exist."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import other_kernels  # noqa: E402  (tools/other_kernels.py)


def test_another_family_than_the_machines():
    assert other_kernels.other_family("AVX512")["ATEN_CPU_CAPABILITY"] == "avx2"
    assert other_kernels.other_family("AVX2")["ATEN_CPU_CAPABILITY"] == "default"
    assert other_kernels.other_family("SVE256")["ATEN_CPU_CAPABILITY"] == "default"
    assert other_kernels.other_family("DEFAULT") is None


def test_the_subset_names_tests_that_exist():
    for path in other_kernels.SUBSET:
        assert (REPO / path).is_file(), path
    for test in other_kernels.DESELECT:
        path, name = test.split("::")
        assert f"def {name}(" in (REPO / path).read_text(encoding="utf-8"), test
    assert "tools/other_kernels.py" in (REPO / "Makefile").read_text(encoding="utf-8")
