"""From raw text to encoder inputs: the pretrained encoder's resolution and tokenizer
(``model.encoder``), and tokenisation of the samples."""
