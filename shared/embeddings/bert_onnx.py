"""A BERT encoder written as an ONNX graph straight from its safetensors weights: no torch, no transformers.

The graph is Hugging Face's `BertModel` in eager mode, op for op: word + position + token-type embeddings and a
LayerNorm, then per layer self-attention (scaled dot product with the padding mask added as the most negative
float), output projection, residual and LayerNorm, then the feed-forward block with exact (erf) GELU, residual and
LayerNorm. Its one output is `last_hidden_state`; `OnnxModel` mean-pools it as sentence-transformers does, so the
vectors equal torch's to float rounding (tests/memory/test_embedding_backends.py holds torch's reference vectors).

Only what this graph reproduces is accepted (`check_bert`): `model_type` bert, absolute positions, a GELU
activation. Other architectures run on torch (the `embeddings-torch` extra) unless their directory ships an
`onnx/model.onnx`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

OPSET = 17  # LayerNormalization
_GELU = {"gelu": "none", "gelu_python": "none", "gelu_new": "tanh", "gelu_pytorch_tanh": "tanh"}


class NotBert(ValueError):
    """The model is not one this graph reproduces (the reason says what differs)."""


def check_bert(directory: Path) -> dict[str, Any]:
    """The model's config.json when the graph can reproduce it, else NotBert."""
    config_file = directory / "config.json"
    weights = directory / "model.safetensors"
    if not config_file.is_file() or not weights.is_file():
        raise NotBert("it has no config.json and model.safetensors")
    config: dict[str, Any] = json.loads(config_file.read_text(encoding="utf-8"))
    if config.get("model_type") != "bert":
        raise NotBert(f"model_type is {config.get('model_type')!r}, not 'bert'")
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise NotBert(f"position_embedding_type {config['position_embedding_type']!r} is not supported")
    if config.get("hidden_act", "gelu") not in _GELU:
        raise NotBert(f"hidden_act {config['hidden_act']!r} is not supported")
    if config["hidden_size"] % config["num_attention_heads"]:
        raise NotBert("hidden_size is not a multiple of num_attention_heads")
    return config


