"""Metrics as the paper reports them, and the report that compares runs with the paper's tables."""
