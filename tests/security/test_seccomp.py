"""Issue #38, finding 5: a program run by a server running as root left a set-user-ID copy of an interpreter in a
root (`cp /usr/bin/python3 ROOT/py; chmod 4755 ROOT/py`), a root shell for any local user once the sandbox ended.

The filter of `shared.confinement.seccomp`, given to the real bubblewrap (`--seccomp FD`) with the sandbox's own
options, refuses every way to put 06000 on a file: the shell commands an agent would use, and each system call made raw
(so no libc detour is left out). Without the filter the same attacks leave the bit (the control below), so these tests
would catch a filter that is missing or wrong. Honest work (compile, cp -p, tar, install, git, a venv with pip) still
works. The decisions themselves are checked for both architectures by running the program in a small BPF interpreter.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
import shutil
import stat
import struct
import subprocess
import tarfile
import textwrap
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_sections.shared.confinement import seccomp
from mcp_sections.shared.confinement.sandbox import bubblewrap_problem
from mcp_sections.shared.ground.programs import DEFAULT_SEARCH_PATH

BWRAP = shutil.which("bwrap", path=DEFAULT_SEARCH_PATH)
PRIVILEGED = stat.S_ISUID | stat.S_ISGID
needs_bubblewrap = pytest.mark.skipif(
    BWRAP is None or bubblewrap_problem(BWRAP) is not None or seccomp.filter_problem() is not None,
    reason="needs a working bubblewrap (apt-get install bubblewrap) on x86_64 or aarch64",
)

# Numbers transcribed from the kernel's tables (arch/x86/entry/syscalls/syscall_64.tbl, include/uapi/asm-generic/
# unistd.h), independently of the module's.
NUMBERS = {
    "x86_64": {
        "chmod": 90,
        "fchmod": 91,
        "fchmodat": 268,
        "fchmodat2": 452,
        "open": 2,
        "openat": 257,
        "creat": 85,
        "mknod": 133,
        "mknodat": 259,
        "openat2": 437,
        "io_uring_setup": 425,
        "io_uring_enter": 426,
        "io_uring_register": 427,
        "mkdir": 83,
        "mkdirat": 258,
        "write": 1,
        "getpid": 39,
        "linkat": 265,
    },
    "aarch64": {
        "fchmod": 52,
        "fchmodat": 53,
        "fchmodat2": 452,
        "openat": 56,
        "mknodat": 33,
        "openat2": 437,
        "io_uring_setup": 425,
        "io_uring_enter": 426,
        "io_uring_register": 427,
        "mkdirat": 34,
        "write": 64,
        "getpid": 172,
        "linkat": 37,
    },
}
AUDIT = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
MODE_ARGUMENT = {"chmod": 1, "fchmod": 1, "fchmodat": 2, "fchmodat2": 2, "creat": 1, "mknod": 1, "mknodat": 2}
OPEN_ARGUMENTS = {"open": (1, 2), "openat": (2, 3)}  # (flags, mode)
O_CREAT, O_WRONLY, O_TMPFILE = 0o100, 0o1, 0o20000000
ALLOW, EPERM, ENOSYS, KILL = 0x7FFF0000, 0x00050001, 0x00050026, 0x80000000


def decide(program: bytes, arch: int, number: int, arguments: tuple[int, ...] = ()) -> int:
    """What the filter answers for one call: a classic-BPF interpreter for the instructions a seccomp filter of
    this kind uses (absolute loads, jumps on constants, returns)."""
    data = struct.pack("<iIQ6Q", number, arch, 0, *(list(arguments) + [0] * 6)[:6])
    instructions = [struct.unpack_from("<HBBI", program, at) for at in range(0, len(program), 8)]
    accumulator, position = 0, 0
    for _ in range(len(instructions)):
        code, true, false, k = instructions[position]
        if code == 0x06:
            return k
        if code == 0x20:
            accumulator, position = struct.unpack_from("<I", data, k)[0], position + 1
            continue
        taken = {0x15: accumulator == k, 0x35: accumulator >= k, 0x45: bool(accumulator & k)}[code]
        position += 1 + (true if taken else false)
    raise AssertionError("the program did not return")


@pytest.mark.parametrize("name", ["x86_64", "aarch64"])
def test_the_filter_refuses_privileged_modes_and_nothing_else(name: str) -> None:
    program, numbers, arch = seccomp.filter_program(name), NUMBERS[name], AUDIT[name]
    assert len(program) % 8 == 0 and len(program) // 8 < 4096  # BPF_MAXINSNS
    for call, index in MODE_ARGUMENT.items():
        if call not in numbers:
            continue
        for mode, expected in (
            (0o4755, EPERM),
            (0o2755, EPERM),
            (0o6000, EPERM),
            (stat.S_IFREG | 0o4755, EPERM),
            ((1 << 32) | 0o4755, EPERM),
            (0o755, ALLOW),
            (0o644, ALLOW),
            (0o1777, ALLOW),  # sticky: no privilege
            ((1 << 32) | 0o755, ALLOW),  # the kernel reads the low 16 bits
        ):
            arguments = [0] * 6
            arguments[index] = mode
            assert decide(program, arch, numbers[call], tuple(arguments)) == expected, (call, oct(mode))
    for call, (flags_at, mode_at) in OPEN_ARGUMENTS.items():
        if call not in numbers:
            continue
        for flags, mode, expected in (
            (O_CREAT | O_WRONLY, 0o4755, EPERM),
            (O_CREAT | O_WRONLY, 0o6644, EPERM),
            (O_TMPFILE | 0o200000 | O_WRONLY, 0o2755, EPERM),  # O_TMPFILE then linkat: a file with the bit
            (O_CREAT | O_WRONLY, 0o644, ALLOW),
            (0, 0o4755, ALLOW),  # no O_CREAT: the mode is not used (Go and Rust pass one anyway)
        ):
            arguments = [0] * 6
            arguments[flags_at], arguments[mode_at] = flags, mode
            assert decide(program, arch, numbers[call], tuple(arguments)) == expected, (call, oct(flags), oct(mode))
    for call in ("openat2", "io_uring_setup", "io_uring_enter", "io_uring_register"):
        assert decide(program, arch, numbers[call]) == ENOSYS, call
    mkdir = numbers.get("mkdir", numbers["mkdirat"])
    for call, arguments in (("write", (1, 0, 10)), ("getpid", ()), ("linkat", (0, 0, 0, 0, 0x400))):
        assert decide(program, arch, numbers[call], arguments) == ALLOW, call
    assert decide(program, arch, mkdir, (0, 0o6777, 0o6777)) == ALLOW  # the kernel drops 06000 from mkdir's mode
    for foreign in (0x40000003, 0x40000028, AUDIT["aarch64" if name == "x86_64" else "x86_64"]):  # i386, ARM
        assert decide(program, foreign, 15, (0, 0o4755)) == KILL  # i386's chmod is 15: another numbering
    if name == "x86_64":  # x32's calls carry bit 30 under x86_64's audit arch
        assert decide(program, arch, 0x40000000 | 90, (0, 0o4755)) == KILL


def test_no_filter_for_an_unknown_architecture() -> None:
    assert seccomp.filter_problem("riscv64") == (
        "no seccomp filter for the riscv64 architecture (one exists for x86_64 and aarch64)"
    )
    assert seccomp.filter_problem("arm64") is None
    with pytest.raises(seccomp.SeccompUnavailable, match="riscv64"):
        seccomp.filter_program("riscv64")


def test_filter_fd_holds_the_program_once_and_is_closed_after() -> None:
    with seccomp.filter_fd() as fd:
        assert not os.get_inheritable(fd)  # only the child it is passed to (pass_fds) gets it
        read = b""
        while chunk := os.read(fd, 4096):
            read += chunk
        assert read == seccomp.filter_program()
    with pytest.raises(OSError):
        os.fstat(fd)


def sandboxed(root: Path, argv: list[str], *, filtered: bool = True) -> subprocess.CompletedProcess[str]:
    """`argv` in bubblewrap as the suite runs it (no capabilities, every namespace), `root` writable."""
    assert BWRAP is not None
    command = [BWRAP, "--die-with-parent", "--unshare-all", "--cap-drop", "ALL", "--ro-bind", "/usr", "/usr"]
    for directory in ("/lib", "/lib64", "/bin"):
        command += ["--ro-bind-try", directory, directory]
    command += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--bind", str(root), str(root)]
    command += ["--chdir", str(root)]
    with contextlib.ExitStack() as stack:
        fds: tuple[int, ...] = ()
        if filtered:
            fds = (stack.enter_context(seccomp.filter_fd()),)
            command += ["--seccomp", str(fds[0])]
        environment = {"PATH": "/usr/bin:/bin", "HOME": str(root), "LANG": "C.UTF-8"}
        return subprocess.run(
            [*command, "--", *argv], pass_fds=fds, capture_output=True, text=True, timeout=300, env=environment
        )


def shell(root: Path, script: str, *, filtered: bool = True) -> subprocess.CompletedProcess[str]:
    return sandboxed(root, ["/bin/sh", "-c", script], filtered=filtered)


def python(root: Path, script: str, *, filtered: bool = True) -> dict[str, str]:
    """Runs `script` with the system's Python in the sandbox; it prints one JSON object, returned."""
    done = sandboxed(root, ["/usr/bin/python3", "-I", "-c", PRELUDE + textwrap.dedent(script)], filtered=filtered)
    assert done.returncode == 0, done.stderr
    results: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    return results


