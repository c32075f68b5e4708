"""The training tests' shared fixture: one intra-op thread."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny models run fastest on 1 intra-op thread, and it keeps the runs quick on a busy
    CPU (OpenMP threads that wait on each other degrade badly under contention)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
