"""What ``lttw exp`` runs: the experiment grids of ``experiments/`` and the paired study,
through DVC's queue or directly without dvc (one runner, resumable within a time budget),
and their cells in ``evidence/runs``. No stage depends on it, so editing it never reruns
the pipeline; ``reporting`` renders what it wrote."""
