"""The paper's section 2.3: word-label counts (Algorithm 1, eq. 1), NMF (eqs 2-3), top-k / bottom-s selection of each text's latent factors, out-of-fold cross-fitting."""
