"""The ONNX Runtime backend: a one-time export of the packaged weights (in a child process, checked
against torch), then tokenising and mean-pooling in numpy without importing torch."""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


from mcp_sections.shared.embeddings.settings import ONNX_EXPORT_VERSION

logger = logging.getLogger("mcp_sections.embeddings")

# ---- the ONNX Runtime backend ---------------------------------------------------------------
ONNX_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_CHECK_SENTENCES = (
    "hi",
    "The user prefers short answers without emojis.",
    "Wir haben uns für PostgreSQL entschieden, weil es schneller ist. 日本語も少し。",
    "def parse(tokens): return [t.strip() for t in tokens if t]  # 3.14 0xdeadbeef https://example.com/a?b=c",
    "Alice deployed the billing service after the outage, then reviewed the on-call rotation. " * 12,
)
"""Sentences the child process encodes with torch and with the new export: short, long (truncated), mixed."""


def gpu_visible() -> bool:
    """A cheap guess, without importing torch, that torch would find a GPU (NVIDIA device nodes, Apple silicon)."""
    import platform
    import sys

    if sys.platform == "darwin":
        return platform.machine() == "arm64"
    return Path("/dev/nvidiactl").exists() or Path("/proc/driver/nvidia/version").exists()


def default_onnx_dir() -> Path:
    """`<cache dir>/models`: exports are derived from the model alone, so every data directory shares them."""
    from mcp_sections.shared.locations import default_cache_dir

    return default_cache_dir() / "models"


def local_model_dir(source: str, allow_download: bool) -> Path:
    """The model's directory on disk (a path, or a snapshot already in the Hugging Face cache)."""
    path = Path(source).expanduser()
    if path.is_dir():
        return path
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(source, local_files_only=not allow_download))
    except Exception as exc:
        raise Unavailable(f"model {source!r} is not a local directory ({type(exc).__name__})") from exc


def _read_json(path: Path) -> Any:
    import json

    return json.loads(path.read_text(encoding="utf-8"))


def check_onnx_compatible(directory: Path) -> None:
    """Only what `OnnxModel` reproduces: a Transformer, mean pooling, an optional Normalize, tokenizer.json."""
    modules_file = directory / "modules.json"
    if not (directory / "tokenizer.json").is_file() or not modules_file.is_file():
        raise Unavailable("the ONNX backend needs a sentence-transformers model with tokenizer.json")
    kinds = [module.get("type", "").rsplit(".", 1)[-1] for module in _read_json(modules_file)]
    if kinds[:2] != ["Transformer", "Pooling"] or any(kind != "Normalize" for kind in kinds[2:]):
        raise Unavailable(f"the ONNX backend supports Transformer + mean Pooling (+ Normalize), not {kinds}")
    pooling_dir = next(
        (directory / m.get("path", "") for m in _read_json(modules_file) if m.get("type", "").endswith("Pooling")),
        directory,
    )
    pooling = _read_json(pooling_dir / "config.json") if (pooling_dir / "config.json").is_file() else {}
    modes = {key for key, value in pooling.items() if key.startswith("pooling_mode_") and value is True}
    if modes != {"pooling_mode_mean_tokens"}:
        raise Unavailable(f"the ONNX backend supports mean pooling only, not {sorted(modes) or 'none'}")


def export_name(model_key: str, directory: Path) -> str:
    """`<model>-<fingerprint>`: a new export whenever the weights, config or tokenizer change."""
    import re

    digest = hashlib.sha256(f"v{ONNX_EXPORT_VERSION}".encode())
    files = ("config.json", "tokenizer.json", "model.safetensors", "pytorch_model.bin", "sentence_bert_config.json")
    for name in files:
        path = directory / name
        if path.is_file():
            stat = path.stat()
            digest.update(f"{name}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", model_key.strip("/"))[-60:]
    return f"{slug}-{digest.hexdigest()[:16]}"


