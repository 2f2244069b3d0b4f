"""The command guard on its own: syntax, programs, policies, path confinement, git hardening (no processes)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_sections.servers.shell_ops.policies.allow_list import DEFAULT_ALLOWED_PROGRAMS, check_allow_list
from mcp_sections.servers.shell_ops.policies.git import git_hardening_args
from mcp_sections.servers.shell_ops.policies.guard import CommandGuard
from mcp_sections.servers.shell_ops.policies.npm import check_npm_script_name
from mcp_sections.servers.shell_ops.policies.programs import policy_for
from mcp_sections.servers.shell_ops.policies.syntax import split_command
from mcp_sections.servers.shell_ops.settings import ShellOpsSettings
from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.confinement.installers import installer_kind
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.py").write_text("print('hi')\n")
    (root / "script.js").write_text("console.log(1)\n")
    (root / ".env").write_text("SECRET=1\n")
    (tmp_path / "outside").mkdir()
    (root / "escape").symlink_to(tmp_path / "outside")
    return root


@pytest.fixture
def guard(root: Path) -> CommandGuard:
    return CommandGuard(PathGuard([root]), [*DEFAULT_ALLOWED_PROGRAMS, "perl", "tar"])


def code_of(guard: CommandGuard, command: str | list[str], cwd: str | None = None) -> ErrorCode:
    with pytest.raises(ToolFailure) as caught:
        guard.check(command, cwd)
    return caught.value.code


def test_string_commands_split_without_a_shell(guard: CommandGuard, root: Path) -> None:
    checked = guard.check("grep -n 'a|b; c' src/main.py")
    assert checked.args == ("-n", "a|b; c", "src/main.py")
    assert checked.executable == "/usr/bin/grep" or os.path.isabs(checked.executable)
    assert checked.cwd == root.resolve()


@pytest.mark.parametrize(
    "command",
    [
        "ls; id",
        "ls && id",
        "ls || id",
        "ls | wc",
        "ls > out",
        "ls 2>/dev/null",
        "cat < a",
        "ls &",
        "echo $(id)",
        "echo `id`",
        "echo ${HOME}",
        "diff <(ls) a",
        "ls\nid",
        "ls\x00",
        "LD_PRELOAD=/tmp/x.so ls",
        "'unbalanced",
        "",
        ["ls", "&&", "id"],
        ["ls", ">out.txt"],
        ["ls", "2>&1"],
        ["PATH=/tmp", "ls"],
        'git commit -m "a" \n id',
    ],
)
def test_shell_syntax_is_invalid_input(guard: CommandGuard, command: str | list[str]) -> None:
    assert code_of(guard, command) == ErrorCode.INVALID_INPUT


@pytest.mark.parametrize("confined", [True, False])
def test_line_breaks_inside_an_argument_are_kept(guard: CommandGuard, confined: bool) -> None:
    """No shell reads an argv element: a commit message with a body is one argument (issue #38)."""
    message = "subject line\n\nthe body, second paragraph\r\n"
    assert guard.check(["git", "commit", "-m", message], confined=confined).args == ("commit", "-m", message)
    assert guard.check('git commit -m "subject\n\nbody"', confined=confined).args == ("commit", "-m", "subject\n\nbody")
    assert guard.check(["grep", "-e", "a\nb", "src"], confined=confined).args == ("-e", "a\nb", "src")
    with pytest.raises(ToolFailure) as caught:
        guard.check(["grep", "a\x00b", "src"], confined=confined)
    assert caught.value.code == ErrorCode.INVALID_INPUT  # NUL: no argument of a program can hold one


def test_argv_literals_that_look_like_shell_are_fine_inside_words(guard: CommandGuard) -> None:
    assert guard.check(["grep", "-e", "a;b|c", "src"]).args == ("-e", "a;b|c", "src")
    assert guard.check(["find", "src", "(", "-name", "*.py", "!", "-name", "x", ")"]).program == "find"
    assert guard.check(["grep", ">=", "src"]).args == (">=", "src")  # an operator of the program's own language


@pytest.mark.parametrize(
    ("command", "code"),
    [
        (["bash", "-c", "id"], ErrorCode.PERMISSION_DENIED),
        (["/bin/sh"], ErrorCode.PERMISSION_DENIED),
        (["env", "ls"], ErrorCode.PERMISSION_DENIED),
        (["xargs", "ls"], ErrorCode.PERMISSION_DENIED),
        (["awk", "{print}"], ErrorCode.PERMISSION_DENIED),
        (["curl", "http://x"], ErrorCode.PERMISSION_DENIED),
        (["./ls"], ErrorCode.PERMISSION_DENIED),
        (["/tmp/ls"], ErrorCode.PERMISSION_DENIED),
    ],
)
def test_programs(guard: CommandGuard, command: list[str], code: ErrorCode) -> None:
    assert code_of(guard, command) == code


def test_absolute_program_accepted_only_when_it_is_the_fixed_path_one(guard: CommandGuard) -> None:
    ls = guard.executable("ls")
    assert ls is not None
    assert guard.check([ls]).executable == ls


def test_allowed_but_missing_program_is_not_found(root: Path) -> None:
    guard = CommandGuard(PathGuard([root]), ["ls", "definitely-not-installed-tool"])
    assert code_of(guard, ["definitely-not-installed-tool"]) == ErrorCode.NOT_FOUND


def test_allow_list_refuses_wrappers_and_paths() -> None:
    with pytest.raises(ValueError, match="never be allowed"):
        check_allow_list(["ls", "bash"])
    with pytest.raises(ValueError, match="bare program name"):
        check_allow_list(["/usr/bin/ls"])
    assert check_allow_list(["ls", " ls ", "git"]) == ["ls", "git"]


def test_settings_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_SECTIONS_SHELL_OPS_ALLOWED_PROGRAMS", "ls, cat")
    monkeypatch.setenv("MCP_SECTIONS_SHELL_OPS_MAX_OUTPUT_BYTES", "4096")
    settings = ShellOpsSettings.load()
    assert settings.allowed_programs == ["ls", "cat"] and settings.max_output_bytes == 4096
    monkeypatch.setenv("MCP_SECTIONS_SHELL_OPS_ALLOWED_PROGRAMS", "ls,sh")
    with pytest.raises(ValueError, match="never be allowed"):
        ShellOpsSettings.load()


#: Refused by the argument policies when nothing else confines the program (`sandbox = "off"`).
REFUSED_WITH_THE_SANDBOX_OFF: list[list[str]] = [
    ["python3", "-c", "print(1)"],
    ["python3", "-Bc", "print(1)"],
    ["python3", "-m", "pdb", "-c", "!import os", "src/main.py"],
    ["python3", "-m", "http.server"],
    ["python3", "-"],
    ["python3", "--check-hash-based-pycs", "always"],
    ["python3", "-m", "pytest", "-o", "cache_dir=/tmp/x"],
    ["python3", "-m", "pytest", "-p", "evil_plugin"],
    ["node", "-e", "1"],
    ["node", "--eval=1"],
    ["node", "-p", "1"],
    ["node", "-r", "./x.js", "script.js"],
    ["node", "--import", "./x.mjs", "script.js"],
    ["node", "--inspect=0.0.0.0:9229", "script.js"],
    ["node", "--inspect_brk", "script.js"],
    ["perl", "-e", "system('id')"],
    ["perl", "-MPOSIX", "x.pl"],
    ["find", ".", "-exec", "id", "{}", "+"],
    ["find", ".", "-execdir", "id", "+"],
    ["find", ".", "-delete"],
    ["find", ".", "-fprint", "out"],
    ["find", "-L", "."],
    ["rg", "--pre", "./x", "foo"],
    ["rg", "-L", "foo"],
    ["grep", "-R", "foo", "."],
    ["grep", "--dereference-recursive", "foo"],
    ["rg", "--pre=./x", "foo"],
    ["sort", "-o", "out", "src/main.py"],
    ["sort", "-uo", "out", "src/main.py"],
    ["sort", "--outp=out", "src/main.py"],
    ["sort", "--compress-program=./x", "src/main.py"],
    ["tar", "--to-command=id", "-xf", "a.tar"],
    ["tar", "-I", "./x", "-xf", "a.tar"],
    ["make", "SHELL=/tmp/evil"],
    ["make", "--eval=all:;id"],
    ["pytest", "--override-ini=cache_dir=x"],
    ["git", "-c", "core.pager=id", "log"],
    ["git", "--config-env=core.pager=X", "log"],
    ["git", "--exec-path=.", "log"],
    ["git", "clone", "-u", "id", "x"],
    ["git", "fetch", "--upload-pack=id"],
    ["git", "push"],
    ["git", "submodule", "foreach", "id"],
    ["git", "filter-branch", "--tree-filter", "id"],
    ["git", "diff", "--output=out.txt"],
    ["git", "log", "--ext-diff"],
    ["git", "show", "--textconv"],
    ["git", "grep", "-O", "x"],
    ["git", "grep", "--open-files-in-pager=id", "x"],
    ["git", "rebase", "-x", "id", "HEAD~1"],
    ["git", "rebase", "--exec=id", "HEAD~1"],
    ["git", "init", "--template=tpl"],
    ["git", "config", "core.pager", "id"],
    ["git", "config", "--add", "alias.x", "!id"],
    ["git", "config", "--unset", "user.name"],
    ["git", "my-alias"],
    ["git", "cat-file", "--textconv", "HEAD:a"],
    ["npm", "install"],
    ["npm", "exec", "x"],
    ["npm", "run", "postinstall"],
    ["npm", "run", "build", "--script-shell=/tmp/x"],
    ["npm", "test", "--no-ignore-scripts"],
]


@pytest.mark.parametrize("command", REFUSED_WITH_THE_SANDBOX_OFF)
def test_policies_refuse_code_execution_and_writes(guard: CommandGuard, command: list[str]) -> None:
    assert code_of(guard, command) == ErrorCode.PERMISSION_DENIED  # with the sandbox off: the only layer


#: What remains refused inside the sandbox, of the list above: wrappers that run a program the caller names (the
#: allow-list), secrets named in git's history, and git's repository options that the host-side probes follow.
REMAIN_IN_THE_SANDBOX = (
    ["npm", "exec", "x"],
    ["npm", "run", "build", "--script-shell=/tmp/x"],
)


@pytest.mark.parametrize("command", REFUSED_WITH_THE_SANDBOX_OFF)
def test_inside_the_sandbox_only_the_rules_it_cannot_replace_remain(guard: CommandGuard, command: list[str]) -> None:
    """Each argv rule that only duplicated the sandbox applies with the sandbox off alone: inside it the command passes
    the guard (or is NOT_FOUND where the program is not installed here); tests/security/test_command_attacks.py runs
    the same commands and shows the OS stopping what each one feared."""
    if command in REMAIN_IN_THE_SANDBOX:
        with pytest.raises(ToolFailure) as caught:
            guard.check(command, confined=True)
        assert caught.value.code == ErrorCode.PERMISSION_DENIED
        return
    try:
        guard.check(command, confined=True)
    except ToolFailure as failure:
        assert failure.code == ErrorCode.NOT_FOUND, failure.message


@pytest.mark.parametrize(
    "command",
    [
        ["git", "-C", "/", "status"],  # the probes would run in that repository, outside the sandbox
        ["git", "--git-dir=/tmp/other.git", "log"],
        ["git", "--work-tree", "..", "status"],
        ["git", "show", "HEAD:.env"],  # the sandbox hides the file, not its copies in git's objects
        ["git", "log", "-p", "--", "*.env"],
        ["cat", ".env"],  # shown empty by the sandbox: refused plainly instead
        ["uv", "run", "bash"],  # a wrapper's command is checked against the allow-list
        ["npx", "-c", "id"],
        ["bash", "-c", "id"],
    ],
)
def test_rules_that_remain_inside_the_sandbox(guard: CommandGuard, command: list[str]) -> None:
    with pytest.raises(ToolFailure) as caught:
        guard.check(command, confined=True)
    assert caught.value.code == ErrorCode.PERMISSION_DENIED, caught.value.message


@pytest.mark.parametrize(
    ("command", "installer"),
    [
        (["pip", "install", "-e", ".[test]"], "pip"),
        (["python3", "-m", "pip", "install", "-r", "requirements.txt"], "pip"),
        (["python3", "-u", "-m", "pip", "--cache-dir", "c", "download", "x"], "pip"),
        (["uv", "sync"], "uv"),
        (["uv", "pip", "install", "-e", "."], "uv"),
        (["npm", "ci"], "npm"),
        (["npm", "install"], "npm"),
        (["pip", "list"], None),
        (["python3", "-m", "pytest"], None),
        (["npm", "test"], None),
        (["uv", "run", "pytest"], None),
    ],
)
def test_installers_are_recognised(root: Path, command: list[str], installer: str | None) -> None:
    guard = CommandGuard(PathGuard([root]), [*DEFAULT_ALLOWED_PROGRAMS], "/nonexistent")  # nothing is found here
    with pytest.raises(ToolFailure) as caught:
        guard.check(command, confined=True)
    assert caught.value.code == ErrorCode.NOT_FOUND  # the checks passed; only the program is missing
    assert installer_kind(policy_for(command[0]).name, command[1:]) == installer
    if installer is not None:  # with the sandbox off, no command installs (install_package does)
        assert code_of(guard, command) == ErrorCode.PERMISSION_DENIED


@pytest.mark.parametrize(
    "command",
    [
        ["python3", "src/main.py", "--flag"],
        ["python3", "-u", "-W", "ignore", "src/main.py"],
        ["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "src"],
        ["python3", "-m", "unittest", "discover"],
        ["node", "--enable-source-maps", "script.js", "-e", "passed-to-script"],
        ["find", "src", "-name", "*.py", "-type", "f"],
        ["sort", "-u", "src/main.py"],
        ["git", "diff", "--text", "--stat"],
        ["git", "format-patch", "--to=dev@example.com", "-1"],
        ["npm", "ls", "--include=dev"],
        ["git", "log", "--oneline", "-n", "5"],
        ["git", "-C", "src", "status"],
        ["git", "config", "--get", "user.name"],
        ["git", "config", "user.name"],
        ["git", "commit", "-m", "fix: handle a/b paths"],
        ["npm", "test"],
        ["npm", "run", "build", "--", "--watch=false"],
        ["make", "-n", "all"],
        ["tar", "-tf", "a.tar"],
    ],
)
def test_policies_allow_ordinary_use(guard: CommandGuard, command: list[str]) -> None:
    guard.check(command)


def test_git_diff_family_gets_no_ext_diff_and_no_textconv(guard: CommandGuard) -> None:
    assert guard.check(["git", "-C", "src", "diff", "HEAD"]).args == (
        "-C",
        "src",
        "diff",
        "--no-ext-diff",
        "--no-textconv",
        "HEAD",
    )
    assert guard.check(["npm", "test"]).args[:2] == ("--ignore-scripts", "--script-shell=/bin/sh")


@pytest.mark.parametrize(
    "command",
    [
        ["cat", "/etc/passwd"],
        ["cat", "../outside.txt"],
        ["cat", "escape/x"],
        ["ls", ".."],
        ["grep", "-r", "x", "/"],
        ["grep", "--file=/etc/passwd", "x"],
        ["grep", "-f/etc/passwd", "x"],
        ["cat", ".env"],
        ["git", "-C", "/", "status"],
        ["git", "--git-dir=/tmp/other.git", "log"],
        ["git", "diff", "--no-index", "/etc/passwd", "src/main.py"],
        ["python3", "../evil.py"],
        ["node", "/tmp/evil.js"],
    ],
)
def test_path_arguments_are_confined(guard: CommandGuard, command: list[str]) -> None:
    assert code_of(guard, command) == ErrorCode.PERMISSION_DENIED


@pytest.mark.parametrize(
    "command",
    [
        ["cat", "/etc/passwd"],
        ["cat", "../outside.txt"],
        ["cat", "escape/x"],
        ["grep", "-r", "/api/", "src"],
        ["git", "commit", "-m", "fix /usr/bin lookups"],
        ["python3", "-c", "import os\nprint(os.listdir('/'))"],
        ["pytest", "-o", "pythonpath=src"],
    ],
)
def test_inside_the_sandbox_paths_outside_the_roots_are_its_to_hide(guard: CommandGuard, command: list[str]) -> None:
    try:
        guard.check(command, confined=True)
    except ToolFailure as failure:
        assert failure.code == ErrorCode.NOT_FOUND, failure.message  # pytest may not be installed here


def test_cwd_is_confined(guard: CommandGuard, root: Path) -> None:
    assert guard.check(["ls"], "src").cwd == (root / "src").resolve()
    assert code_of(guard, ["ls"], "/tmp") == ErrorCode.PERMISSION_DENIED
    assert code_of(guard, ["ls"], "..") == ErrorCode.PERMISSION_DENIED
    assert code_of(guard, ["ls"], "escape") == ErrorCode.PERMISSION_DENIED
    assert code_of(guard, ["ls"], "missing") == ErrorCode.NOT_FOUND


def test_no_roots_refuses_everything(tmp_path: Path) -> None:
    guard = CommandGuard(PathGuard([]), ["ls"])
    assert code_of(guard, ["ls"]) == ErrorCode.PERMISSION_DENIED


def test_npm_script_names() -> None:
    assert check_npm_script_name("build:prod", {"build:prod": "x"}) == "build:prod"
    for name in ("postinstall", "prepare", "preinstall", "prepublishOnly"):
        with pytest.raises(ToolFailure) as caught:
            check_npm_script_name(name)
        assert caught.value.code == ErrorCode.PERMISSION_DENIED
    with pytest.raises(ToolFailure) as caught:
        check_npm_script_name("pretest", {"test": "x", "pretest": "y"})
    assert caught.value.code == ErrorCode.PERMISSION_DENIED
    with pytest.raises(ToolFailure) as caught:
        check_npm_script_name("--script-shell=x")
    assert caught.value.code == ErrorCode.INVALID_INPUT


def test_git_hardening_neutralises_repository_drivers() -> None:
    args = git_hardening_args(
        ["filter.lfs.clean", "diff.evil.textconv", "merge.x.driver", "diff.external", "user.name"]
    )
    pairs = dict(arg.split("=", 1) for arg in args if arg != "-c")
    assert pairs["core.fsmonitor"] == "false" and pairs["core.hooksPath"] == "/dev/null"
    assert pairs["filter.lfs.clean"] == "cat" and pairs["filter.lfs.required"] == "false"
    assert pairs["diff.evil.textconv"] == "cat" and pairs["merge.x.driver"] == "false"
    assert pairs["diff.external"] == "" and "user.name" not in pairs


def test_split_command_keeps_quoted_words() -> None:
    assert split_command('git commit -m "two words"') == ["git", "commit", "-m", "two words"]


def test_driver_names_that_cannot_be_overridden_are_reported() -> None:
    from mcp_sections.servers.shell_ops.policies.git import unsafe_git_config_names

    names = ["filter.a=b.clean", "filter.ok.clean", "url.https://x=y.insteadof", "diff.x\ty.textconv"]
    assert unsafe_git_config_names(names) == ["filter.a=b.clean", "diff.x\ty.textconv"]


@pytest.mark.parametrize(
    ("command", "code"),
    [
        ("find . -exec id \\;", ErrorCode.INVALID_INPUT),
        ("find . -exec id {} +", ErrorCode.PERMISSION_DENIED),
        ("git log --format=%h -n 3", None),
        ("git commit -m 'message with | pipe and ; semicolon'", None),
    ],
)
def test_string_command_edge_cases(guard: CommandGuard, command: str, code: ErrorCode | None) -> None:
    if code is None:
        guard.check(command)
    else:
        assert code_of(guard, command) == code
