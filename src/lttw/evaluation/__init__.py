"""Metrics as the paper reports them (macro P / R / F1, confusion counts, fold summaries)."""
