"""What ``lttw report`` and ``lttw exp`` run: the report that compares runs with the paper's
tables, the experiment grids of ``experiments/`` (through DVC's queue, or directly where
there is no dvc) and their cells in ``evidence/runs``. No stage depends on it, so editing it
never reruns the pipeline."""