PRELUDE = """
import ctypes, errno, json, os, stat
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
AT_FDCWD = -100

def raw(number, *arguments):
    ctypes.set_errno(0)
    values = [ctypes.c_char_p(a.encode()) if isinstance(a, str) else ctypes.c_long(a) for a in arguments]
    result = libc.syscall(ctypes.c_long(number), *values)
    return "ok" if result >= 0 else errno.errorcode[ctypes.get_errno()]

def attempt(work):
    try:
        work()
        return "ok"
    except OSError as exc:
        return errno.errorcode[exc.errno]
"""


def privileged(root: Path) -> dict[str, str]:
    """Every file and directory under `root` that carries 06000, as seen from outside the sandbox."""
    found = {}
    for path in [root, *root.rglob("*")]:
        mode = path.lstat().st_mode
        if mode & PRIVILEGED and not stat.S_ISLNK(mode):
            found[str(path.relative_to(root))] = stat.filemode(mode)
    return found


@pytest.fixture(autouse=True)
def disarmed(tmp_path: Path) -> Iterator[None]:
    """The controls make set-user-ID copies on purpose: none is left in the temporary directory after a test."""
    yield
    for name in privileged(tmp_path):
        path = tmp_path / name
        path.chmod(path.stat().st_mode & 0o1777)


