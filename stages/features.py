"""dvc.yaml's stage `features`: runs `lttw.stages.features` (the stage's code; `--help` describes it)."""

from lttw.stages.features import run

if __name__ == "__main__":
    run()
