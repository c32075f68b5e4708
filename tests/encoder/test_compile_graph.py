"""The LTTW training step compiles as one graph: no graph break and no device-to-host sync
(a data-dependent branch such as ``if mask.all()`` would be both). ``fullgraph=True`` makes
any break an error; the ``aot_eager`` backend traces forward and backward without a C++
compiler, so this runs on any CPU."""

from __future__ import annotations

import torch
from support.tiny_lttw import tiny_data, tiny_model  # noqa: E402

from lttw.device import Runtime  # noqa: E402


def test_lttw_forward_and_backward_compile_without_graph_breaks():
    torch._dynamo.reset()
    model, data = tiny_model(), tiny_data()
    model.train()
    inputs, labels = data.batch(torch.arange(4), Runtime(device=torch.device("cpu"), bf16=False))
    assert not bool(inputs["attention_mask"].all())  # padded rows: the masked path
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
    loss = torch.nn.functional.cross_entropy(compiled(**inputs), labels)
    loss.backward()
    assert model.classifier.weight.grad is not None
    explained = torch._dynamo.explain(model)(**inputs)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    torch._dynamo.reset()
