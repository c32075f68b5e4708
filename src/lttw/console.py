"""Terminal output of the command line (rich): the console, and the predictions table."""

from __future__ import annotations


def console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr)


def print_predictions(texts: list[str], labels: list[str], probs: list[float]) -> None:
    """A table of text / label / prob that fits the terminal: the label and the probability
    are always shown in full, the text is cut (…) to the room left."""
    from rich.cells import cell_len
    from rich.markup import escape
    from rich.table import Table

    out = console()
    label_width = max(cell_len("label"), *(cell_len(label) for label in labels))
    prob_width = len("0.0000")
    room = out.width - label_width - prob_width - 10  # 4 borders + 3 x 2 padding
    table = Table()
    table.add_column("text", overflow="ellipsis", no_wrap=True, max_width=max(8, min(60, room)))
    if room >= 8:
        table.add_column("label", no_wrap=True, min_width=label_width)
    else:  # a label wider than the terminal: wrapped over lines, still whole
        table.add_column("label", overflow="fold")
    table.add_column("prob", justify="right", no_wrap=True, min_width=prob_width)
    for text, label, prob in zip(texts, labels, probs):
        table.add_row(escape(text), escape(label), f"{prob:.4f}")
    out.print(table)
