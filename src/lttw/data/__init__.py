"""Datasets: reading tables, class-balanced sampling, folds, and the batches of one fold's model inputs (paper 3.1)."""
