"""Words: the word-splitting rule (``words.splitter``), word ids and pretrained word vectors."""
