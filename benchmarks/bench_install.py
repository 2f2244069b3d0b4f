"""Installing `.[all]` as a new user would, before and after: packages, CUDA, venv size, time to first use.

Run: python -m benchmarks.bench_install [--before REV] [--no-before-install]

For this checkout (after) and for `--before` (a git revision, default `main`, read with `git archive`):
- packages `.[all]` resolves to with uv (`uv pip compile`) and with pip (`pip install --dry-run --report`), and
  whether any `nvidia-*`, `torch` or `triton` is among them;
- a fresh venv, `pip install '<checkout>[all]'` (the before revision as its scripts/setup.sh did it: CPU torch
  first, from this machine's wheel or PyTorch's CPU index, then the extras and pyrender with --no-deps), its size
  (Chromium is a system package, outside it), and the seconds from the end of that install to the first answered
  `memory_search` (a new memory server: model load and the one-time ONNX file included) and to the first
  `render_3d_asset` (a new media_ops server, one 512² view of a 20k-face sphere).

The goal (issue #26): no CUDA anywhere, `.[all]` at most 1.3 GB, the first memory search at most 5 s after install.
pip's dry run of the before revision is not run: it would fetch torch's CUDA wheels (GBs) just to count them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from benchmarks.harness import ROOT, parameters, print_table

CUDA = re.compile(r"^(nvidia-|torch$|triton$)")
NOT_SOURCES = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"
)
GOAL_MB, GOAL_SEARCH_S = 1300, 5.0


def run(argv: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(argv, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stderr[-2000:]}")
    return done.stdout


def sources(revision: str | None, target: Path) -> Path:
    """This checkout's sources, or a revision's (git archive), in `target`."""
    if revision is None:
        shutil.copytree(ROOT, target, ignore=NOT_SOURCES, symlinks=True)
    else:
        target.mkdir(parents=True)
        archive = subprocess.run(["git", "archive", revision], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


def uv_resolution(source: Path, cache: Path) -> list[str]:
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or "uv"
    target = ["--python-version", "3.11", "--python-platform", "x86_64-manylinux_2_34"]
    command = [uv, "pip", "compile", str(source / "pyproject.toml"), "--extra", "all", "--quiet", "--no-header"]
    output = run([*command, "--no-annotate", *target], env={"UV_CACHE_DIR": str(cache)})
    return [line.split("==")[0].strip().lower() for line in output.splitlines() if "==" in line]


def pip_resolution(source: Path, work: Path) -> list[str]:
    report = work / "pip-report.json"
    dry_run = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet"]
    run([*dry_run, "--report", str(report), f"{source}[all]"], cwd=work)
    return [item["metadata"]["name"].lower() for item in json.loads(report.read_text())["install"]]


def install(source: Path, env_dir: Path, before: bool) -> float:
    """Seconds of the install a new user runs (for `before`: what its scripts/setup.sh did)."""
    venv.create(env_dir, with_pip=True)
    pip = [str(env_dir / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    started = time.perf_counter()
    if before:
        local = list(Path(os.environ.get("PIP_FIND_LINKS", "/nonexistent")).glob("torch-2.13.0*"))
        cpu_index = ["--index-url", "https://download.pytorch.org/whl/cpu", "torch"]
        run([*pip, "torch==2.13.0"] if local else [*pip, *cpu_index])
        run([*pip, f"{source}[all]"], cwd=env_dir.parent)
        run([*pip, "--no-deps", "pyrender==0.1.45"])
    else:
        run([*pip, f"{source}[all]"], cwd=env_dir.parent)
    return time.perf_counter() - started


def size_mb(path: Path) -> int:
    return int(run(["du", "-sm", str(path)]).split()[0])


def largest(env_dir: Path, count: int = 4) -> str:
    site = next(env_dir.glob("lib/python*/site-packages"))
    sizes = sorted(((size_mb(p), p.name) for p in site.iterdir() if p.is_dir()), reverse=True)[:count]
    return ", ".join(f"{name} {mb}" for mb, name in sizes)


async def first_search(env_dir: Path, work: Path) -> tuple[float, str]:
    """Spawn → the first memory_search answered, in a new data and cache directory (the ONNX file is built)."""
    env = {"MCP_SECTIONS_DATA_DIR": str(work / "data"), "MCP_SECTIONS_CACHE_DIR": str(work / "cache")}
    started = time.perf_counter()
    argv = [str(env_dir / "bin" / "mcp-sections"), "serve", "memory"]
    async with Client(parameters(argv, env), mode="legacy", read_timeout_seconds=300) as client:  # type: ignore[arg-type]
        await client.call_tool("memory_add", {"type": "user_pref", "content": "Answer in British English."})
        result = await client.call_tool("memory_search", {"query": "which spelling should replies use?"})
    seconds = time.perf_counter() - started
    data: dict[str, Any] = result.structured_content or {}
    return seconds, str(data.get("search_type", result.content[0].text[:80] if result.content else "?"))


async def first_render(env_dir: Path, work: Path) -> tuple[float, str]:
    """Spawn → the first render_3d_asset answered (one 512² view of a 20k-face sphere)."""
    import trimesh

    assets = work / "assets"
    assets.mkdir(exist_ok=True)
    trimesh.creation.icosphere(subdivisions=5).export(assets / "sphere.glb")
    env = {"MCP_SECTIONS_DATA_DIR": str(work / "data"), "MCP_SECTIONS_ROOTS": str(assets)}
    started = time.perf_counter()
    argv = [str(env_dir / "bin" / "mcp-sections"), "serve", "media_ops"]
    async with Client(parameters(argv, env), mode="legacy", read_timeout_seconds=300) as client:  # type: ignore[arg-type]
        result = await client.call_tool("render_3d_asset", {"path": "sphere.glb", "views": 1, "size": 512})
    seconds = time.perf_counter() - started
    return seconds, "error: " + result.content[0].text[:120] if result.is_error else "rendered"


def measure(label: str, revision: str | None, work: Path, fresh_install: bool) -> dict[str, Any]:
    print(f"[{label}] resolving and installing in {work} ...", file=sys.stderr, flush=True)
    source = sources(revision, work / "src")
    found: dict[str, Any] = {"uv": uv_resolution(source, work / "uv-cache")}
    found["pip"] = pip_resolution(source, work) if revision is None else None
    if fresh_install:
        env_dir = work / "env"
        found["install_s"] = install(source, env_dir, before=revision is not None)
        found["size_mb"] = size_mb(env_dir)
        found["largest"] = largest(env_dir)
        found["search"] = anyio.run(first_search, env_dir, work)
        found["render"] = anyio.run(first_render, env_dir, work)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="main", help="the git revision to compare with (default: main)")
    parser.add_argument("--no-before-install", action="store_true", help="resolve the before revision only")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directories")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-install-"))
    try:
        before = measure(f"before ({args.before})", args.before, work / "before", not args.no_before_install)
        after = measure("after (this checkout)", None, work / "after", True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    def packages(found: dict[str, Any], tool: str) -> str:
        names = found.get(tool)
        if names is None:
            return "not run"
        cuda = [name for name in names if CUDA.match(name)]
        return f"{len(names)} ({len(cuda)} torch/triton/nvidia-*)"

    def cell(found: dict[str, Any], key: str, unit: str = "") -> str:
        value = found.get(key)
        if value is None:
            return "not run"
        if isinstance(value, tuple):
            return f"{value[0]:.1f} s ({value[1]})"
        return f"{value:,.0f}{unit}" if isinstance(value, int | float) else str(value)

    rows = [
        (".[all] packages, uv pip compile", packages(before, "uv"), packages(after, "uv"), "no CUDA"),
        (".[all] packages, pip --dry-run", packages(before, "pip"), packages(after, "pip"), "no CUDA"),
        ("pip install time", cell(before, "install_s", " s"), cell(after, "install_s", " s"), ""),
        ("venv size (no Chromium)", cell(before, "size_mb", " MB"), cell(after, "size_mb", " MB"), f"<= {GOAL_MB} MB"),
        ("largest packages (MB)", cell(before, "largest"), cell(after, "largest"), ""),
        ("install -> first memory_search", cell(before, "search"), cell(after, "search"), f"<= {GOAL_SEARCH_S:.0f} s"),
        ("install -> first render_3d_asset", cell(before, "render"), cell(after, "render"), ""),
    ]
    print_table(["", f"before ({args.before})", "after", "goal"], rows)
    load = os.getloadavg()[0]
    print(f"\n{os.cpu_count()} cores, load average {load:.1f} at the end (other work on the machine slows every row)")


if __name__ == "__main__":
    main()
