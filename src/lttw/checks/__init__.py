"""What ``lttw data check`` runs: a dataset's columns, labels, sizes and word splitting checked
before a run. No stage depends on it."""
