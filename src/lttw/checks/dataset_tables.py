"""``lttw data check``'s report on the terminal: a ``lttw.checks.dataset.DataCheck`` drawn as
rich tables (class balance, quality, the sample plan) with its notes."""

from __future__ import annotations

from lttw.checks.dataset import DROPPED_EMPTY, DROPPED_UNLABELLED, DataCheck
from lttw.checks.encoder_coverage import render_encoder_coverage
from lttw.checks.label_format import render_cardinality
from lttw.checks.word_splitting import render_word_splitting


def render(check: DataCheck, console) -> None:
    """Draw a check as rich tables; its problems are the caller's to report."""
    from rich.markup import escape
    from rich.table import Table

    ds = check.dataset
    console.print(
        escape(
            f"{ds.source}: {len(ds.labels)} usable rows, {len(ds.classes)} "
            f"classes, splits {', '.join(sorted(set(ds.splits.tolist())))}"
        )
    )
    balance = Table(title="Class balance")
    balance.add_column("class")
    for column in check.class_table.columns:
        balance.add_column(str(column), justify="right")
    for name, row in check.class_table.iterrows():
        balance.add_row(
            escape(str(name)),
            *(f"{v:.1%}" if c == "share" else str(int(v)) for c, v in row.items()),
        )
    quality = Table(title="Quality (UTF-8 decoding is checked on read)")
    quality.add_column("check")
    quality.add_column("rows", justify="right")
    for what, n in check.quality.items():
        dropped = n and what in (DROPPED_EMPTY, DROPPED_UNLABELLED)
        quality.add_row(what, str(n), style="red" if dropped else None)
    plan = Table(
        title=f"What `sample` would draw with the sizes in --params "
        f"(data.sampling={check.settings.sampling})"
    )
    for name in ("sample", "from", "rows", "per class", "fits", "a size that fits"):
        plan.add_column(name)
    for split, row in check.plan.iterrows():
        plan.add_row(
            split,
            row["from"],
            str(row["rows"]),
            row["per_class"],
            "yes" if row["fits"] else "NO",
            str(row["fitting_size"]),
            style=None if row["fits"] else "red",
        )
    for table in (balance, quality, plan):
        console.print(table)
    if check.cardinality:
        render_cardinality(check.cardinality, console)
    if check.words:
        render_word_splitting(check.words, console)
    if check.coverage:
        render_encoder_coverage(check.coverage, console)
    for note in check.notes:
        console.print(f"note: {escape(note)}")
    if not check.problems:
        console.print("ok: the sample stage can use this dataset as configured")
