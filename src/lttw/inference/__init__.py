"""Trained model folders at work: prediction on cached tensors or raw texts, streaming batch prediction, explanations."""