COPY_AND_CHMOD = "cp /usr/bin/python3 py && chmod 4755 py"


@needs_bubblewrap
def test_the_interpreter_copy_keeps_no_setuid_bit(tmp_path: Path) -> None:
    done = shell(tmp_path, COPY_AND_CHMOD)
    assert done.returncode != 0 and "Operation not permitted" in done.stderr
    assert (tmp_path / "py").stat().st_size > 0 and privileged(tmp_path) == {}


@needs_bubblewrap
def test_without_the_filter_the_attack_works(tmp_path: Path) -> None:
    """The control: the same sandbox without `--seccomp` leaves a set-user-ID interpreter (the finding)."""
    done = shell(tmp_path, COPY_AND_CHMOD, filtered=False)
    assert done.returncode == 0, done.stderr
    assert privileged(tmp_path) == {"py": "-rwsr-xr-x"}


SHELL_ATTACKS = {
    "chmod u+s": "touch f && chmod u+s f",
    "chmod g+s": "touch f && chmod g+s f",
    "chmod 6755": "touch f && chmod 6755 f",
    "install -m 4755": "install -m 4755 /usr/bin/true f",
    "install -m 2755": "install -m 2755 /usr/bin/true f",
    "python os.chmod": "touch f && python3 -c 'import os; os.chmod(\"f\", 0o4755)'",
    "python os.fchmod": "python3 -c 'import os; fd = os.open(\"f\", os.O_CREAT | os.O_WRONLY); os.fchmod(fd, 0o2755)'",
    "python os.open": "python3 -c 'import os; os.open(\"f\", os.O_CREAT | os.O_WRONLY, 0o6755)'",
    "python os.mknod": "python3 -c 'import os, stat; os.mknod(\"f\", stat.S_IFREG | 0o4755)'",
    "chmod g+s on a directory": "mkdir d && chmod g+s d",
}


