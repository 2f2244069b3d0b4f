"""The default model's files are checked against pinned digests on every source before anything reads them.

Sources: the offline carrier package (a tampered copy is put ahead of the installed one on the import path), a
directory of the user's (`embedding_model_dir`), the Hugging Face hub at the pinned revision (a stand-in on 127.0.0.1
reached through `HF_ENDPOINT`, by a separate process as a user's server would, with its own `HF_HOME`) and the
Hugging Face cache that download leaves. One byte flipped in the weights is refused on each, with an error naming the
file, where it came from and both digests. The ONNX file built from the weights is named by their digests.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_sections.shared.embeddings import Embedder
from mcp_sections.shared.embeddings.default_model import (
    CARRIER,
    PINNED_FILES,
    REPO,
    REVISION,
    ModelFileMismatch,
    carrier_dir,
    verify,
)
from tests.hub_stand_in import git_blob_id, hub_stand_in

_NEEDED = ("numpy", "onnxruntime", "onnx", "tokenizers", "huggingface_hub")
_MISSING = [name for name in _NEEDED if importlib.util.find_spec(name) is None]
GENUINE = carrier_dir()
if _MISSING or GENUINE is None:
    pytest.skip(f"needs the memory-offline extra ({_MISSING or 'the carrier'} missing)", allow_module_level=True)
np = pytest.importorskip("numpy")

#: The upstream digest of all-MiniLM-L6-v2's weights at REVISION (the hub's LFS object id for model.safetensors).
UPSTREAM_WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
#: The git blob ids the hub lists for the files kept in git at REVISION (its ETags for them).
HUB_GIT_BLOB_IDS = {
    "config.json": "72b987fd805cfa2b58c4c8c952b274a11bfd5a00",
    "config_sentence_transformers.json": "fd1b291129c607e5d49799f87cb219b27f98acdf",
    "modules.json": "952a9b81c0bfd99800fabf352f69c7ccd46c5e43",
    "sentence_bert_config.json": "59d594003bf59880a884c574bf88ef7555bb0202",
    "tokenizer.json": "cb202bfe2e3c98645018a6d12f182a434c9d3e02",
    "tokenizer_config.json": "c79f2b6a0cea6f4b564fed1938984bace9d30ff0",
    "vocab.txt": "fb140275c155a9c7c5a3b3e0e77a9e839594a938",
    "1_Pooling/config.json": "d1514c3162bbe87b343f565fadc62e6c06f04f03",
}
SENTENCES = ["The user prefers short answers without emojis.", "which DB stores the billing documents?"]
HF_FOLDER = "models--" + REPO.replace("/", "--")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _flipped(data: bytes) -> bytes:
    """One byte flipped near the end (inside the last tensor's values: the file still parses)."""
    return data[:-100] + bytes([data[-100] ^ 0x01]) + data[-99:]


def _genuine_files() -> dict[str, bytes]:
    assert GENUINE is not None
    return {name: (GENUINE / name).read_bytes() for name in PINNED_FILES}


def _model_copy(target: Path, replace: dict[str, bytes] | None = None) -> Path:
    """The genuine files linked into `target`, those of `replace` written with the bytes given."""
    assert GENUINE is not None
    for name in PINNED_FILES:
        path = target / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if replace and name in replace:
            path.write_bytes(replace[name])
        else:
            path.symlink_to(GENUINE / name)
    return target


@pytest.fixture(scope="module")
def onnx_dir(shared_cache_dir: Path) -> Path:
    """The run's ONNX files: the default model's is named by its digests, so every source shares one build."""
    return shared_cache_dir / "models"


@pytest.fixture(scope="module")
def reference(onnx_dir: Path) -> np.ndarray:
    embedder = Embedder(threads=1, onnx_dir=onnx_dir)
    assert embedder.load(), embedder.error
    return embedder.encode(SENTENCES)


def test_the_pinned_digests_are_the_upstream_files_at_the_pinned_revision() -> None:
    assert len(REVISION) == 40 and int(REVISION, 16)  # a full commit, not a branch that can move
    assert PINNED_FILES["model.safetensors"] == UPSTREAM_WEIGHTS_SHA256
    files = _genuine_files()
    assert {name: _sha256(data) for name, data in files.items()} == PINNED_FILES  # the carrier holds these bytes
    assert {name: git_blob_id(files[name]) for name in HUB_GIT_BLOB_IDS} == HUB_GIT_BLOB_IDS  # as the hub lists them
    assert {"model.safetensors", "tokenizer.json", "config.json"} <= set(PINNED_FILES)


def test_the_carrier_is_used_once_checked(onnx_dir: Path, reference: np.ndarray) -> None:
    embedder = Embedder(threads=1, onnx_dir=onnx_dir)
    assert embedder.load(), embedder.error
    assert embedder.verified is not None and embedder.verified.source == f"the carrier package {CARRIER[0]}"
    assert embedder.model_key == "all-MiniLM-L6-v2"
    assert np.allclose(embedder.encode(SENTENCES), reference, atol=1e-6)


def test_a_tampered_carrier_package_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, onnx_dir: Path) -> None:
    """A carrier whose weights differ by one byte (a copy ahead of the installed one on the import path) is refused,
    and no other source replaces it: the error says which file, where, and both digests."""
    assert GENUINE is not None
    _, _, package, relative = CARRIER
    weights = _flipped((GENUINE / "model.safetensors").read_bytes())
    _model_copy(tmp_path / "site" / package / relative, {"model.safetensors": weights})
    (tmp_path / "site" / package / "__init__.py").write_text("", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    embedder = Embedder(threads=1, onnx_dir=tmp_path / "exports")
    assert not embedder.load()
    error = embedder.error or ""
    assert "model.safetensors" in error and f"carrier package {CARRIER[0]}" in error
    assert _sha256(weights) in error and UPSTREAM_WEIGHTS_SHA256 in error
    assert f"'{CARRIER[0]}=={CARRIER[1]}'" in error  # how to put the genuine one back
    assert not (tmp_path / "exports").exists()  # nothing was built from the tampered weights


def test_a_directory_of_the_users_is_checked_the_same_way(
    tmp_path: Path, onnx_dir: Path, reference: np.ndarray
) -> None:
    copy = _model_copy(tmp_path / "copy")
    embedder = Embedder(threads=1, onnx_dir=onnx_dir, model_dir=str(copy))
    assert embedder.load(), embedder.error
    assert embedder.verified is not None and embedder.verified.source == f"embedding_model_dir {copy}"
    assert embedder.model_key == "all-MiniLM-L6-v2"  # the same model: the vectors stored before stay valid
    assert np.allclose(embedder.encode(SENTENCES), reference, atol=1e-6)
    assert len(list(onnx_dir.glob("onnx/all-MiniLM-L6-v2-*/model.onnx"))) == 1  # the same bytes, the same build

    assert GENUINE is not None
    weights = _flipped((GENUINE / "model.safetensors").read_bytes())
    tampered = _model_copy(tmp_path / "tampered", {"model.safetensors": weights})
    refused = Embedder(threads=1, onnx_dir=tmp_path / "exports", model_dir=str(tampered))
    assert not refused.load()
    error = refused.error or ""
    assert "model.safetensors" in error and f"embedding_model_dir {tampered}" in error
    assert _sha256(weights) in error and UPSTREAM_WEIGHTS_SHA256 in error
    assert not (tmp_path / "exports").exists()


@pytest.mark.parametrize("name", sorted(PINNED_FILES))
def test_every_pinned_file_is_checked(tmp_path: Path, name: str) -> None:
    """The tokenizer and configs are pinned as the weights are: a changed or missing one is refused."""
    assert GENUINE is not None
    changed = (GENUINE / name).read_bytes()[:-1] + b" "
    with pytest.raises(ModelFileMismatch) as refused:
        verify(_model_copy(tmp_path / "changed", {name: changed}), "a test", "fix it")
    assert refused.value.name == name
    assert (refused.value.actual, refused.value.expected) == (_sha256(changed), PINNED_FILES[name])
    assert _sha256(changed) in str(refused.value) and PINNED_FILES[name] in str(refused.value)
    missing = _model_copy(tmp_path / "missing")
    (missing / name).unlink()
    with pytest.raises(ModelFileMismatch, match=f"{name} from a test .*: missing, expected sha256"):
        verify(missing, "a test", "fix it")


def test_an_unset_model_dir_that_is_no_directory_says_so(tmp_path: Path) -> None:
    embedder = Embedder(threads=1, onnx_dir=tmp_path / "exports", model_dir=str(tmp_path / "nowhere"))
    assert not embedder.load()
    assert "embedding_model_dir" in (embedder.error or "") and "is not a directory" in (embedder.error or "")


# ---- the hub, at the pinned revision -------------------------------------------------------------------------

_LOAD = """
import json, sys
sys.modules[{package!r}] = None  # no carrier package here: the hub is the source
from mcp_sections.shared.embeddings import Embedder
e = Embedder(threads=1, onnx_dir=sys.argv[1], allow_download={allow_download!r})
ok = e.load()
vectors = e.encode({sentences!r}).tolist() if ok else None
print(json.dumps({{"ok": ok, "error": e.error, "source": e.verified.source if e.verified else None,
                  "directory": str(e.verified.directory) if e.verified else None, "vectors": vectors}}))
"""


def _load_elsewhere(
    hf_home: Path, onnx_dir: Path, endpoint: str, *, offline: bool = False, allow_download: bool | None = None
) -> dict:
    """The default model loaded in a new process, as a server without the carrier would, with `HF_HOME` and
    `HF_ENDPOINT` (and `HF_HUB_OFFLINE`) set as a user sets them."""
    script = _LOAD.format(package=CARRIER[2], sentences=SENTENCES, allow_download=allow_download)
    env = {**os.environ, "HF_HOME": str(hf_home), "HF_ENDPOINT": endpoint, "HF_HUB_DISABLE_TELEMETRY": "1"}
    env.pop("HF_HUB_CACHE", None)
    env.pop("HF_HUB_OFFLINE", None)
    if offline:
        env["HF_HUB_OFFLINE"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", script, str(onnx_dir)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def unreachable() -> Iterator[str]:
    """An endpoint where nothing answers: a port bound here and never listened on (connections are refused)."""
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{bound.getsockname()[1]}"


#: Another commit on the stand-in, where its `main` branch points: a download that followed the branch would get it.
LATER = "f" * 40


@pytest.fixture(scope="module")
def downloaded(tmp_path_factory: pytest.TempPathFactory, onnx_dir: Path) -> Iterator[tuple[Path, dict, list]]:
    """The default model fetched once from the stand-in hub into a fresh `HF_HOME`: (HF_HOME, the load's report,
    the requests the hub saw)."""
    hf_home = tmp_path_factory.mktemp("hf-home")
    files = _genuine_files()
    later = {**files, "config.json": files["config.json"].replace(b'"hidden_act"', b'"hidden_act" ')}
    with hub_stand_in(REPO, {REVISION: files, LATER: later}, {"main": LATER}) as hub:
        report = _load_elsewhere(hf_home, onnx_dir, hub.endpoint)
        report["endpoint"] = hub.endpoint
        yield hf_home, report, list(hub.requests)


def test_the_hub_path_fetches_the_pinned_revision_and_checks_it(
    downloaded: tuple[Path, dict, list], onnx_dir: Path, reference: np.ndarray
) -> None:
    hf_home, report, requests = downloaded
    assert report["ok"], report["error"]
    assert report["source"] == f"the hub at {report['endpoint']}"
    snapshot = hf_home / "hub" / HF_FOLDER / "snapshots" / REVISION
    assert Path(report["directory"]) == snapshot
    assert sorted(str(p.relative_to(snapshot)) for p in snapshot.rglob("*") if p.is_file()) == sorted(PINNED_FILES)
    resolved = [path for _, path in requests if "/resolve/" in path]
    assert resolved and all(f"/{REPO}/resolve/{REVISION}/" in path for path in resolved)  # never `main`
    assert ("GET", f"/blobs/{UPSTREAM_WEIGHTS_SHA256}") in requests  # the weights through the CDN redirect
    assert np.allclose(np.array(report["vectors"], dtype=np.float32), reference, atol=1e-6)
    assert len(list(onnx_dir.glob("onnx/all-MiniLM-L6-v2-*/model.onnx"))) == 1  # the carrier's build, reused


def test_the_downloaded_copy_is_used_offline_and_checked_again(
    downloaded: tuple[Path, dict, list], onnx_dir: Path, reference: np.ndarray, tmp_path: Path, unreachable: str
) -> None:
    hf_home, _, _ = downloaded
    report = _load_elsewhere(hf_home, onnx_dir, unreachable, offline=True)
    assert report["ok"], report["error"]
    assert report["source"] == "the Hugging Face cache"
    assert np.allclose(np.array(report["vectors"], dtype=np.float32), reference, atol=1e-6)

    copy = tmp_path / "hf-home"
    shutil.copytree(hf_home, copy, symlinks=True)
    blob = (copy / "hub" / HF_FOLDER / "blobs" / UPSTREAM_WEIGHTS_SHA256).resolve()
    blob.write_bytes(_flipped(blob.read_bytes()))
    refused = _load_elsewhere(copy, tmp_path / "exports", unreachable, offline=True)
    assert not refused["ok"]
    error = refused["error"]
    assert "model.safetensors" in error and "the Hugging Face cache" in error
    assert _sha256(blob.read_bytes()) in error and UPSTREAM_WEIGHTS_SHA256 in error
    assert f"delete {copy / 'hub' / HF_FOLDER}" in error  # how to fetch it again
    assert not (tmp_path / "exports").exists()


def test_a_hub_serving_a_flipped_byte_at_the_pinned_revision_is_refused(tmp_path: Path) -> None:
    files = _genuine_files()
    files["model.safetensors"] = _flipped(files["model.safetensors"])
    with hub_stand_in(REPO, {REVISION: files}, {"main": REVISION}) as hub:
        report = _load_elsewhere(tmp_path / "hf-home", tmp_path / "exports", hub.endpoint)
    assert not report["ok"]
    error = report["error"]
    assert "model.safetensors" in error and f"the hub at {hub.endpoint}" in error
    assert _sha256(files["model.safetensors"]) in error and UPSTREAM_WEIGHTS_SHA256 in error
    assert not (tmp_path / "exports").exists()


def test_without_a_local_copy_and_no_hub_the_error_names_the_offline_extra(tmp_path: Path, unreachable: str) -> None:
    report = _load_elsewhere(tmp_path / "hf-home", tmp_path / "exports", unreachable)
    assert not report["ok"]
    assert "cannot be reached" in report["error"] and "[memory-offline]'" in report["error"]
    with hub_stand_in(REPO, {REVISION: {}}) as hub:
        forbidden = _load_elsewhere(tmp_path / "hf-home", tmp_path / "exports", hub.endpoint, allow_download=False)
    assert not forbidden["ok"] and "embedding_allow_download is false" in forbidden["error"]
    assert hub.requests == []  # not even asked


# ---- the ONNX file's name ------------------------------------------------------------------------------------


def test_the_onnx_file_follows_the_weights_bytes_not_their_size_and_time(tmp_path: Path) -> None:
    """A model named by path (not pinned): one byte of its weights changed with the size and modification time
    kept (what the old size + mtime key could not see) gets a file of its own, never the stale build."""
    assert GENUINE is not None
    model = tmp_path / "model"
    shutil.copytree(GENUINE, model)
    exports = tmp_path / "exports"
    first = Embedder(str(model), threads=1, onnx_dir=exports)
    assert first.load(), first.error
    before = first.encode(SENTENCES)
    weights = model / "model.safetensors"
    stat = weights.stat()
    weights.write_bytes(_flipped(weights.read_bytes()))
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert weights.stat().st_size == stat.st_size and weights.stat().st_mtime_ns == stat.st_mtime_ns
    second = Embedder(str(model), threads=1, onnx_dir=exports)
    assert second.load(), second.error
    assert len(list(exports.glob("onnx/*/model.onnx"))) == 2  # built again from the bytes now there
    assert second.encode(SENTENCES).shape == before.shape


# ---- what doctor says -----------------------------------------------------------------------------------------

_PROBE = """
import json, sys, os
from types import SimpleNamespace
from mcp_sections.shared.embeddings.requirements import default_model_files
from mcp_sections.shared.embeddings.settings import EmbeddingSettings
def probe(**fields):
    return default_model_files(SimpleNamespace(section_settings=EmbeddingSettings(**fields)))
found = {"carrier": probe(), "dir": probe(embedding_model_dir=sys.argv[3])}
found["no dir"] = probe(embedding_model_dir="/nowhere")
sys.modules[%r] = None  # from here on, no carrier package
os.environ["HF_ENDPOINT"] = sys.argv[1]
found["hub"] = probe()
found["forbidden"] = probe(embedding_allow_download=False)
found["endpoint"] = probe(embedding_provider="openai")
os.environ["HF_ENDPOINT"] = sys.argv[2]
found["unreachable"] = probe()
print(json.dumps(found))
"""


def test_doctor_says_where_the_model_would_come_from(tmp_path: Path, unreachable: str) -> None:
    copy = _model_copy(tmp_path / "copy")
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_DISABLE_TELEMETRY": "1"}
    with hub_stand_in(REPO, {REVISION: _genuine_files()}) as hub:
        args = [sys.executable, "-c", _PROBE % CARRIER[2], hub.endpoint, unreachable, str(copy)]
        done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120, check=True)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert (found["carrier"], found["dir"], found["hub"], found["endpoint"]) == (None, None, None, None)
    assert found["no dir"] == "embedding_model_dir '/nowhere' is not a directory"
    assert "is not on this machine and may not be downloaded" in found["forbidden"]
    assert f"the hub at {unreachable} cannot be reached" in found["unreachable"]
    assert [method for method, _ in hub.requests if method == "HEAD"] == ["HEAD"]  # asked once, nothing fetched
