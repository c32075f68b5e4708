"""Fine-tuning: the training loop and its resumable checkpoints."""
