"""Stage `sample`: class-balanced, disjoint train / test / predict samples of `data.dataset`."""

from lttw import layout
from lttw.data.datasets import load_dataset
from lttw.data.sampling import draw_samples
from lttw.io import atomic_dir, write_json
from lttw.stages import run_stage


def main(settings):
    dataset = load_dataset(settings.data)
    frames, info = draw_samples(dataset, settings.data, settings.seed)
    with atomic_dir(layout.SAMPLE_DIR) as tmp:
        for split, frame in frames.items():
            frame.to_parquet(tmp / layout.sample_parquet(split).name, index=False)
        write_json(tmp / layout.LABELS_JSON.name, info)


def run(argv: list[str] | None = None) -> None:
    """``python -m lttw.stages.sample [--params F]``: ``main`` as a pipeline stage."""
    run_stage(main, __doc__, argv=argv)


if __name__ == "__main__":
    run()
