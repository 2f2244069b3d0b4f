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
    from onnx import TensorProto, helper
    from safetensors.numpy import load_file

    config = check_bert(directory)
    raw = load_file(str(directory / "model.safetensors"))
    graph = _Graph({name.removeprefix("bert."): value for name, value in raw.items()}, config)
    x = graph.embeddings()
    bias = graph.padding_bias()
    for index in range(int(config["num_hidden_layers"])):
        x = graph.layer(x, bias, index)
    graph.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="last_hidden_state"))
    ids = ("input_ids", "attention_mask", "token_type_ids")
    built = helper.make_graph(
        graph.nodes,
        "bert",
        [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"]) for name in ids],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", graph.hidden])],
        graph.initializers,
    )
    model = helper.make_model(built, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="mcp-sections")
    model.ir_version = 8  # readable by every onnxruntime this project accepts
    return model


class _Graph:
    """The nodes and initializers of the graph being built, and the ops of BertModel written with them."""

    def __init__(self, weights: dict[str, np.ndarray], config: dict[str, Any]) -> None:
        self.weights = weights
        self.hidden, self.heads = int(config["hidden_size"]), int(config["num_attention_heads"])
        self.head_size = self.hidden // self.heads
        self.epsilon = float(config.get("layer_norm_eps", 1e-12))
        self.approximate = _GELU[config.get("hidden_act", "gelu")]
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []

    # -- building blocks --------------------------------------------------------------------------------------

    def const(self, name: str, value: np.ndarray) -> str:
        import numpy as np
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def weight(self, name: str, transpose: bool = False) -> str:
        import numpy as np

        value = self.weights[name].astype(np.float32, copy=False)
        return self.const(name, value.T if transpose else value)

    def node(self, op: str, inputs: list[str], name: str, **attributes: Any) -> str:
        from onnx import helper

        self.nodes.append(helper.make_node(op, inputs, [name], name=name, **attributes))
        return name

    def linear(self, x: str, prefix: str, out: str) -> str:
        product = self.node("MatMul", [x, self.weight(f"{prefix}.weight", transpose=True)], f"{out}/matmul")
        return self.node("Add", [product, self.weight(f"{prefix}.bias")], out)

    def layer_norm(self, x: str, prefix: str, out: str) -> str:
        scale, bias = self.weight(f"{prefix}.weight"), self.weight(f"{prefix}.bias")
        return self.node("LayerNormalization", [x, scale, bias], out, axis=-1, epsilon=self.epsilon)

    def scalar(self, name: str, value: float) -> str:
        import numpy as np

        return self.const(name, np.array(value, np.float32))

    def gelu(self, x: str, out: str) -> str:
        node, scalar = self.node, self.scalar
        if self.approximate == "none":  # 0.5 x (1 + erf(x / sqrt 2))
            inner = node("Erf", [node("Div", [x, scalar(f"{out}/sqrt2", math.sqrt(2.0))], f"{out}/div")], f"{out}/erf")
        else:  # 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
            cube = node("Mul", [x, node("Mul", [x, x], f"{out}/sq")], f"{out}/cube")
            poly = node("Add", [x, node("Mul", [cube, scalar(f"{out}/c", 0.044715)], f"{out}/cc")], f"{out}/poly")
            factor = scalar(f"{out}/k", math.sqrt(2.0 / math.pi))
            inner = node("Tanh", [node("Mul", [poly, factor], f"{out}/kp")], f"{out}/tanh")
        plus = node("Add", [inner, scalar(f"{out}/one", 1.0)], f"{out}/plus1")
        return node("Mul", [node("Mul", [x, scalar(f"{out}/half", 0.5)], f"{out}/half_x"), plus], out)

    # -- BertModel --------------------------------------------------------------------------------------------

    def embeddings(self) -> str:
        """Word + position + token-type embeddings, then their LayerNorm."""
        import numpy as np

        node, weight = self.node, self.weight
        length = node("Shape", ["input_ids"], "emb/length", start=1, end=2)  # [sequence], 1-D
        first = self.const("emb/first", np.array([0], np.int64))
        table = weight("embeddings.position_embeddings.weight")
        where = node("Slice", [table, first, length, first], "emb/where")  # rows 0 .. sequence-1
        words = node("Gather", [weight("embeddings.word_embeddings.weight"), "input_ids"], "emb/words")
        kinds = node("Gather", [weight("embeddings.token_type_embeddings.weight"), "token_type_ids"], "emb/kinds")
        summed = node("Add", [node("Add", [words, kinds], "emb/words_kinds"), where], "emb/sum")
        return self.layer_norm(summed, "embeddings.LayerNorm", "emb/out")

    def padding_bias(self) -> str:
        """The padding mask as an additive bias: 0 for real tokens, the most negative float for padding."""
        import numpy as np
        from onnx import TensorProto

        node = self.node
        mask = node("Cast", ["attention_mask"], "mask/float", to=TensorProto.FLOAT)
        mask = node("Unsqueeze", [mask, self.const("mask/axes", np.array([1, 2], np.int64))], "mask/b11s")
        inverted = node("Sub", [self.scalar("mask/one", 1.0), mask], "mask/inverted")
        return node("Mul", [inverted, self.scalar("mask/min", float(np.finfo(np.float32).min))], "mask/bias")

    def layer(self, x: str, bias: str, index: int) -> str:
        """One encoder layer: self-attention, output projection, residual and LayerNorm; feed-forward likewise."""
        import numpy as np

        node, p, n = self.node, f"encoder.layer.{index}", f"layer{index}"
        split = self.const(f"{n}/split", np.array([0, 0, self.heads, self.head_size], np.int64))

        def heads_of(projected: str, perm: list[int]) -> str:  # [batch, sequence, hidden] -> [batch, heads, ., .]
            return node(
                "Transpose",
                [node("Reshape", [projected, split], f"{projected}/split")],
                f"{projected}/heads",
                perm=perm,
            )

        query = heads_of(self.linear(x, f"{p}.attention.self.query", f"{n}/query"), [0, 2, 1, 3])
        key = heads_of(self.linear(x, f"{p}.attention.self.key", f"{n}/key"), [0, 2, 3, 1])
        value = heads_of(self.linear(x, f"{p}.attention.self.value", f"{n}/value"), [0, 2, 1, 3])
        scale = self.scalar(f"{n}/scale", 1.0 / math.sqrt(self.head_size))
        scores = node("Mul", [node("MatMul", [query, key], f"{n}/qk"), scale], f"{n}/scores")
        probs = node("Softmax", [node("Add", [scores, bias], f"{n}/masked")], f"{n}/probs", axis=-1)
        context = node("Transpose", [node("MatMul", [probs, value], f"{n}/pv")], f"{n}/context", perm=[0, 2, 1, 3])
        merge = self.const(f"{n}/merge", np.array([0, 0, self.hidden], np.int64))
        attended = self.linear(
            node("Reshape", [context, merge], f"{n}/merged"), f"{p}.attention.output.dense", f"{n}/attended"
        )
        x = self.layer_norm(node("Add", [attended, x], f"{n}/residual1"), f"{p}.attention.output.LayerNorm", f"{n}/ln1")
        inner = self.gelu(self.linear(x, f"{p}.intermediate.dense", f"{n}/intermediate"), f"{n}/gelu")
        output = self.linear(inner, f"{p}.output.dense", f"{n}/output")
        return self.layer_norm(node("Add", [output, x], f"{n}/residual2"), f"{p}.output.LayerNorm", f"{n}/ln2")
