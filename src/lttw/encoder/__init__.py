"""The pretrained encoder (``model.encoder``): resolving and loading it and its tokenizer,
BERT's forward pass in plain torch for loaded folders, token ids of the samples, and the
frozen encoder's cached hidden states."""
