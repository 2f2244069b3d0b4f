"""The ONNX Runtime backend: the model's ONNX file (the one its directory ships, else one built once from its
weights by `bert_onnx`, in this process and without torch), then tokenising and mean-pooling in numpy."""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


from mcp_sections.shared.embeddings.settings import ONNX_EXPORT_VERSION
from mcp_sections.shared.ground.errors import SuiteError

logger = logging.getLogger("mcp_sections.embeddings")

# ---- the ONNX Runtime backend ---------------------------------------------------------------
_CHECK_SENTENCES = (
    "hi",
    "The user prefers short answers without emojis.",
    "Wir haben uns für PostgreSQL entschieden, weil es schneller ist. 日本語も少し。",
    "def parse(tokens): return [t.strip() for t in tokens if t]  # 3.14 0xdeadbeef https://example.com/a?b=c",
    "Alice deployed the billing service after the outage, then reviewed the on-call rotation. " * 12,
)
"""Sentences a new file encodes before it is used: short, long (truncated), mixed."""


def gpu_visible() -> bool:
    """A cheap guess, without importing torch, that torch would find a GPU (NVIDIA device nodes, Apple silicon)."""
    import platform
    import sys

    if sys.platform == "darwin":
        return platform.machine() == "arm64"
    return Path("/dev/nvidiactl").exists() or Path("/proc/driver/nvidia/version").exists()


def default_onnx_dir() -> Path:
    """`<cache dir>/models`: exports are derived from the model alone, so every data directory shares them."""
    from mcp_sections.shared.ground.locations import default_cache_dir

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
        raise EmbeddingModelUnavailable(f"model {source!r} is not a local directory ({type(exc).__name__})") from exc


def _read_json(path: Path) -> Any:
    import json

    return json.loads(path.read_text(encoding="utf-8"))


def check_onnx_compatible(directory: Path) -> None:
    """Only what `OnnxModel` reproduces: a Transformer, mean pooling, an optional Normalize, tokenizer.json."""
    modules_file = directory / "modules.json"
    if not (directory / "tokenizer.json").is_file() or not modules_file.is_file():
        raise EmbeddingModelUnavailable("the ONNX backend needs a sentence-transformers model with tokenizer.json")
    kinds = [module.get("type", "").rsplit(".", 1)[-1] for module in _read_json(modules_file)]
    if kinds[:2] != ["Transformer", "Pooling"] or any(kind != "Normalize" for kind in kinds[2:]):
        raise EmbeddingModelUnavailable(
            f"the ONNX backend supports Transformer + mean Pooling (+ Normalize), not {kinds}"
        )
    pooling_dir = next(
        (directory / m.get("path", "") for m in _read_json(modules_file) if m.get("type", "").endswith("Pooling")),
        directory,
    )
    pooling = _read_json(pooling_dir / "config.json") if (pooling_dir / "config.json").is_file() else {}
    modes = {key for key, value in pooling.items() if key.startswith("pooling_mode_") and value is True}
    if modes != {"pooling_mode_mean_tokens"}:
        raise EmbeddingModelUnavailable(f"the ONNX backend supports mean pooling only, not {sorted(modes) or 'none'}")


SHIPPED_ONNX = "onnx/model.onnx"
"""Where a sentence-transformers model directory keeps an ONNX export of its own (used as it is)."""


def export_name(model_key: str, digests: Mapping[str, str]) -> str:
    """`<model>-<fingerprint>`, the fingerprint made of the sha256 of the files the ONNX file is built from (for the
    default model, those checked against its pinned digests): a cached build belongs to those bytes only."""
    import re

    digest = hashlib.sha256(f"v{ONNX_EXPORT_VERSION}".encode())
    for name in sorted(digests):
        digest.update(f"{name}:{digests[name]};".encode())
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", model_key.strip("/"))[-60:]
    return f"{slug}-{digest.hexdigest()[:16]}"


BUILT_FROM = ("config.json", "tokenizer.json", "model.safetensors", SHIPPED_ONNX, "sentence_bert_config.json")
"""The files of a model directory its ONNX file depends on (hashed for the name of a model that is not pinned)."""


