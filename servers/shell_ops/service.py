"""The section's state and the work behind each tool (no MCP imports; tools in section.py are thin)."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import threading
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from mcp_sections.servers.shell_ops import git, npm
from mcp_sections.servers.shell_ops.background import BackgroundProcess, ProcessTable, write_input
from mcp_sections.servers.shell_ops.homes import home_environment, new_private_home, private_home
from mcp_sections.servers.shell_ops.identity import (
    GitIdentity,
    git_hint,
    git_identity,
    host_identity,
    identity_file,
    one_line,
)
from mcp_sections.servers.shell_ops.policies.allow_list import NEVER_ALLOWED
from mcp_sections.servers.shell_ops.policies.environment import checked_environment
from mcp_sections.servers.shell_ops.policies.git import split_git_args, split_probe_options
from mcp_sections.servers.shell_ops.policies.guard import CommandGuard
from mcp_sections.servers.shell_ops.policies.syntax import CheckedCommand, invalid
from mcp_sections.servers.shell_ops.processes import ProcessResult, SpawnError, child_environment, run_process
from mcp_sections.servers.shell_ops.relay import PortPublisher, relay_argv
from mcp_sections.servers.shell_ops.settings import ShellOpsSettings
from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.confinement.installers import Egress, registry_egress, registry_environment
from mcp_sections.shared.confinement.sandbox import Confinement, Sandbox, Spawn, detect, install_prefixes
from mcp_sections.shared.confinement.toolchains import ProjectToolchain
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure, limit_exceeded
from mcp_sections.shared.ground.locations import default_config_file

logger = logging.getLogger("mcp_sections.shell_ops")

Progress = Callable[[float], Awaitable[None]] | None
GIT_QUERY_TIMEOUT = 30.0
GIT_QUERY_OUTPUT = 32 * 1024 * 1024
PARTIAL_OUTPUT_BYTES = 4096

RULES = [
    "No shell: commands are argv lists (strings are split with shlex); in a string, `;`, `|`, `&&`, redirections, "
    "`$(...)` and unquoted line breaks are refused (INVALID_INPUT); an argv element may hold line breaks.",
    "The OS sandbox is the boundary: a program reads the roots and the system directories, writes the roots, has no "
    "network; so options that only change what it does there run (python -c, git -c, pytest -o, find -exec). With "
    "sandbox = 'off' every argument rule applies again (the `refused` lists).",
    "Installers (pip/uv/poetry install, npm ci, ...) reach the configured registries only, through an egress proxy; "
    "`blocked` lists what else they tried.",
    "Programs are resolved in the project environment of cwd first (its venv's bin and node_modules/.bin, from cwd "
    "up to its root), then on the fixed search path; the system tools and git always on the fixed search path. "
    "Shells and wrappers are never allowed (PERMISSION_DENIED).",
    "A program inside the roots may be given by path (./gradlew, .venv/bin/pytest) unless project_programs is off; "
    "it gets the policy of its name and must not lead to a never-allowed program or outside what the sandbox shows.",
    "A venv's base interpreter outside the roots (pyenv, uv, Homebrew) is shown read-only only once verified to be "
    "a Python installation; never the home directory, a root or the server's state.",
    "start_process keeps a program running under the same rules; its output is kept in a bounded ring, it ends at "
    "stop_process, at the end of its lifetime, or with the server; published ports carry connections in, the "
    "program gets no network.",
    "cwd must be inside the roots; arguments naming secret files (.env, keys, ...) or the server's state are refused "
    "(with the sandbox off, every path-like argument must be inside the roots).",
    "Children get a fixed environment: PATH (the project environment first), VIRTUAL_ENV in a venv, a private "
    "HOME/TMPDIR, LANG=C.UTF-8, git/npm hardening, plus the caller's `env` (never LD_*, proxies, PATH, HOME); nothing "
    "inherited from the server. git's global config holds only the commit identity (`git_identity`: the settings "
    "git_author_name/git_author_email, else the server's own `git config --global` user.name/user.email) and is "
    "read-only; a repository's own config still wins.",
    "A non-zero exit code is a normal result; a timeout kills the whole process group and is a TIMEOUT error "
    "whose details hold the last output; a program that cannot start is EXECUTION_FAILED.",
    "Output is capped per stream; head and tail are kept and the dropped byte count is reported.",
    "git always runs with hooks, fsmonitor, pager, editors, external diff, textconv/filter/merge drivers "
    "neutralised, and only on repositories inside the roots.",
]


class ShellOps:
    """Guard, environment and limits of one server process. Nothing here changes after start-up."""

    def __init__(
        self,
        settings: ShellOpsSettings,
        roots: Sequence[Path],
        private: Sequence[Path] = (),
        config_file: Path | None = None,
    ) -> None:
        """`private`: the suite's own state, refused as a path and hidden inside the sandbox; `config_file`: the
        config file the settings came from (named in hints; default: where the suite looks for one)."""
        self.settings = settings
        self.paths = PathGuard(list(roots), private=private, roots_tool="list_safe_commands")
        search_path = self._trusted_search_path(settings.search_path)
        self.guard = CommandGuard(
            self.paths, settings.allowed_programs, search_path, project_programs=settings.project_programs
        )
        # Every program gets a home of its own (homes.private_home); this is the rest of its environment.
        self.env = child_environment(search_path=search_path, home=Path("/nonexistent"))
        self.config_file = config_file or default_config_file()
        self._identity: GitIdentity | None = None
        self._identity_lock = threading.Lock()
        self._sandbox: Sandbox | None = None
        self.processes = ProcessTable(
            max_running=settings.max_processes,
            output_bytes=settings.process_output_bytes,
            max_lifetime=settings.max_process_lifetime_seconds,
        )

    def git_identity(self) -> GitIdentity:
        """Who commits are made as (identity.py): the settings, else the host's own `git config --global`, read once."""
        with self._identity_lock:
            if self._identity is None:
                name, email = self.settings.git_author_name, self.settings.git_author_email
                host = {} if one_line(name) and one_line(email) else host_identity(self.guard.executable("git"))
                self._identity = git_identity(name, email, host)
            return self._identity

    def _identity_file(self) -> Path | None:
        """The programs' global git config (the identity alone; written again when something removed it), or None
        without an identity: checked once per program started, for its sandbox and its environment both."""
        return identity_file(self.git_identity())

    def sandbox(self) -> Sandbox:
        """The sandbox every program runs in (detected on first use; DEPENDENCY_ERROR when none can run)."""
        if self._sandbox is None:
            self._sandbox = detect(self.settings.sandbox, "shell_ops")
        return self._sandbox

    def confinement(
        self,
        home: Path,
        toolchain: ProjectToolchain | None = None,
        program: str | None = None,
        *,
        identity: Path | None = None,
        egress: Egress | None = None,
    ) -> Confinement:
        """What a program sees: the roots (writable: commands may build, format, commit), its private HOME, and the
        verified interpreter installations its project environment needs (read-only). `program`: a program that is
        not the sandbox's first one (behind the port relay) and needs its own install prefix shown. `identity`: the
        programs' global git config (`_identity_file`). `egress`: an installer's way out
        (`shared.confinement.installers`); every other program has no network."""
        readable = [*(toolchain or self.guard.base_toolchain()).readable]
        if identity is not None:
            readable.append(identity)  # the programs' global git config (read-only: `git config --global` fails)
        if program is not None:
            shown = Confinement(writable=(*self.paths.roots, home), readable=tuple(readable))
            readable += [] if shown.shows(os.path.abspath(program)) else [Path(p) for p in install_prefixes(program)]
        return Confinement.within(
            self.paths,
            writable=(*self.paths.roots, home),
            readable=readable,
            network=egress is not None,
            egress=egress.socket if egress is not None else None,
        )

    @property
    def confined(self) -> bool:
        """Whether the OS sandbox confines programs, so that only the argument rules it cannot replace apply (not with
        `strict_arguments`: an operator's read-only allow-list stays read-only)."""
        return self.sandbox().kind != "off" and not self.settings.strict_arguments

    def checked_env(self, env: dict[str, str] | None) -> dict[str, str]:
        """A caller's variables for one program (policies/environment.py: any name but the reserved ones inside the
        sandbox; the operator's list with the sandbox off)."""
        inside = self.confined and self.sandbox().kind == "bubblewrap"  # set inside only: `Sandbox.spawning`
        return checked_environment(
            env or {}, self.settings.process_environment, confined=self.confined, set_inside=inside
        )

    def check_command(
        self,
        command: str | list[str],
        cwd: str | None,
        env: dict[str, str] | None,
        timeout_seconds: float | None = None,
        *,
        background: bool = False,
    ) -> tuple[CheckedCommand, dict[str, str], float]:
        """The checks of a call to run_command, or start_process (`background`: programs that end on their own
        refused): the checked command, the caller's variables and the timeout; nothing runs. The tools' preflights
        call it too, so they refuse exactly what the run refuses."""
        checked = self.guard.check(command, cwd, confined=self.confined)
        if background:
            refuse_ending(checked)
        return checked, self.checked_env(env), self.timeout_for(timeout_seconds)

    def environment(self, toolchain: ProjectToolchain | None, identity: Path | None) -> dict[str, str]:
        """The fixed environment with the commit identity as git's global config (`identity`: `_identity_file`) and
        the project environment activated (its `bin` first on PATH, VIRTUAL_ENV)."""
        env = {**self.env, "GIT_CONFIG_GLOBAL": str(identity)} if identity is not None else dict(self.env)
        if toolchain is None:
            return env
        return {**env, "PATH": toolchain.search_path(self.guard.search_path), **toolchain.environment()}

    def _trusted_search_path(self, search_path: str) -> str:
        """The configured search path minus directories inside the roots (the agent could plant programs there)."""
        kept = []
        for directory in search_path.split(os.pathsep):
            if self.paths.contains(directory):
                logger.warning("search_path entry %s is inside the allowed roots; it is ignored", directory)
            else:
                kept.append(directory)
        return os.pathsep.join(kept) or "/usr/bin:/bin"

    def close(self) -> None:
        """End every long-running process (each program's home is removed when it ends)."""
        self.processes.close()

    # -- plumbing ---------------------------------------------------------------------------------------

    def timeout_for(self, requested: float | None) -> float:
        if requested is None:
            return min(self.settings.default_timeout_seconds, self.settings.max_timeout_seconds)
        if requested > self.settings.max_timeout_seconds:
            raise limit_exceeded(
                f"timeout_seconds={requested:g} is above the server's maximum of "
                f"{self.settings.max_timeout_seconds:g}; use a smaller value."
            )
        return requested

    async def _run(
        self,
        argv: list[str],
        cwd: Path,
        *,
        timeout: float,
        max_output: int,
        progress: Progress = None,
        env: dict[str, str] | None = None,
        confine: bool = True,
        toolchain: ProjectToolchain | None = None,
        additions: dict[str, str] | None = None,
        egress: Egress | None = None,
    ) -> ProcessResult:
        """Run one checked program inside the OS sandbox (`confine=False` only for the hardened git probes that
        inspect a repository before anything runs in it: they must see where its config and objects point).
        `toolchain`: the project environment of the command (search path, VIRTUAL_ENV, interpreters shown);
        `additions`: the caller's checked variables; `egress`: an installer's way out to its registries."""
        check_executable(argv[0])
        with private_home() as home:
            identity = self._identity_file() if env is None else None  # `env`: git's probes and queries, no identity
            confinement = self.confinement(home, toolchain, identity=identity, egress=egress)
            installer = {**registry_environment(os.environ), **egress.environment} if egress is not None else {}
            spawning = (
                self.sandbox().spawning(argv, cwd, confinement, additions)
                if confine
                else contextlib.nullcontext(Spawn(list(argv), (), dict(additions or {})))
            )
            try:
                with spawning as spawn:
                    return await run_process(
                        spawn.argv,
                        cwd=cwd,
                        env={
                            **(env or self.environment(toolchain, identity)),
                            **home_environment(home),
                            **installer,
                            **spawn.environment,
                        },
                        timeout=timeout,
                        max_output_bytes=max_output,
                        progress=progress,
                        max_total_bytes=max(self.settings.max_total_output_bytes, max_output * 2),
                        pass_fds=spawn.pass_fds,
                    )
            except SpawnError as exc:
                raise ToolFailure(ErrorCode.EXECUTION_FAILED, f"{exc}; check that the program is installed.") from None

    async def _git_query(self, argv: list[str], cwd: Path) -> ProcessResult:
        env = {**self.env, "GIT_LITERAL_PATHSPECS": "1"}
        result = await self._run(argv, cwd, timeout=GIT_QUERY_TIMEOUT, max_output=GIT_QUERY_OUTPUT, env=env)
        if result.timed_out:
            raise ToolFailure(ErrorCode.TIMEOUT, f"git took longer than {GIT_QUERY_TIMEOUT:g}s; narrow the request.")
        if result.stdout.dropped:
            raise limit_exceeded("git's output is larger than 32 MiB; narrow the request with paths or a count.")
        return result

    def _timed_out(self, what: str, timeout: float, result: ProcessResult) -> ToolFailure:
        return ToolFailure(
            ErrorCode.TIMEOUT,
            f"{what} was still running after {timeout:g}s; its whole process group was killed. The last output is "
            "in the error details; raise timeout_seconds (within the server's maximum) or narrow the command.",
            timed_out=True,
            timeout_seconds=timeout,
            duration_ms=result.duration_ms,
            stdout_tail=_tail(result.stdout.text()),
            stderr_tail=_tail(result.stderr.text()),
        )

    def _result(self, executable: str, args: Sequence[str], cwd: Path, result: ProcessResult) -> dict[str, Any]:
        stderr = result.stderr.text()
        program = os.path.basename(executable)
        hint = git_hint(program, args, result.exit_code, stderr, self.git_identity(), self.config_file)
        return {
            "exit_code": result.exit_code if result.exit_code is not None else -1,
            "stdout": result.stdout.text(),
            "stderr": stderr,
            "duration_ms": result.duration_ms,
            "stdout_truncated": result.stdout.dropped > 0,
            "stderr_truncated": result.stderr.dropped > 0,
            "stdout_dropped_bytes": result.stdout.dropped,
            "stderr_dropped_bytes": result.stderr.dropped,
            "stopped_for_output": result.flooded,
            "executable": executable,
            "args": list(args),
            "cwd": self.paths.relative(cwd),
            "hint": hint,
            **self.sandbox().result_fields(),
        }

    # -- tools ------------------------------------------------------------------------------------------

    async def run_command(
        self,
        command: str | list[str],
        cwd: str | None,
        timeout_seconds: float | None,
        progress: Progress,
        env: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        checked, additions, timeout = self.check_command(command, cwd, env, timeout_seconds)
        argv = checked.argv
        if checked.program == "git":
            global_options, _, _ = split_git_args(checked.args)
            # The probes run outside the sandbox: they get the repository's location only (with the sandbox off the
            # policy allowed nothing else); `-c`, `--exec-path` and the rest reach the sandboxed git alone.
            probe, others = split_probe_options(global_options) if self.confined else (global_options, [])
            repo = await git.open_repository(checked.executable, checked.cwd, self.paths, self._git_probe, probe)
            argv = [*repo.base, *others, *checked.args[len(global_options) :]]
        with contextlib.ExitStack() as stack:
            egress = None
            if checked.installer is not None:  # its only way out: the registries (shared.confinement.installers)
                egress = stack.enter_context(
                    registry_egress(self.sandbox().kind, self.settings.install_registries, os.environ)
                )
            result = await self._run(
                argv,
                checked.cwd,
                timeout=timeout,
                max_output=self.settings.max_output_bytes,
                progress=progress,
                toolchain=checked.toolchain,
                additions=additions,
                egress=egress,
            )
            blocked = egress.blocked() if egress is not None else []
        if result.timed_out:
            raise self._timed_out(checked.program, timeout, result)
        self._check_started(checked.executable, result)
        return {**self._result(checked.executable, checked.args, checked.cwd, result), "blocked": blocked}

    def _check_started(self, executable: str, result: ProcessResult) -> None:
        """EXECUTION_FAILED when the sandbox could not start the program at all (bubblewrap's own error, exit 1):
        never a "successful" result with exit code 1."""
        if self.sandbox().kind == "bubblewrap" and result.exit_code == 1:
            problem = sandbox_start_failure(result.stderr.text())
            if problem is not None:
                raise ToolFailure(ErrorCode.EXECUTION_FAILED, f"{os.path.basename(executable)} {problem}")

    async def _git_probe(self, argv: list[str], cwd: Path) -> ProcessResult:
        # Outside the sandbox on purpose: a repository whose .git file, alternates or config includes lead out of
        # the roots must be seen (and refused), not hidden. These probes are hardened git plumbing (no hooks,
        # pager, fsmonitor, external programs) and their output never reaches the caller.
        # They get no global config (the identity file lies outside the roots, where config origins are refused).
        return await self._run(
            argv, cwd, timeout=GIT_QUERY_TIMEOUT, max_output=1024 * 1024, env=self.env, confine=False
        )

    def check_npm_script(
        self, script: str, args: list[str], cwd: str | None, timeout_seconds: float | None = None
    ) -> tuple[npm.CheckedScript, float]:
        """The checks of a call to run_npm_script: cwd inside the roots, npm allowed there, package.json readable and
        holding the script (no hook), the arguments, the timeout; nothing runs. Its preflight calls it too."""
        workdir = self.guard.resolve_cwd(cwd)
        _, executable = self.guard.resolve_program("npm", workdir)
        self.paths.resolve(str(workdir / "package.json"), purpose="read")
        scripts = npm.read_scripts(workdir)
        name = npm.checked_script(script, scripts)
        for arg in args:  # the same syntax rules as run_command arguments (line breaks are fine, NUL is not)
            if "\x00" in arg:
                raise ToolFailure(ErrorCode.INVALID_INPUT, "script arguments cannot contain a NUL byte.")
        argv = npm.npm_argv(executable, name, args)
        checked = npm.CheckedScript(workdir, executable, self.guard.toolchain(workdir), name, scripts[name], argv)
        return checked, self.timeout_for(timeout_seconds)

    async def run_npm_script(
        self, script: str, args: list[str], cwd: str | None, timeout_seconds: float | None, progress: Progress
    ) -> dict[str, Any]:
        checked, timeout = self.check_npm_script(script, args, cwd, timeout_seconds)
        result = await self._run(
            checked.argv,
            checked.workdir,
            timeout=timeout,
            max_output=self.settings.max_output_bytes,
            progress=progress,
            toolchain=checked.toolchain,
        )
        if result.timed_out:
            raise self._timed_out(f"npm script {checked.name!r}", timeout, result)
        self._check_started(checked.executable, result)
        data = self._result(checked.executable, checked.argv[1:], checked.workdir, result)
        data.update(script=checked.name, script_text=checked.text)
        return data

    async def _repository(self, cwd: str | None) -> git.Repository:
        executable = self.guard.executable("git")  # the git tools take no free-form arguments
        if not executable:
            raise ToolFailure(ErrorCode.DEPENDENCY_ERROR, "git is not installed on the server's search path.")
        workdir = self.guard.resolve_cwd(cwd)
        return await git.open_repository(executable, workdir, self.paths, self._git_probe)

    def _confined_paths(self, repo: git.Repository, paths: Sequence[str]) -> list[str]:
        for path in paths:
            self.guard.confine(path, repo.cwd)
        return list(paths)

    async def git_status(
        self, cwd: str | None, include_untracked: bool, include_ignored: bool, max_entries: int
    ) -> dict[str, Any]:
        repo = await self._repository(cwd)
        toplevel = git.require_worktree(repo)
        data = await git.status(
            repo, self._git_query, include_untracked=include_untracked, include_ignored=include_ignored
        )
        entries = data.pop("entries")
        data.update(
            repository=self.paths.relative(toplevel),
            clean=not any(entry["kind"] != "ignored" for entry in entries),
            entries=entries[:max_entries],
            total_entries=len(entries),
            truncated=len(entries) > max_entries,
        )
        return data

    async def git_diff(
        self,
        cwd: str | None,
        mode: str,
        ref: str | None,
        to_ref: str | None,
        paths: list[str],
        context_lines: int,
        max_bytes: int,
        stat_only: bool,
    ) -> dict[str, Any]:
        if mode == "ref" and not ref:
            raise ToolFailure(ErrorCode.INVALID_INPUT, "mode=ref needs `ref` (the revision to compare against).")
        if to_ref and mode != "ref":
            raise ToolFailure(ErrorCode.INVALID_INPUT, "`to_ref` is only used with mode=ref.")
        if ref and mode == "unstaged":
            raise ToolFailure(ErrorCode.INVALID_INPUT, "`ref` needs mode=ref or mode=staged.")
        for value in (ref, to_ref):
            if value:
                git.check_ref(value)
        repo = await self._repository(cwd)
        git.require_worktree(repo)
        base = await git.verify_commit(repo, ref, self._git_query) if ref else None
        target = await git.verify_commit(repo, to_ref, self._git_query) if to_ref else None
        pathspecs = self._confined_paths(repo, paths)
        args = git.diff_args(
            staged=mode == "staged", base=base, target=target, context_lines=context_lines, paths=pathspecs
        )
        numstat = await self._git_query([*repo.base, "diff", "--numstat", "-z", *args], repo.cwd)
        if numstat.exit_code != 0:
            raise git_failure("diff", numstat)
        files = git.parse_numstat(numstat.stdout.raw().decode("utf-8", errors="replace"))
        diff_text, dropped = "", 0
        if not stat_only and files:
            patch = await self._run(
                [*repo.base, "diff", *args],
                repo.cwd,
                timeout=GIT_QUERY_TIMEOUT,
                max_output=max_bytes,
                env={**self.env, "GIT_LITERAL_PATHSPECS": "1"},
            )
            if patch.timed_out:
                raise ToolFailure(ErrorCode.TIMEOUT, "git diff took too long; narrow it with paths.")
            if patch.exit_code != 0:
                raise git_failure("diff", patch)
            diff_text, dropped = patch.stdout.text(), patch.stdout.dropped
        return {
            "mode": mode,
            "base": base,
            "target": target,
            "files": files,
            "files_changed": len(files),
            "additions": sum(f["additions"] or 0 for f in files),
            "deletions": sum(f["deletions"] or 0 for f in files),
            "diff": diff_text,
            "truncated": dropped > 0,
            "dropped_bytes": dropped,
        }

    async def git_log(
        self, cwd: str | None, max_count: int, skip: int, ref: str | None, paths: list[str]
    ) -> dict[str, Any]:
        if ref:
            git.check_ref(ref)
        repo = await self._repository(cwd)
        git.require_worktree(repo)
        if ref:
            revision = await git.verify_commit(repo, ref, self._git_query)
        else:
            head = await self._git_query([*repo.base, "rev-parse", "--verify", "--quiet", "HEAD"], repo.cwd)
            if head.exit_code != 0:  # no commits yet
                return {"entries": [], "count": 0, "has_more": False}
            revision = None
        pathspecs = self._confined_paths(repo, paths)
        result = await self._git_query(
            [*repo.base, *git.log_args(max_count=max_count + 1, skip=skip, revision=revision, paths=pathspecs)],
            repo.cwd,
        )
        if result.exit_code != 0:
            raise git_failure("log", result)
        entries = git.parse_log(result.stdout.raw().decode("utf-8", errors="replace"))
        return {
            "entries": entries[:max_count],
            "count": min(len(entries), max_count),
            "has_more": len(entries) > max_count,
        }

    # -- long-running processes ------------------------------------------------------------------------

    def start_process(
        self,
        command: str | list[str],
        cwd: str | None,
        env: dict[str, str],
        ports: list[int],
        wait_seconds: float,
        wait_for: str | None,
        lifetime_seconds: float | None,
        max_bytes: int,
        allow_duplicate: bool = False,
    ) -> dict[str, Any]:
        """Start a checked program in the sandbox and keep it running (background.py); its first output. Without
        `allow_duplicate`, a process started by the very same call and still running is returned instead (a call
        repeated after its answer was lost, the same dev server asked for twice): `already_running`."""
        checked, additions, _ = self.check_command(command, cwd, env, background=True)
        call = (tuple(checked.argv), checked.cwd, tuple(sorted(additions.items())), tuple(sorted(ports)))
        with contextlib.nullcontext(None) if allow_duplicate else self.processes.claim(call) as twin:
            if twin is not None:
                note = (
                    f"{twin.id} was started at {twin.started_at} by an earlier call with the same command, cwd, env "
                    "and ports, and is still running: it is returned, no second one was started (pass "
                    "allow_duplicate=true to start another)."
                )
                return {**self._process_output(twin, twin.cursor, max_bytes), "already_running": True, "warning": note}
            process, publisher = self._spawn(checked, additions, ports, lifetime_seconds, call)
        if publisher is not None:
            publisher.start()
        ready = process.wait_for_output(0, wait_seconds, settle=False, until=wait_for) if wait_for else None
        if not wait_for:
            process.wait_end(wait_seconds)
        if process.exit_code == 1 and process.sandboxed:
            problem = sandbox_start_failure(process.ring.window(0, 4096).text())
            if problem is not None:
                raise ToolFailure(ErrorCode.EXECUTION_FAILED, f"{os.path.basename(checked.executable)} {problem}")
        return self._process_output(process, process.cursor, max_bytes, ready=ready)

    def _spawn(
        self,
        checked: CheckedCommand,
        additions: dict[str, str],
        ports: list[int],
        lifetime_seconds: float | None,
        call: tuple[object, ...],
    ) -> tuple[BackgroundProcess, PortPublisher | None]:
        """Spawn the checked program in a new sandbox with a private home, its ports published by a relay (not yet
        accepting: the caller starts it)."""
        lifetime = self.processes.lifetime_for(lifetime_seconds)
        self.processes.reserve()
        sandbox = self.sandbox()
        check_executable(checked.executable)
        publisher = self._publisher(ports, sandbox)
        argv = checked.argv
        if publisher is not None:
            python = self.guard.executable("python3")
            assert python is not None  # checked by _publisher
            argv = relay_argv(python, publisher.inside.fileno(), argv)
        home = new_private_home()
        identity = self._identity_file()
        shown = checked.executable if publisher is not None else None
        confinement = self.confinement(home, checked.toolchain, shown, identity=identity)
        try:
            with sandbox.spawning(argv, checked.cwd, confinement, additions) as spawn:
                process = self.processes.start(
                    spawn.argv,
                    cwd=checked.cwd,
                    env={
                        **self.environment(checked.toolchain, identity),
                        **home_environment(home),
                        "PYTHONUNBUFFERED": "1",  # output as it is written, not when a buffer fills
                        **spawn.environment,
                    },
                    home=home,
                    command=checked.argv,
                    shown_cwd=self.paths.relative(checked.cwd),
                    lifetime=lifetime,
                    sandboxed=sandbox.kind == "bubblewrap",
                    pass_fds=[*spawn.pass_fds, *([publisher.inside.fileno()] if publisher is not None else [])],
                    ports=ports,
                    on_end=publisher.close if publisher is not None else None,
                    call=call,
                )
        except BaseException:
            shutil.rmtree(home, ignore_errors=True)
            if publisher is not None:
                publisher.close()
            raise
        return process, publisher

    def _publisher(self, ports: list[int], sandbox: Sandbox) -> PortPublisher | None:
        """The relay that publishes `ports` (None when there are none, or the program listens on the host itself),
        recorded as published while it accepts (`shared.confinement.published_ports`: web_ops may read it). A port that
        is one of the suite's own endpoints is refused (`shared.settings.endpoints`: its HTTP listener, a model's or a
        section's URL)."""
        from mcp_sections.shared.confinement.published_ports import PublishedPorts
        from mcp_sections.shared.settings import served
        from mcp_sections.shared.settings.endpoints import reserved_refusal

        if not ports:
            return None
        if not self.settings.publish_ports:
            raise ToolFailure(
                ErrorCode.PERMISSION_DENIED,
                "publishing ports is off on this server; the operator allows it with `publish_ports = true` in "
                "[sections.shell_ops] (config.example.toml; environment: MCP_SECTIONS_SHELL_OPS_PUBLISH_PORTS).",
            )
        if len(set(ports)) != len(ports):
            raise invalid("ports lists a port twice; give each once.")
        refusal = reserved_refusal(ports)
        if refusal is not None:
            raise ToolFailure(ErrorCode.PERMISSION_DENIED, refusal)
        if sandbox.kind == "off":
            return None  # unconfined, the program listens on the host's loopback itself
        if sandbox.kind != "bubblewrap":
            raise ToolFailure(
                ErrorCode.DEPENDENCY_ERROR,
                "publishing ports works with bubblewrap only (not with Seatbelt yet); omit `ports`.",
            )
        if self.guard.executable("python3") is None:
            raise ToolFailure(
                ErrorCode.DEPENDENCY_ERROR,
                f"publishing ports needs python3 on the server's search path ({self.guard.search_path}) for its "
                "relay inside the sandbox; install python3, or omit `ports`.",
            )
        server = served.settings_of("shell_ops")
        try:
            return PortPublisher(ports, PublishedPorts(server.data_dir) if server is not None else None)
        except OSError as exc:
            raise ToolFailure(
                ErrorCode.EXECUTION_FAILED,
                f"a port of {ports} cannot be published on 127.0.0.1 ({exc.strerror or exc}): something else listens "
                "there already; choose another port (list_processes shows the ports in use).",
            ) from None

    def read_process_output(
        self, process_id: str, offset: int | None, max_bytes: int, wait_seconds: float
    ) -> dict[str, Any]:
        process = self.processes.get(process_id)
        start = process.cursor if offset is None else offset
        if wait_seconds and process.running and process.ring.total <= start:
            process.wait_for_output(start, wait_seconds, settle=True)
        return self._process_output(process, start, max_bytes)

    def write_process_input(
        self, process_id: str, text: str, newline: bool, close_input: bool, wait_seconds: float, max_bytes: int
    ) -> dict[str, Any]:
        process = self.processes.get(process_id)
        if not process.running:
            raise ToolFailure(
                ErrorCode.EXECUTION_FAILED,
                f"{process.id} has ended ({process.state}, exit code {process.exit_code}); start it again.",
            )
        before = process.ring.total
        write_input(process, (text + ("\n" if newline else "")).encode("utf-8"), close=close_input)
        if wait_seconds:
            process.wait_for_output(before, wait_seconds, settle=True)
        return self._process_output(process, process.cursor, max_bytes)

    def stop_process(self, process_id: str, signal_name: str, grace_seconds: float, max_bytes: int) -> dict[str, Any]:
        process = self.processes.get(process_id)
        self.processes.stop(process, getattr(signal, signal_name), grace_seconds)
        process.wait_end(5.0)  # until its exit code and last output are in
        return self._process_output(process, process.cursor, max_bytes)

    def list_processes(self) -> dict[str, Any]:
        processes = self.processes.all()
        return {
            "processes": [self._process_summary(process) for process in processes],
            "running": sum(process.running for process in processes),
            "max_processes": self.processes.max_running,
            "max_lifetime_seconds": self.processes.max_lifetime,
            "environment_names": list(self.settings.process_environment),
        }

    def _process_output(
        self, process: BackgroundProcess, start: int, max_bytes: int, ready: bool | None = None
    ) -> dict[str, Any]:
        window = process.ring.window(start, max_bytes)
        process.cursor = window.next_offset
        return {
            "process": self._process_summary(process),
            "output": window.text(),
            "offset": window.offset,
            "next_offset": window.next_offset,
            "dropped_bytes": window.skipped,
            "more": window.more,
            "ready": ready,
            **self.sandbox().result_fields(),
        }

    @staticmethod
    def _process_summary(process: BackgroundProcess) -> dict[str, Any]:
        ring = process.ring
        return {
            "process_id": process.id,
            "command": process.command,
            "cwd": process.cwd,
            "state": process.state,
            "exit_code": process.exit_code,
            "started_at": process.started_at,
            "elapsed_seconds": round(process.elapsed(), 1),
            "total_bytes": ring.total,
            "unread_bytes": ring.total - max(process.cursor, ring.dropped),
            "ports": [{"port": port, "url": f"http://127.0.0.1:{port}/"} for port in process.ports],
        }

    def describe(self) -> dict[str, Any]:
        return {
            "programs": self.guard.describe(
                confined=self._sandbox_report()["kind"] in ("bubblewrap", "seatbelt")
                and not self.settings.strict_arguments
            ),
            "never_allowed": dict(sorted(NEVER_ALLOWED.items())),
            "search_path": self.guard.search_path,
            "roots": [str(root) for root in self.paths.roots],
            "default_timeout_seconds": self.settings.default_timeout_seconds,
            "max_timeout_seconds": self.settings.max_timeout_seconds,
            "max_output_bytes": self.settings.max_output_bytes,
            "rules": RULES,
            "sandbox": self._sandbox_report(),
            "git_identity": self.git_identity().describe(),
        }

    def _sandbox_report(self) -> dict[str, Any]:
        try:
            return self.sandbox().describe()
        except ToolFailure as failure:
            return {"kind": "unavailable", "executable": None, "warning": failure.message, "why": failure.message}


def check_executable(path: str) -> None:
    """EXECUTION_FAILED unless `path` is an executable file (inside the sandbox this would only be bwrap's exit
    status)."""
    if not os.access(path, os.X_OK) or not os.path.isfile(path):
        raise ToolFailure(
            ErrorCode.EXECUTION_FAILED,
            f"{os.path.basename(path)} could not be started (not an executable file); check that the program is "
            "installed.",
        )


def sandbox_start_failure(stderr: str) -> str | None:
    """What kept bubblewrap from starting a program (its `bwrap: execvp …` line), said plainly; None otherwise."""
    first = stderr.lstrip().splitlines()[0] if stderr.strip() else ""
    if not first.startswith("bwrap: "):
        return None
    return (
        f"could not be started inside the sandbox ({first[:300]}). A script's interpreter (its `#!` line) must be "
        "visible there: inside the roots, in the system directories, or a verified interpreter installation (the "
        "base Python of a project venv, an interpreter on the server's search path)."
    )


def git_failure(what: str, result: ProcessResult) -> ToolFailure:
    text = result.stderr.text().strip()[-600:] or "(no error output)"
    return ToolFailure(ErrorCode.EXECUTION_FAILED, f"git {what} failed: {text}")


def _tail(text: str) -> str:
    data = text.encode("utf-8", errors="replace")
    if len(data) <= PARTIAL_OUTPUT_BYTES:
        return text
    return "[...]" + data[-PARTIAL_OUTPUT_BYTES:].decode("utf-8", errors="replace")


def refuse_ending(checked: CheckedCommand) -> None:
    """INVALID_INPUT for start_process of programs that end on their own and have a tool of their own: git, installs."""
    if checked.program == "git":
        raise invalid("git commands end on their own: use run_command, or git_status, git_diff and git_log.")
    if checked.installer is not None:
        raise invalid("an install ends on its own: run it with run_command (it gets the registry-only egress).")