@needs_bubblewrap
@pytest.mark.parametrize("attack", SHELL_ATTACKS.values(), ids=SHELL_ATTACKS.keys())
def test_shell_attacks_leave_no_privileged_file(tmp_path: Path, attack: str) -> None:
    done = shell(tmp_path, attack)
    assert done.returncode != 0 and ("Operation not permitted" in done.stderr or "PermissionError" in done.stderr)
    assert privileged(tmp_path) == {}


RAW_CALLS = """
numbers = NUMBERS
results = {}
def fresh(name):
    with open(name, "w"):
        pass
    return name
if "chmod" in numbers:
    results["chmod"] = raw(numbers["chmod"], fresh("chmod"), 0o4755)
    results["chmod, high bits"] = raw(numbers["chmod"], fresh("chmod-high"), (1 << 32) | 0o2755)
fd = os.open(fresh("fchmod"), os.O_WRONLY)
results["fchmod"] = raw(numbers["fchmod"], fd, 0o4755)
results["fchmodat"] = raw(numbers["fchmodat"], AT_FDCWD, fresh("fchmodat"), 0o2755)
results["fchmodat2"] = raw(numbers["fchmodat2"], AT_FDCWD, fresh("fchmodat2"), 0o4755, 0)
if "open" in numbers:
    results["open"] = raw(numbers["open"], "open", os.O_CREAT | os.O_WRONLY, 0o4755)
if "creat" in numbers:
    results["creat"] = raw(numbers["creat"], "creat", 0o6755)
if "mknod" in numbers:
    results["mknod"] = raw(numbers["mknod"], "mknod", stat.S_IFREG | 0o4755, 0)
results["openat"] = raw(numbers["openat"], AT_FDCWD, "openat", os.O_CREAT | os.O_WRONLY, 0o4755)
results["mknodat"] = raw(numbers["mknodat"], AT_FDCWD, "mknodat", stat.S_IFREG | 0o2755, 0)
tmpfile = libc.syscall(ctypes.c_long(numbers["openat"]), ctypes.c_long(AT_FDCWD), b".",
                       ctypes.c_long(os.O_TMPFILE | os.O_WRONLY), ctypes.c_long(0o4755))
results["O_TMPFILE"] = "ok" if tmpfile >= 0 else errno.errorcode[ctypes.get_errno()]
if tmpfile >= 0:
    libc.linkat(AT_FDCWD, f"/proc/self/fd/{tmpfile}".encode(), AT_FDCWD, b"tmpfile", 0x400)  # AT_SYMLINK_FOLLOW
print(json.dumps(results))
"""


@needs_bubblewrap
def test_raw_system_calls_leave_no_privileged_file(tmp_path: Path) -> None:
    script = RAW_CALLS.replace("NUMBERS", repr(NUMBERS[seccomp.machine()]))
    results = python(tmp_path, script)
    assert set(results.values()) == {"EPERM"}, results
    assert privileged(tmp_path) == {}
    control = tmp_path / "control"
    control.mkdir()
    unfiltered = python(control, script, filtered=False)
    assert set(unfiltered.values()) == {"ok"}, unfiltered  # every one of them is a real way to the bit
    renamed = {"chmod, high bits": "chmod-high", "O_TMPFILE": "tmpfile"}
    assert set(privileged(control)) == {renamed.get(call, call) for call in unfiltered}


@needs_bubblewrap
def test_copies_and_archives_of_privileged_files_lose_the_bit(tmp_path: Path) -> None:
    """A set-user-ID file already in a root (or in an archive there) is copied or extracted without its bit."""
    (tmp_path / "suid").write_bytes(Path("/usr/bin/true").read_bytes())
    (tmp_path / "suid").chmod(0o4755)
    archive = tmp_path / "privileged.tar"
    with tarfile.open(archive, "w") as tar:
        for name, kind, mode in (("bin/su", tarfile.REGTYPE, 0o4755), ("shared", tarfile.DIRTYPE, 0o2775)):
            info = tarfile.TarInfo(name)
            info.type, info.mode = kind, mode
            tar.addfile(info, io.BytesIO(b"") if kind == tarfile.REGTYPE else None)
    done = shell(tmp_path, "cp -p suid copy-p; cp -a suid copy-a; mkdir x && tar xpf privileged.tar -C x; echo end")
    assert done.stdout.strip() == "end"
    assert "Operation not permitted" in done.stderr
    for name in ("copy-p", "copy-a", "x/bin/su"):
        assert (tmp_path / name).is_file()
    assert privileged(tmp_path) == {"suid": "-rwsr-xr-x"}  # only the one the test made outside