def sha256_of(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def content_digests(directory: Path) -> dict[str, str]:
    """The sha256 of each of `BUILT_FROM` present in `directory` (a model no digest is pinned for)."""
    return {name: sha256_of(directory / name) for name in BUILT_FROM if (directory / name).is_file()}


def ensure_onnx(directory: Path, target: Path, *, int8: bool = False) -> Path:
    """The ONNX file of the model in `directory`: its own `onnx/model.onnx`, else `target/model.onnx` built once
    from its weights (`bert_onnx`); with `int8`, `target/model-int8.onnx` quantised once from that float file.

    Everything runs in this process (no child that could outlive it). A file lock keeps two processes from building
    at once; a file is written under a temporary name and renamed into place once complete (the int8 one once its
    vectors were compared with the float one's), so a process killed mid-build leaves no half file under the final
    name, only a temporary one that the next build removes.
    """
    shipped = directory / SHIPPED_ONNX
    path = target / ("model-int8.onnx" if int8 else "model.onnx")
    if not int8 and shipped.is_file():
        return shipped
    if path.is_file():
        return path
    target.mkdir(parents=True, exist_ok=True)
    with _FileLock(target / ".lock"):
        if path.is_file():  # another process made it while this one waited
            return path
        for leftover in target.glob(".building-*"):  # from a process killed mid-build; none is running now
            leftover.unlink(missing_ok=True)
        float_path = shipped if shipped.is_file() else target / "model.onnx"
        if not float_path.is_file():
            _build_float(directory, float_path)
        if int8:
            _quantize(float_path, directory, path)
    return path


def _build_float(directory: Path, path: Path) -> None:
    import onnx

    from mcp_sections.shared.embeddings.bert_onnx import NotBert, build_bert_onnx

    started = time.perf_counter()
    try:
        model = build_bert_onnx(directory)
    except NotBert as exc:
        raise EmbeddingModelUnavailable(
            f"no ONNX file for this model and none can be built without torch: {exc}"
        ) from exc
    temporary = path.with_name(f".building-{os.getpid()}-{path.name}")
    onnx.save(model, str(temporary))
    os.replace(temporary, path)  # no second session to check it: tests compare its vectors with torch's
    logger.info("built the embedding model's ONNX file in %.1fs: %s", time.perf_counter() - started, path)


def _quantize(float_path: Path, directory: Path, path: Path) -> None:
    """Per-channel int8 weights; the feed-forward output projections (fed by GELU, whose activations quantise
    badly) stay float. Measured on 50 sentences, cosine to the float model: mean 0.994, worst 0.976 (all
    quantised: mean 0.990, worst 0.964; per-tensor: mean 0.94) for ~the same speed."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = onnx.load(str(float_path), load_external_data=False).graph
    keep_float = [node.name for node in graph.node if node.op_type == "MatMul" and _feed_forward_output(node.name)]
    temporary = path.with_name(f".building-{os.getpid()}-{path.name}")
    quantize_dynamic(
        str(float_path), str(temporary), per_channel=True, weight_type=QuantType.QInt8, nodes_to_exclude=keep_float
    )
    _check(temporary, directory, against=float_path, minimum=0.95)
    os.replace(temporary, path)


def _feed_forward_output(name: str) -> bool:
    """The MatMul of a layer's feed-forward output, as `bert_onnx` names it or as torch's exporter does."""
    return name.endswith("/output/matmul") or ("/output/dense/" in name and "/attention/" not in name)


def _check(path: Path, directory: Path, against: Path, minimum: float) -> None:
    """Refuse a quantised file whose vectors drift from the float file's (per sentence cosine below `minimum`)."""
    import numpy as np

    got = OnnxModel(path, directory).encode(_CHECK_SENTENCES)
    cosines = np.einsum("ij,ij->i", got, OnnxModel(against, directory).encode(_CHECK_SENTENCES))
    if not np.isfinite(cosines).all() or float(cosines.min()) < minimum:
        path.unlink(missing_ok=True)
        raise EmbeddingModelUnavailable(
            f"the int8 ONNX file drifts from the float one: cosine {float(cosines.min()):.5f}"
        )


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

    def __init__(
        self, path: Path, directory: Path, *, threads: int = 1, batch_size: int = 32, passes_at_once: int = 1
    ) -> None:
        """`passes_at_once` > 1: that many forward passes run at once, from as many threads, sharing the session's
        `threads` (a session runs concurrent calls; the GIL is released while it computes)."""
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
        self.tokenizer, self.lower_case, self.pad_id = _st_tokenizer(directory)
        self.batch_size = batch_size
        self.dimension = int(self.session.get_outputs()[0].shape[-1])
        self._passes = ThreadPoolExecutor(passes_at_once, "onnx-pass") if passes_at_once > 1 else None

    def encode(self, texts: Sequence[str], batch_size: int | None = None, **_: Any) -> np.ndarray:
        import numpy as np

        size = batch_size or self.batch_size
        encodings = self.tokenizer.encode_batch(self._cased(texts))
        # batches of similar token counts: each is padded to its longest text only
        order = sorted(range(len(encodings)), key=lambda i: -len(encodings[i].ids))
        batches = [order[start : start + size] for start in range(0, len(order), size)]
        out = np.empty((len(encodings), self.dimension), dtype=np.float32)
        for rows, vectors in zip(batches, self._run([[encodings[i] for i in rows] for rows in batches]), strict=True):
            out[rows] = vectors
        return out

    def encode_passes(self, groups: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """Each group's vectors, the group in one forward pass (padded to its longest text), the passes at once."""
        encodings = self.tokenizer.encode_batch(self._cased([text for group in groups for text in group]))
        passes, start = [], 0
        for group in groups:
            passes.append(encodings[start : start + len(group)])
            start += len(group)
        return self._run(passes)

    def _run(self, passes: list[list[Any]]) -> list[np.ndarray]:
        """The forward passes' vectors, in order: `passes_at_once` at a time."""
        if self._passes is None or len(passes) < 2:
            return [self._forward(encodings) for encodings in passes]
        return list(self._passes.map(self._forward, passes))

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """How many tokens the model reads of each text (after truncation)."""
        return [len(encoding.ids) for encoding in self.tokenizer.encode_batch(self._cased(texts))]

    def _cased(self, texts: Sequence[str]) -> list[str]:
        return [text.lower() for text in texts] if self.lower_case else list(texts)

    def _forward(self, encodings: list[Any]) -> np.ndarray:
        """One batch, padded to its longest encoding."""
        import numpy as np

        width = max(len(encoding.ids) for encoding in encodings)
        ids = np.full((len(encodings), width), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
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


def _st_tokenizer(directory: Path) -> tuple[Any, bool, int]:
    """tokenizer.json set up as sentence-transformers does (truncation at max_seq_length; `OnnxModel` pads each batch
    to its longest), whether texts are lower-cased first, and the padding token's id."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
    st_config = directory / "sentence_bert_config.json"
    config = _read_json(st_config) if st_config.is_file() else {}
    tok_file = directory / "tokenizer_config.json"
    tok_config = _read_json(tok_file) if tok_file.is_file() else {}
    limit = config.get("max_seq_length") or min(int(tok_config.get("model_max_length") or 512), 512)
    configured_pad = tok_config.get("pad_token")
    pad_id = tokenizer.token_to_id(configured_pad if isinstance(configured_pad, str) else "[PAD]")
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=int(limit))
    return tokenizer, bool(config.get("do_lower_case")), pad_id if pad_id is not None else 0


class EmbeddingModelUnavailable(SuiteError, RuntimeError):
    """The embedding model cannot be opened as configured (a package or file missing, a model the ONNX backend does
    not run): a configuration problem stated plainly (no exception class name in the reason)."""


def failure_reason(exc: BaseException) -> str:
    if isinstance(exc, EmbeddingModelUnavailable):
        return str(exc)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__
