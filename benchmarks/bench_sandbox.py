"""What the OS sandbox adds to each command: shell_ops' process runner with bubblewrap vs without, same machine;
and what secrets cost per command: hiding the deny-listed files, masking known values, masking a window of a
long-running process's output as part of its stream.

Run: python -m benchmarks.bench_sandbox [--runs 200]
Goals: added latency ≤ 15 ms p50 for `true` and `git status` (issue #11), also with protected files in the root
(issue #20: each is a mount of its own); masking by value a small share of masking by shape.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import secrets
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.harness import ROOT, median, percentile, print_table
from mcp_sections.servers.shell_ops.background import OutputRing
from mcp_sections.servers.shell_ops.service import ShellOps
from mcp_sections.servers.shell_ops.settings import ShellOpsSettings
from mcp_sections.shared.confinement.sandbox import Confinement, detect
from mcp_sections.shared.confinement.secrets import values as secret_values
from mcp_sections.shared.confinement.secrets.files import hidden_from_programs
from mcp_sections.shared.confinement.secrets.masking import _apply, mask_text, shape_spans


async def timings(ops: ShellOps, argv: list[str], cwd: Path, runs: int) -> list[float]:
    samples = []
    for _ in range(runs + 5):
        started = time.perf_counter()
        result = await ops._run(argv, cwd, timeout=30, max_output=1 << 20)
        samples.append((time.perf_counter() - started) * 1000)
        assert result.exit_code == 0, result.stderr.text()
    return samples[5:]  # the first runs warm the page cache


async def spawn_timings(argv: list[str], cwd: Path, runs: int) -> list[float]:
    """The floor: the same program spawned bare (asyncio, pipes read to the end), no runner, no sandbox, no keeper."""
    samples = []
    for _ in range(runs + 5):
        started = time.perf_counter()
        process = await asyncio.create_subprocess_exec(
            *argv, cwd=cwd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        await process.communicate()
        samples.append((time.perf_counter() - started) * 1000)
    return samples[5:]


def cpu_ms(work: Callable[[], object], runs: int) -> list[float]:
    """CPU time of `work` per run (ms): steadier than wall time on a shared machine."""
    samples = []
    for _ in range(runs):
        started = time.process_time()
        work()
        samples.append((time.process_time() - started) * 1000)
    return samples


def protect(root: Path) -> None:
    """A project's usual secrets: a .env, a key, an ssh directory."""
    (root / ".env").write_text("API_KEY=Zq9xW2mK7pL4vB8nR3tY\n", encoding="utf-8")
    (root / "deploy.key").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----\n")
    (root / ".ssh").mkdir()


async def sandbox_rows(runs: int) -> list[list[object]]:
    rows: list[list[object]] = []
    for protected in (False, True):
        with tempfile.TemporaryDirectory() as directory:
            root = Path(directory)
            subprocess.run(["git", "init", "-q", str(root)], check=True)
            (root / "a.txt").write_text("a\n", encoding="utf-8")
            if protected:
                protect(root)
            confined = ShellOps(ShellOpsSettings.load(sandbox="auto"), [root])
            open_ = ShellOps(ShellOpsSettings.load(sandbox="off"), [root])
            for label, argv in (("true", ["/usr/bin/true"]), ("git status", ["/usr/bin/git", "status", "--porcelain"])):
                floor = await spawn_timings(argv, root, runs)
                bare = await timings(open_, argv, root, runs)
                boxed = await timings(confined, argv, root, runs)
                label += ", 3 protected files" if protected else ""
                rows.append(_row(label, floor, bare, boxed))
            confined.close()
            open_.close()
    rows += await home_rows(runs)
    return rows