KERNEL_REFUSALS = """
results = {}
capability = bytes.fromhex("01000002" "80000000" "00000000" "00000000" "00000000")  # v2: cap_setuid, effective
open("f", "w").close()
results["setxattr security.capability"] = attempt(lambda: os.setxattr("f", "security.capability", capability))
results["character device"] = attempt(lambda: os.mknod("dev", stat.S_IFCHR | 0o666, os.makedev(1, 3)))
results["chown to another user"] = attempt(lambda: os.chown("f", 1000, 1000))  # EINVAL: only uid 0 is mapped
print(json.dumps(results))
"""


@needs_bubblewrap
@pytest.mark.parametrize("filtered", [False, True], ids=["without the filter", "with it"])
def test_the_kernel_refuses_the_other_privileges(tmp_path: Path, filtered: bool) -> None:
    """What needs no rule in the filter, refused as well without it: file capabilities, device nodes, another owner
    (no capabilities), also from a nested user namespace (which may not map uid 0 without CAP_SETFCAP); and a write
    into an existing set-user-ID file clears its bit."""
    assert python(tmp_path, KERNEL_REFUSALS, filtered=filtered) == dict.fromkeys(
        ("setxattr security.capability", "character device"), "EPERM"
    ) | {"chown to another user": "EINVAL"}
    assert not os.listxattr(tmp_path / "f") and not (tmp_path / "dev").exists()
    if shutil.which("unshare", path=DEFAULT_SEARCH_PATH):
        nested = "unshare -r true; echo mapped=$?; unshare -U python3 -I -c " + shlex.quote(PRELUDE + KERNEL_REFUSALS)
        done = shell(tmp_path, nested, filtered=filtered)
        assert "mapped=1" in done.stdout
        assert json.loads(done.stdout.strip().splitlines()[-1])["setxattr security.capability"] == "EPERM"
        assert not os.listxattr(tmp_path / "f")
    existing = tmp_path / "existing"
    existing.write_bytes(b"#!/bin/sh\n")
    existing.chmod(0o4755)
    assert shell(tmp_path, "echo 'id' >> existing", filtered=filtered).returncode == 0
    assert privileged(tmp_path) == {}


@needs_bubblewrap
def test_openat2_and_io_uring_are_absent(tmp_path: Path) -> None:
    """openat2's flags are in a structure the filter cannot read, io_uring's operations bypass seccomp: both say
    ENOSYS, so callers fall back to openat and ordinary calls."""
    numbers = NUMBERS[seccomp.machine()]
    script = f"""
    how = ctypes.create_string_buffer(struct_how := 24)
    results = {{
        "openat2": raw({numbers["openat2"]}, AT_FDCWD, "new", ctypes.addressof(how), struct_how),
        "io_uring_setup": raw({numbers["io_uring_setup"]}, 8, ctypes.addressof(ctypes.create_string_buffer(120))),
        "io_uring_enter": raw({numbers["io_uring_enter"]}, 0, 0, 0, 0, 0, 0),
        "io_uring_register": raw({numbers["io_uring_register"]}, 0, 0, 0, 0),
        "open after": attempt(lambda: os.close(os.open("new", os.O_CREAT | os.O_WRONLY, 0o644))),
    }}
    print(json.dumps(results))
    """
    assert python(tmp_path, script) == {
        "openat2": "ENOSYS",
        "io_uring_setup": "ENOSYS",
        "io_uring_enter": "ENOSYS",
        "io_uring_register": "ENOSYS",
        "open after": "ok",
    }


