"""dvc.yaml's stage `final`: runs `lttw.stages.final` (the stage's code; `--help` describes it)."""

from lttw.stages.final import run

if __name__ == "__main__":
    run()
