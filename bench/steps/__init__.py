"""Each benchmark mode's code, run through its question's script (``python bench/SCRIPT.py
MODE``): the training step (``throughput``, ``profile``, ``attention``, ``compile_summary``,
with ``common``, ``flops``, ``phases``), prediction (``predict_batch``, ``serve_load``,
``ray_batch``), hostile clients (``hostile_client``, ``hostile_http``), a user's waits
(``first_run``), large data (``data_stages``, ``input_memory``) and small data
(``few_shot``, ``embedded_sample``)."""
