"""``lttw data check``'s sample plan: for each sample of ``data.sampling`` the split it is
drawn from, the rows it takes (per class), whether they are there and sizes that fit together,
computed with ``lttw.data.sample_sizes`` (no second reading of the rules)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from lttw.data.datasets import Dataset
from lttw.data.multi_label_sampling import pool_sizes
from lttw.data.sample_sizes import (
    Pool,
    fitting_sizes,
    pool_quotas,
    pools_of,
    shortfalls,
    sizes_of,
)
from lttw.data.sampling import per_class_sizes
from lttw.layout import SPLITS
from lttw.settings import DataSettings


def sample_plan(dataset: Dataset, settings: DataSettings) -> pd.DataFrame:
    """For each sample: the split it is drawn from, the rows it would take (per class: one
    number when balanced, else the range), whether its pool has them, and a size that fits
    together with the others (``lttw.data.sample_sizes.fitting_sizes``)."""
    if settings.sampling == "balanced":
        per_class_sizes(settings, len(dataset.classes))  # a size below p: one clear error
    sizes, sampling = sizes_of(settings), settings.sampling
    pools = pools_of(dataset, settings)
    short = {split for pool in shortfalls(pools, sizes, sampling) for split in pool.splits}
    fit = fitting_sizes(pools, sizes, sampling)
    rows = []
    for pool in pools:
        for split, quota in plan_quotas(dataset, pool, sizes, sampling).items():
            spread = (
                str(quota.min()) if quota.min() == quota.max() else f"{quota.min()}-{quota.max()}"
            )
            wanted = sizes[split] if sampling == "stratified" else int(quota.sum())
            rows.append(
                {
                    "sample": split,
                    "from": pool.where,
                    "rows": wanted,
                    "per_class": "-" if split in short and sampling != "balanced" else spread,
                    "fits": split not in short,
                    "fitting_size": "-" if sampling == "all" else fit[split],
                }
            )
    return pd.DataFrame(rows).set_index("sample").loc[list(SPLITS)]


def plan_quotas(
    dataset: Dataset, pool: Pool, sizes: dict[str, int], sampling: str
) -> dict[str, np.ndarray]:
    """Rows per class each sample of ``pool`` takes (``sample_sizes.pool_quotas``); for
    multi-label data the expected rows having each class, its share of the pool's rows."""
    if not dataset.multi_label:
        return pool_quotas(pool, sizes, sampling)
    rows = pool_sizes(pool, sizes, "all" if sampling == "all" else "stratified")
    scale = {s: min(n, pool.rows) / max(pool.rows, 1) for s, n in rows.items()}
    return {s: np.round(pool.counts * scale[s]).astype(np.int64) for s in rows}
