"""What ``lttw report`` renders: the report that compares runs with the paper's tables, the
grids' sweeps and the paired study, from the cells that ``experiments`` wrote. No stage
depends on it, so editing it never reruns the pipeline."""
