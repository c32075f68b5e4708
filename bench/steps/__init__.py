"""The training step's benchmarks (``bench/train_step.py``): throughput, profile, attention."""
