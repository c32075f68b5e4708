"""LTTW: word-label NMF latent factors fused with a pretrained encoder, then Linformer attention."""

__version__ = "0.1.0"
