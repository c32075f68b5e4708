"""A trained model folder put to work: an HTTP service with micro-batching (``server``,
``batcher``), its ``/info`` document (``info``), and ONNX export / onnxruntime inference
(``onnx_export``). Above ``inference``; no pipeline stage depends on it."""
