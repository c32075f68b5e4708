"""What ``lttw report`` and ``lttw sweep`` run: the report that compares runs with the paper's
tables, the paper's sweeps as DVC experiment grids, and reading experiments back. No stage
depends on it, so editing it never reruns the pipeline."""