def ensure_onnx_export(directory: Path, target: Path, *, int8: bool = False, threads: int = 1) -> Path:
    """The cached ONNX file of the model in `directory` (`target/model.onnx` or `model-int8.onnx`), made once.

    The export runs in a child process (`python -m mcp_sections.shared.embeddings export ...`) so that torch is
    never imported into the server; a file lock keeps two processes from exporting at once, and the file is
    renamed into place only after the child compared its output with torch's.
    """
    path = target / ("model-int8.onnx" if int8 else "model.onnx")
    if path.is_file():
        return path
    import subprocess
    import sys

    target.mkdir(parents=True, exist_ok=True)
    with _FileLock(target / ".lock"):
        if path.is_file():  # another process made it while this one waited
            return path
        logger.info("exporting the embedding model to ONNX%s (once): %s", " int8" if int8 else "", target)
        started = time.perf_counter()
        command = [sys.executable, "-m", "mcp_sections.shared.embeddings", "export", str(directory), str(target)]
        command += ["--threads", str(threads)] + (["--int8"] if int8 else [])
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONWARNINGS": "ignore"}
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env, check=False)
        except subprocess.TimeoutExpired as exc:
            raise Unavailable("the ONNX export took more than 15 minutes") from exc
        if done.returncode != 0 or not path.is_file():
            lines = [line for line in (done.stderr or "").strip().splitlines() if line.strip()]
            raise Unavailable(f"the ONNX export failed: {lines[-1][:300] if lines else f'exit {done.returncode}'}")
        logger.info("ONNX export done in %.1fs: %s", time.perf_counter() - started, path)
    return path


class _FileLock:
    """An exclusive advisory lock on a file (POSIX `flock`; no lock where it does not exist)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.handle: Any = None

    def __enter__(self) -> _FileLock:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: the atomic rename still keeps files whole
            return self
        self.handle = open(self.path, "a+")  # closed (unlocked) in __exit__
        fcntl.flock(self.handle, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.handle is not None:
            self.handle.close()  # closing releases the lock


class OnnxModel:
    """The sentence-transformers pipeline without torch: tokenizers → ONNX Runtime → mean pooling → L2 norm."""

    def __init__(self, path: Path, directory: Path, *, threads: int = 1, batch_size: int = 32) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # no busy-waiting on a shared CPU
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.inputs = {item.name for item in self.session.get_inputs()}
        self.tokenizer, self.lower_case = _st_tokenizer(directory)
        self.batch_size = batch_size
        self.dimension = int(self.session.get_outputs()[0].shape[-1])

    def encode(self, texts: Sequence[str], batch_size: int | None = None, **_: Any) -> np.ndarray:
        import numpy as np

        size = batch_size or self.batch_size
        texts = [text.lower() for text in texts] if self.lower_case else list(texts)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))  # similar lengths batch with less padding
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), size):
            rows = order[start : start + size]
            out[rows] = self.forward([texts[i] for i in rows])
        return out

    def forward(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self.session.run(None, {name: value for name, value in feed.items() if name in self.inputs})[0]
        return _mean_pool(hidden, mask)


def _mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """sentence-transformers' mean pooling over real tokens, then L2 normalisation, in float32."""
    import numpy as np

    weights = mask[..., None].astype(np.float32)
    summed = np.einsum("bsd,bsk->bd", hidden.astype(np.float32, copy=False), weights)
    pooled = summed / np.clip(weights.sum(axis=1), 1e-9, None)
    return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)