def make_home(home: Path) -> list[Path]:
    """A home directory as a root holds it (shared.confinement.trusted_base): ten directories of work, a dotfiles
    `~/.config` link, login files and the suite's state under it; returns the state's paths."""
    for name in ("Documents", "Downloads", "Desktop", "Pictures", "Music", "Videos", "src", "projects", "notes"):
        (home / name).mkdir(parents=True)
    (home / "dotfiles" / "config" / "mcp-sections").mkdir(parents=True)
    (home / ".config").symlink_to(home / "dotfiles" / "config")
    for name in (".local/share/mcp-sections", ".cache/mcp-sections", ".local/bin"):
        (home / name).mkdir(parents=True)
    for name in (".profile", ".bashrc", ".gitconfig"):
        (home / name).write_text("# login\n", encoding="utf-8")
    return [home / ".local/share/mcp-sections", home / ".cache/mcp-sections", home / ".config/mcp-sections"]


async def home_rows(runs: int) -> list[list[object]]:
    """`true` with a root at the home directory: the trusted base's pins, the link's fixed directory (every entry of
    the home bound back), the state hidden — against the same runner without bubblewrap."""
    import os

    with tempfile.TemporaryDirectory() as directory:
        home = Path(directory) / "home"
        state = make_home(home)
        before = os.environ.get("HOME")
        os.environ["HOME"] = str(home)
        try:
            confined = ShellOps(ShellOpsSettings.load(sandbox="auto"), [home], private=state)
            open_ = ShellOps(ShellOpsSettings.load(sandbox="off"), [home], private=state)
            floor = await spawn_timings(["/usr/bin/true"], home, runs)
            bare = await timings(open_, ["/usr/bin/true"], home, runs)
            boxed = await timings(confined, ["/usr/bin/true"], home, runs)
            confined.close()
            open_.close()
        finally:
            if before is not None:
                os.environ["HOME"] = before
    return [_row("true, a home root (trusted base: pins, fixed home)", floor, bare, boxed)]


def _row(label: str, floor: list[float], bare: list[float], boxed: list[float]) -> list[object]:
    """One command: the bare spawn (the floor), the runner with the sandbox off (its keeper included), the runner
    in the sandbox, and what the sandbox adds over the floor (runner, home, confinement and bubblewrap together)."""
    return [
        label,
        median(floor),
        median(bare),
        median(boxed),
        percentile(boxed, 0.95),
        median(boxed) - median(floor),
        "≤ 15.0",
    ]


def secrets_rows(runs: int) -> list[list[object]]:
    text = "\n".join(path.read_text(encoding="utf-8") for path in sorted((ROOT / "shared").rglob("*.py")))[:65536]
    secret_values.KNOWN = secret_values.KnownSecrets(environ={})
    shape = cpu_ms(lambda: _apply(text, shape_spans(text)), runs)
    secret_values.KNOWN.learn("ghp_" + secrets.token_urlsafe(27) for _ in range(50))
    both = cpu_ms(lambda: mask_text(text), runs)
    by_value = cpu_ms(lambda: secret_values.KNOWN.spans(text), runs)
    escaped = json.dumps(text.replace("e", "é"))  # every é as \\u00e9: decoded and searched again
    by_value_escaped = cpu_ms(lambda: secret_values.KNOWN.spans(escaped), runs)
    ring = OutputRing(1 << 20)  # a long-running process's kept output: 1 MB, read 64 KB from its middle
    ring.feed((text * 17).encode()[: 1 << 20])
    alone = cpu_ms(lambda: mask_text(ring.window(1 << 19, 65536, context=False).data.decode()), runs)
    in_stream = cpu_ms(lambda: mask_text(ring.window(1 << 19, 65536).text()), runs)
    rows: list[list[object]] = [
        ["mask 64 KB of code: by shape (before)", median(shape), percentile(shape, 0.95), ""],
        ["mask 64 KB of code: shape + 50 known values (after)", median(both), percentile(both, 0.95), ""],
        ["  of which by value", median(by_value), percentile(by_value, 0.95), "small share of shape"],
        [
            "  by value, the same as JSON with \\u escapes",
            median(by_value_escaped),
            percentile(by_value_escaped, 0.95),
            "",
        ],
        ["read_process_output: a 64 KB window masked alone (before)", median(alone), percentile(alone, 0.95), ""],
        ["  and its ends masked as part of the stream (after)", median(in_stream), percentile(in_stream, 0.95), ""],
    ]
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        for number in range(200):  # a project: 200 directories, a few protected files
            (root / f"pkg{number // 20}" / f"mod{number}").mkdir(parents=True)
        protect(root)
        time.sleep(2.1)  # a directory changed in the last 2 s is listed again at every check (coarse timestamps)
        ops = ShellOps(ShellOpsSettings.load(sandbox="off"), [root])
        hidden_from_programs(ops.paths)  # the first walk
        check = cpu_ms(lambda: hidden_from_programs(ops.paths), runs)
        rows.append(
            ["protected files re-checked before a command (211 dirs)", median(check), percentile(check, 0.95), ""]
        )
        ops.close()
    return rows


