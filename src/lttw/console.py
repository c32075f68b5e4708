"""Terminal output of the command line (rich): the console, and the predictions table."""

from __future__ import annotations

from collections.abc import Sequence


def console(stderr: bool = False):
    """A rich console on stdout (or stderr) whose closed pipe (``lttw ... | head``) is a
    normal end: exit 0, nothing more written (rich's own answer is exit 1)."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            quiet_stdout()
            raise SystemExit(0)

    return _Console(stderr=stderr)


def quiet_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush at exit does not fail
    again on a closed pipe or a full device."""
    import os
    import sys

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def print_predictions(
    texts: list[str],
    labels: list[str],
    probs: Sequence[float | str],
    top: list[str] | None = None,
) -> None:
    """A table of text / label / prob [/ top] that fits the terminal: the label and the
    probability are always shown in full, the text is cut (…) to the room left. ``probs``:
    numbers (shown to 4 places) or text as shown (a multi-label row's "0.91, 0.62");
    ``top``: a column of the most probable classes, wrapped."""
    from rich.cells import cell_len
    from rich.markup import escape
    from rich.table import Table

    out = console()
    shown = [p if isinstance(p, str) else f"{p:.4f}" for p in probs]
    label_width = max(cell_len("label"), *(cell_len(label) for label in labels))
    prob_width = max(len("0.0000"), *(len(p) for p in shown))
    room = out.width - label_width - prob_width - 10  # 4 borders + 3 x 2 padding
    table = Table()
    table.add_column("text", overflow="ellipsis", no_wrap=True, max_width=max(8, min(60, room)))
    if room >= 8:
        table.add_column("label", no_wrap=True, min_width=label_width)
    else:  # a label wider than the terminal: wrapped over lines, still whole
        table.add_column("label", overflow="fold")
    table.add_column("prob", justify="right", no_wrap=True, min_width=prob_width)
    if top is not None:
        table.add_column("top", overflow="fold")
    for i, (text, label, prob) in enumerate(zip(texts, labels, shown)):
        table.add_row(escape(text), escape(label), prob, *([escape(top[i])] if top else []))
    out.print(table)


def print_answers(texts: list[str], records: list[dict], with_top: bool) -> None:
    """The terminal table of ``lttw.inference.answers.AnswerRule.records``: lists joined by ", ", "(none)" where a
    text got no label."""

    def joined(items: list[dict]) -> tuple[str, str]:
        return (
            ", ".join(i["label"] for i in items) or "(none)",
            ", ".join(f"{i['prob']:.4f}" for i in items),
        )

    labels, probs = [], []
    for r in records:
        if "labels" in r:
            label, prob = joined(r["labels"])
        else:
            label, prob = r["label"] or "(none)", f"{r['prob']:.4f}"
        labels.append(label)
        probs.append(prob)
    top = None
    if with_top:
        top = [", ".join(f"{i['label']} {i['prob']:.4f}" for i in r["top"]) for r in records]
    print_predictions(texts, labels, probs, top)