def _st_tokenizer(directory: Path) -> tuple[Any, bool]:
    """tokenizer.json set up as sentence-transformers does: truncation at max_seq_length, pad to the longest."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
    st_config = directory / "sentence_bert_config.json"
    config = _read_json(st_config) if st_config.is_file() else {}
    tok_file = directory / "tokenizer_config.json"
    tok_config = _read_json(tok_file) if tok_file.is_file() else {}
    limit = config.get("max_seq_length") or min(int(tok_config.get("model_max_length") or 512), 512)
    configured_pad = tok_config.get("pad_token")
    pad_token = configured_pad if isinstance(configured_pad, str) else "[PAD]"
    pad_id = tokenizer.token_to_id(pad_token)
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=int(limit))
    tokenizer.enable_padding(pad_id=pad_id if pad_id is not None else 0, pad_token=pad_token)
    return tokenizer, bool(config.get("do_lower_case"))


def export_child(argv: Sequence[str]) -> int:
    """`python -m mcp_sections.shared.embeddings export MODEL_DIR TARGET [--int8] [--threads N]` (see above)."""
    import argparse

    parser = argparse.ArgumentParser(prog="mcp_sections.shared.embeddings export")
    parser.add_argument("directory", type=Path)
    parser.add_argument("target", type=Path)
    parser.add_argument("--int8", action="store_true")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    import torch
    from transformers import AutoModel

    torch.set_num_threads(max(1, args.threads))
    model = AutoModel.from_pretrained(args.directory, local_files_only=True, attn_implementation="eager").eval()
    tokenizer, lower_case = _st_tokenizer(args.directory)
    sentences = [s.lower() for s in _CHECK_SENTENCES] if lower_case else list(_CHECK_SENTENCES)
    encodings = tokenizer.encode_batch(sentences)
    ids = torch.tensor([e.ids for e in encodings], dtype=torch.long)
    mask = torch.tensor([e.attention_mask for e in encodings], dtype=torch.long)
    names = [name for name in ONNX_INPUTS if name in inspect_parameters(model.forward)]
    with torch.no_grad():
        reference = model(input_ids=ids, attention_mask=mask).last_hidden_state.numpy()
    expected = _mean_pool(reference, mask.numpy())
    fp32 = args.target / "model.onnx"
    if not fp32.is_file():
        temporary = args.target / f".model-{os.getpid()}.onnx"

        class Wrapper(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = model

            def forward(self, *inputs: Any) -> Any:
                return self.model(**dict(zip(names, inputs, strict=True))).last_hidden_state

        sample = torch.ones((2, 8), dtype=torch.long)
        with torch.no_grad():
            torch.onnx.export(
                Wrapper(),
                tuple(sample for _ in names),
                str(temporary),
                input_names=names,
                output_names=["last_hidden_state"],
                dynamic_axes={name: {0: "batch", 1: "sequence"} for name in [*names, "last_hidden_state"]},
                opset_version=17,
                dynamo=False,
            )
        _verify(temporary, args.directory, sentences, expected, minimum=0.9999)
        os.replace(temporary, fp32)
    if args.int8:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        temporary = args.target / f".model-int8-{os.getpid()}.onnx"
        # Per-channel int8 weights; the feed-forward output projections (fed by GELU, whose activations
        # quantise badly) stay float. Measured on 50 sentences, cosine to torch: mean 0.994, worst 0.976
        # (all quantised: mean 0.990, worst 0.964; per-tensor: mean 0.94) for ~the same speed.
        import onnx

        graph = onnx.load(str(fp32), load_external_data=False).graph
        keep_float = [n.name for n in graph.node if "/output/dense/" in n.name and "/attention/" not in n.name]
        quantize_dynamic(
            str(fp32), str(temporary), per_channel=True, weight_type=QuantType.QInt8, nodes_to_exclude=keep_float
        )
        _verify(temporary, args.directory, sentences, expected, minimum=0.95)
        os.replace(temporary, args.target / "model-int8.onnx")
    return 0


def inspect_parameters(function: Any) -> set[str]:
    import inspect

    return set(inspect.signature(function).parameters)


def _verify(path: Path, directory: Path, sentences: list[str], expected: np.ndarray, minimum: float) -> None:
    """Refuse an export whose vectors drift from torch's (per sentence cosine below `minimum`)."""
    import numpy as np

    model = OnnxModel(path, directory)
    model.lower_case = False  # the sentences are already as the tokenizer wants them
    got = model.encode(sentences, batch_size=len(sentences))
    cosines = np.einsum("ij,ij->i", got, expected)
    if float(cosines.min()) < minimum:
        path.unlink(missing_ok=True)
        raise SystemExit(f"ONNX export drifts from torch: cosine {float(cosines.min()):.5f} < {minimum}")


class Unavailable(RuntimeError):
    """A configuration problem stated plainly (no exception class name in the reason)."""


def failure_reason(exc: BaseException) -> str:
    if isinstance(exc, Unavailable):
        return str(exc)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__