def hiding_rows(runs: int) -> list[list[object]]:
    """What the mounts over 3 protected files add to one `true` in bubblewrap: runs with and without them
    alternate, and the paired differences are compared (steadier than two medians on a shared machine)."""
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        protect(root)
        sandbox = detect("auto")
        plain = sandbox.wrap(["/usr/bin/true"], root, Confinement(writable=(root,)))
        hidden = (root / ".env", root / "deploy.key", root / ".ssh")
        covered = sandbox.wrap(["/usr/bin/true"], root, Confinement(writable=(root,), hidden=hidden))
        differences = []
        for _ in range(runs):
            started = time.perf_counter()
            subprocess.run(plain, check=True)
            middle = time.perf_counter()
            subprocess.run(covered, check=True)
            differences.append((time.perf_counter() - middle - (middle - started)) * 1000)
    return [["3 protected files hidden vs none (paired)", median(differences), percentile(differences, 0.95), ""]]


def seccomp_rows(runs: int) -> list[list[object]]:
    """What `--seccomp` (shared.confinement.seccomp's filter, a pipe written per spawn) adds to one `true` in
    bubblewrap: runs with and without alternate, paired; wall time, and CPU time of the server and its children
    (steadier when the machine is shared). The calls a program makes cost nothing measurable: the kernel caches the
    calls the filter allows whatever their arguments, every call but the dozen it inspects."""
    from mcp_sections.shared.confinement.seccomp import filter_fd

    def cpu() -> float:
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        plain = detect("auto").wrap(["/usr/bin/true"], root, Confinement(writable=(root,)))
        wall, used = [], []
        for _ in range(runs):
            started, cpu_started = time.perf_counter(), cpu()
            subprocess.run(plain, check=True)
            middle, cpu_middle = time.perf_counter(), cpu()
            with filter_fd() as fd:
                subprocess.run([plain[0], "--seccomp", str(fd), *plain[1:]], check=True, pass_fds=(fd,))
            wall.append((time.perf_counter() - middle - (middle - started)) * 1000)
            used.append((cpu() - cpu_middle - (cpu_middle - cpu_started)) * 1000)
    return [
        ["seccomp filter vs none, wall (paired)", median(wall), percentile(wall, 0.95), ""],
        ["seccomp filter vs none, CPU (paired)", median(used), percentile(used, 0.95), ""],
    ]


async def main(runs: int) -> None:
    rows = await sandbox_rows(runs)
    print(
        f"per command, {runs} runs each (ms): 'spawn' the program spawned bare (the floor), 'off' the runner with the "
        "sandbox off (its keeper included), 'sandbox' the runner in bubblewrap; added = sandbox - spawn"
    )
    print_table(["command", "spawn p50", "off p50", "sandbox p50", "sandbox p95", "added p50", "goal"], rows)
    print(f"\nsecrets, CPU ms per call, {runs} runs each")
    print_table(["work", "p50", "p95", "goal"], secrets_rows(runs))
    print(f"\nhiding, wall ms added per command, {runs} pairs")
    print_table(["work", "p50", "p95", "goal"], hiding_rows(runs))
    print(f"\nseccomp filter, ms added per command, {runs} pairs")
    print_table(["work", "p50", "p95", "goal"], seccomp_rows(runs))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200)
    asyncio.run(main(parser.parse_args().runs))
