"""dvc.yaml's stage `folds`: runs `lttw.stages.folds` (the stage's code; `--help` describes it)."""

from lttw.stages.folds import run

if __name__ == "__main__":
    run()
