"""dvc.yaml's stage `sample`: runs `lttw.stages.sample` (the stage's code; `--help` describes it)."""

from lttw.stages.sample import run

if __name__ == "__main__":
    run()