@needs_bubblewrap
def test_another_abi_is_killed(tmp_path: Path) -> None:
    """x32's numbers (bit 30) are another table under x86_64's audit arch: the process dies (SIGSYS)."""
    if seccomp.machine() != "x86_64":
        pytest.skip("x32 exists on x86_64 only")
    done = sandboxed(tmp_path, ["/usr/bin/python3", "-I", "-c", PRELUDE + "print(raw(0x40000000 | 90, '.', 0o4755))"])
    assert done.returncode == 128 + 31 and done.stdout == ""


@needs_bubblewrap
def test_set_group_id_directories_are_inherited_but_not_asked_for(tmp_path: Path) -> None:
    """The decision for directories: the kernel's inheritance works (it asks for nothing); asking is refused, as
    seccomp cannot tell a directory from a file."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o2775)
    done = shell(tmp_path, "mkdir shared/sub && touch shared/sub/file && mkdir -m 2775 asked; echo end")
    assert done.stdout.strip() == "end"
    assert (shared / "sub").stat().st_mode & stat.S_ISGID  # inherited from its parent
    assert not (shared / "sub" / "file").stat().st_mode & PRIVILEGED
    assert not (tmp_path / "asked").stat().st_mode & stat.S_ISGID


HONEST_WORK = """
set -e
umask 022
printf '#include <stdio.h>\\nint main(void) { puts("built"); return 0; }\\n' > hello.c
gcc -o hello hello.c && ./hello
chmod 755 hello && chmod 644 hello.c && chmod -R u+rwX,go+rX . && chmod +x hello
mkdir -p tree/sub && echo x > tree/sub/f && chmod 750 tree/sub && chmod 1777 tree
cp -p hello hello.copy && cp -a tree tree.copy && cp -r tree tree.r
mkdir out && tar xf ordinary.tar -C out && tar cf again.tar out && tar xpf again.tar -C tree.r
install -m 755 hello bin-hello && install -d -m 750 installed
git init -q repo
git -C repo -c user.email=a@example.org -c user.name=a commit -q --allow-empty -m "$(printf 's\\n\\nbody')"
git clone -q repo clone
python3 -c 'import os; os.chmod("hello.c", 0o600); os.close(os.open("made", os.O_CREAT | os.O_WRONLY, 0o755))'
echo done
"""


@needs_bubblewrap
def test_honest_work_still_works(tmp_path: Path) -> None:
    with tarfile.open(tmp_path / "ordinary.tar", "w") as tar:
        for name, mode in (("pkg/run.sh", 0o755), ("pkg/data.txt", 0o644), ("pkg/private", 0o600)):
            info = tarfile.TarInfo(name)
            info.mode, info.size = mode, 3
            tar.addfile(info, io.BytesIO(b"ok\n"))
    done = shell(tmp_path, HONEST_WORK)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["built", "done"]
    assert (tmp_path / "out" / "pkg" / "run.sh").stat().st_mode & 0o777 == 0o755
    assert (tmp_path / "tree").stat().st_mode & 0o7777 == 0o1777
    assert (tmp_path / "hello.copy").stat().st_mode & 0o777 == 0o755


def wheel(directory: Path) -> Path:
    """A tiny wheel with a console script, made here: pip installs it offline and marks the script executable."""
    path = directory / "tiny-1.0-py3-none-any.whl"
    files = {
        "tiny/__init__.py": "def main():\n    print('tiny ran')\n",
        "tiny-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: tiny\nVersion: 1.0\n",
        "tiny-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        "tiny-1.0.dist-info/entry_points.txt": "[console_scripts]\ntiny = tiny:main\n",
    }
    record = "".join(f"{name},,\n" for name in files) + "tiny-1.0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in {**files, "tiny-1.0.dist-info/RECORD": record}.items():
            archive.writestr(name, text)
    return path


@needs_bubblewrap
@pytest.mark.slow
def test_a_venv_and_pip_install_still_work(tmp_path: Path) -> None:
    package = wheel(tmp_path)
    done = shell(
        tmp_path,
        f"python3 -m venv venv && venv/bin/pip install -q --no-index {package.name} && venv/bin/tiny",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "tiny ran"
    assert (tmp_path / "venv" / "bin" / "tiny").stat().st_mode & 0o111
