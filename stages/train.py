"""dvc.yaml's stage `train`: runs `lttw.stages.train` (the stage's code; `--help` describes it)."""

from lttw.stages.train import run

if __name__ == "__main__":
    run()