def build_bert_onnx(directory: Path) -> Any:
    """The `onnx.ModelProto` of the BERT model in `directory` (inputs input_ids, attention_mask, token_type_ids)."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    from safetensors.numpy import load_file

    config = check_bert(directory)
    raw = load_file(str(directory / "model.safetensors"))
    weights = {name.removeprefix("bert."): value for name, value in raw.items()}
    hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
    head_size = hidden // heads
    epsilon = float(config.get("layer_norm_eps", 1e-12))
    approximate = _GELU[config.get("hidden_act", "gelu")]
    nodes: list[Any] = []
    initializers: list[Any] = []

    def const(name: str, value: np.ndarray) -> str:
        initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def weight(name: str, transpose: bool = False) -> str:
        value = weights[name].astype(np.float32, copy=False)
        return const(name, value.T if transpose else value)

    def node(op: str, inputs: list[str], name: str, **attributes: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attributes))
        return name

    def linear(x: str, prefix: str, out: str) -> str:
        product = node("MatMul", [x, weight(f"{prefix}.weight", transpose=True)], f"{out}/matmul")
        return node("Add", [product, weight(f"{prefix}.bias")], out)

    def layer_norm(x: str, prefix: str, out: str) -> str:
        scale, bias = weight(f"{prefix}.weight"), weight(f"{prefix}.bias")
        return node("LayerNormalization", [x, scale, bias], out, axis=-1, epsilon=epsilon)

    def gelu(x: str, out: str) -> str:
        half = const(f"{out}/half", np.array(0.5, np.float32))
        one = const(f"{out}/one", np.array(1.0, np.float32))
        if approximate == "none":  # 0.5 x (1 + erf(x / sqrt 2))
            scaled = node("Div", [x, const(f"{out}/sqrt2", np.array(math.sqrt(2.0), np.float32))], f"{out}/div")
            inner = node("Erf", [scaled], f"{out}/erf")
        else:  # 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
            cube = node("Mul", [x, node("Mul", [x, x], f"{out}/sq")], f"{out}/cube")
            poly = node(
                "Add",
                [x, node("Mul", [cube, const(f"{out}/c", np.array(0.044715, np.float32))], f"{out}/cc")],
                f"{out}/poly",
            )
            factor = const(f"{out}/k", np.array(math.sqrt(2.0 / math.pi), np.float32))
            inner = node("Tanh", [node("Mul", [poly, factor], f"{out}/kp")], f"{out}/tanh")
        plus = node("Add", [inner, one], f"{out}/plus1")
        return node("Mul", [node("Mul", [x, half], f"{out}/half_x"), plus], out)

    # embeddings
    length = node("Shape", ["input_ids"], "emb/length", start=1, end=2)  # [sequence], 1-D
    first = const("emb/first", np.array([0], np.int64))
    table = weight("embeddings.position_embeddings.weight")
    where = node("Slice", [table, first, length, first], "emb/where")  # rows 0 .. sequence-1
    words = node("Gather", [weight("embeddings.word_embeddings.weight"), "input_ids"], "emb/words")
    kinds = node("Gather", [weight("embeddings.token_type_embeddings.weight"), "token_type_ids"], "emb/kinds")
    summed = node("Add", [node("Add", [words, kinds], "emb/words_kinds"), where], "emb/sum")
    x = layer_norm(summed, "embeddings.LayerNorm", "emb/out")

    # the padding mask as an additive bias: 0 for real tokens, the most negative float for padding
    mask = node("Cast", ["attention_mask"], "mask/float", to=TensorProto.FLOAT)
    mask = node("Unsqueeze", [mask, const("mask/axes", np.array([1, 2], np.int64))], "mask/b11s")
    inverted = node("Sub", [const("mask/one", np.array(1.0, np.float32)), mask], "mask/inverted")
    bias = node("Mul", [inverted, const("mask/min", np.array(np.finfo(np.float32).min, np.float32))], "mask/bias")

    split_heads = const("attn/split", np.array([0, 0, heads, head_size], np.int64))

    def heads_of(projected: str, perm: list[int]) -> str:  # [batch, sequence, hidden] -> [batch, heads, ., .]
        split = node("Reshape", [projected, split_heads], f"{projected}/split")
        return node("Transpose", [split], f"{projected}/heads", perm=perm)

    merge_heads = const("attn/merge", np.array([0, 0, hidden], np.int64))
    scale = const("attn/scale", np.array(1.0 / math.sqrt(head_size), np.float32))
    for index in range(int(config["num_hidden_layers"])):
        p, n = f"encoder.layer.{index}", f"layer{index}"

        query = heads_of(linear(x, f"{p}.attention.self.query", f"{n}/query"), [0, 2, 1, 3])
        key = heads_of(linear(x, f"{p}.attention.self.key", f"{n}/key"), [0, 2, 3, 1])
        value = heads_of(linear(x, f"{p}.attention.self.value", f"{n}/value"), [0, 2, 1, 3])
        scores = node("Mul", [node("MatMul", [query, key], f"{n}/qk"), scale], f"{n}/scores")
        probs = node("Softmax", [node("Add", [scores, bias], f"{n}/masked")], f"{n}/probs", axis=-1)
        context = node("Transpose", [node("MatMul", [probs, value], f"{n}/pv")], f"{n}/context", perm=[0, 2, 1, 3])
        merged = node("Reshape", [context, merge_heads], f"{n}/merged")
        attended = linear(merged, f"{p}.attention.output.dense", f"{n}/attended")
        x = layer_norm(node("Add", [attended, x], f"{n}/residual1"), f"{p}.attention.output.LayerNorm", f"{n}/ln1")
        inner = gelu(linear(x, f"{p}.intermediate.dense", f"{n}/intermediate"), f"{n}/gelu")
        output = linear(inner, f"{p}.output.dense", f"{n}/output")
        x = layer_norm(node("Add", [output, x], f"{n}/residual2"), f"{p}.output.LayerNorm", f"{n}/ln2")
    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="last_hidden_state"))

    ids = ("input_ids", "attention_mask", "token_type_ids")
    graph = helper.make_graph(
        nodes,
        "bert",
        [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"]) for name in ids],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", hidden])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="mcp-sections")
    model.ir_version = 8  # readable by every onnxruntime this project accepts
    return model
