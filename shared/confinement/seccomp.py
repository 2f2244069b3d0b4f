"""The seccomp filter bubblewrap applies to every sandboxed program (`--seccomp FD`): nothing a program creates
keeps privileges once it has ended.

Mounts, namespaces and `--cap-drop ALL` do not stop this one: a program run by a server that runs as root owns the
files it creates as root, and an owner may `chmod 4755` them. bubblewrap mounts everything `nosuid`, so the bit does
nothing inside, but the file stays on the disk: any local user then runs it, as root, outside. The filter refuses,
in the kernel, every call that would put a set-user-ID or set-group-ID bit (06000) on a file:

- `chmod`, `fchmod`, `fchmodat`, `fchmodat2` whose mode has 06000: EPERM (`cp -p`, `tar x`, `install -m` of such a
  file report the error; the file stays without the bit);
- `open`, `openat` with `O_CREAT` or `O_TMPFILE` and a mode with 06000, `creat` with such a mode, `mknod`,
  `mknodat` with such a mode: EPERM;
- `openat2`: ENOSYS. Its flags and mode are in a structure seccomp cannot read; libc and runtimes fall back to
  `openat` on ENOSYS, as on a kernel older than 5.6;
- `io_uring_setup`, `io_uring_enter`, `io_uring_register`: ENOSYS. io_uring's operations (an `openat` with a mode
  among them) never pass through seccomp; libuv, Tokio and liburing users fall back to ordinary calls, as on a
  kernel without io_uring. Docker's default profile and Codex's Linux sandbox refuse them too;
- a call of another ABI (32-bit `int 0x80` on x86_64, AArch32 on aarch64, x32's numbers with bit 30 set): the
  process is killed (SIGSYS). Those calls have other numbers, which this filter would not recognise; libseccomp
  kills by default for a foreign architecture too.

Directories are refused too: seccomp cannot tell a file from a directory (`fchmodat` carries a path, `fchmod` a
descriptor), and a set-group-ID file whose group the program chose (a group inherited from a shared directory:
`docker`, `disk`, `shadow`) is a privilege. `mkdir` needs no rule: the kernel drops 06000 from its mode. The kernel's
own inheritance still works, as it asks for nothing: a directory created inside a set-group-ID directory inherits
the bit, files the group. What an honest build loses: asking for a set-group-ID directory (`chmod g+s`, `install
-d -m 2775`, `git init --shared`), and GNU `chmod` of such an inherited directory with a numeric mode (it keeps the
bit and so asks for it) fails with EPERM.

What needs no rule here: file capabilities (`setxattr` of `security.capability` needs CAP_SETFCAP, which
`--cap-drop ALL` removes, and a nested user namespace may not map uid 0 without it, since Linux 5.12); device nodes
(CAP_MKNOD); `chown` to another owner (only uid 0 exists in the sandbox's user namespace, and CAP_CHOWN is gone);
writing into an existing set-user-ID file (the kernel clears the bit). The tests show each of these refused.

Compared with what others filter: Codex's Linux sandbox refuses io_uring, ptrace, process_vm_* and network calls,
sandbox-runtime only `socket(AF_UNIX)`; neither looks at modes. The mode rules are the classic ones of container
runtimes ("Linux containers in 500 lines", and those derived from it), plus fchmodat2, the open family and mknod.

Built in pure Python (`struct.pack` of `sock_filter` entries, as `<linux/filter.h>` lays them out): a few
dozen instructions, no library, no compiler; libseccomp's bindings would need the C library and, for the official
ones, a build against its headers. x86_64 and aarch64 only (the architectures Codex and sandbox-runtime ship filters
for); elsewhere `filter_problem()` says why there is none.
"""

from __future__ import annotations

import functools
import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from mcp_sections.shared.ground.errors import SuiteError

# <linux/filter.h>, <linux/seccomp.h>, <linux/audit.h>
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_JSET = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
RET_KILL_PROCESS = 0x80000000
EPERM = 1
ENOSYS = 38
_NR = 0  # offsets in struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]
_ARCH = 4


def _argument(index: int) -> int:
    """Offset of the low 32 bits of argument `index` (both architectures are little-endian). The bits tested are
    there: the kernel reads modes as `umode_t` and open flags as `int`, so the high half never counts."""
    return 16 + 8 * index


PRIVILEGED_MODE = 0o6000  # S_ISUID | S_ISGID
CREATING = 0o100 | 0o20000000  # O_CREAT | __O_TMPFILE (the same on x86_64 and aarch64): the open uses its mode
X32_SYSCALL_BIT = 0x40000000


@dataclass(frozen=True)
class Architecture:
    """One architecture's numbers: the calls whose mode argument is checked, the opens whose mode counts only when
    they create, and the calls refused with ENOSYS."""

    name: str
    audit: int  # AUDIT_ARCH_*: what seccomp_data.arch holds for this ABI's calls
    mode: dict[int, int]  # syscall number -> index of its mode argument
    creating: dict[int, tuple[int, int]]  # syscall number -> (index of its flags, index of its mode)
    absent: tuple[int, ...]
    other_numbering: int | None = None  # numbers at or above it belong to another ABI under the same audit arch


ARCHITECTURES = {
    "x86_64": Architecture(
        "x86_64",
        audit=0xC000003E,  # EM_X86_64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE
        # chmod, fchmod, fchmodat, fchmodat2, creat, mknod, mknodat
        mode={90: 1, 91: 1, 268: 2, 452: 2, 85: 1, 133: 1, 259: 2},
        creating={2: (1, 2), 257: (2, 3)},  # open, openat
        absent=(437, 425, 426, 427),  # openat2, io_uring_setup, io_uring_enter, io_uring_register
        other_numbering=X32_SYSCALL_BIT,
    ),
    "aarch64": Architecture(  # the generic table: no chmod, open, creat nor mknod, only their *at forms
        "aarch64",
        audit=0xC00000B7,  # EM_AARCH64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE
        mode={52: 1, 53: 2, 452: 2, 33: 2},  # fchmod, fchmodat, fchmodat2, mknodat
        creating={56: (2, 3)},  # openat
        absent=(437, 425, 426, 427),
    ),
}
ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}


class SeccompUnavailable(SuiteError):
    """No filter can be built for this machine's architecture."""


def machine() -> str:
    """The kernel's architecture name (`uname -m`), aliases folded."""
    name = os.uname().machine
    return ALIASES.get(name, name)


def filter_problem(name: str | None = None) -> str | None:
    """Why no filter can be built for architecture `name` (this machine's by default); None: one can."""
    name = ALIASES.get(name, name) if name else machine()
    if name in ARCHITECTURES:
        return None
    return f"no seccomp filter for the {name} architecture (one exists for {' and '.join(ARCHITECTURES)})"


@functools.cache
def filter_program(name: str | None = None) -> bytes:
    """The compiled filter (an array of `struct sock_filter`, what `bwrap --seccomp` reads) for architecture `name`,
    this machine's by default. Raises SeccompUnavailable on another architecture."""
    problem = filter_problem(name)
    if problem is not None:
        raise SeccompUnavailable(problem)
    return _assemble(_instructions(ARCHITECTURES[ALIASES.get(name, name) if name else machine()]))


Target = str | int  # a label, or 0: the next instruction
Instruction = tuple[int, Target, Target, int]


def _instructions(arch: Architecture) -> list[Instruction | str]:
    """The program with symbolic jump targets; a bare string marks where its label is."""
    code: list[Instruction | str] = [
        (_LD_W_ABS, 0, 0, _ARCH),
        (_JEQ, 0, "kill", arch.audit),
        (_LD_W_ABS, 0, 0, _NR),
    ]
    if arch.other_numbering is not None:
        code.append((_JGE, "kill", 0, arch.other_numbering))
    for number, index in sorted(arch.mode.items()):
        code.append((_JEQ, f"mode {index}", 0, number))
    for number, (flags, index) in sorted(arch.creating.items()):
        code.append((_JEQ, f"creating {flags} {index}", 0, number))
    for number in sorted(arch.absent):
        code.append((_JEQ, "enosys", 0, number))
    code.append((_RET, 0, 0, RET_ALLOW))
    for flags, index in sorted(set(arch.creating.values())):  # an open's mode counts only when it creates
        code += [
            f"creating {flags} {index}",
            (_LD_W_ABS, 0, 0, _argument(flags)),
            (_JSET, f"mode {index}", "allow", CREATING),
        ]
    for index in sorted({*arch.mode.values(), *(index for _, index in arch.creating.values())}):
        code += [f"mode {index}", (_LD_W_ABS, 0, 0, _argument(index)), (_JSET, "eperm", "allow", PRIVILEGED_MODE)]
    code += [
        "allow",
        (_RET, 0, 0, RET_ALLOW),
        "eperm",
        (_RET, 0, 0, RET_ERRNO | EPERM),
        "enosys",
        (_RET, 0, 0, RET_ERRNO | ENOSYS),
        "kill",
        (_RET, 0, 0, RET_KILL_PROCESS),
    ]
    return code


def _assemble(code: list[Instruction | str]) -> bytes:
    """`struct sock_filter { __u16 code; __u8 jt; __u8 jf; __u32 k; }` entries, jump labels made relative offsets
    (counted from the next instruction, forward only, at most 255)."""
    labels: dict[str, int] = {}
    instructions: list[Instruction] = []
    for entry in code:
        if isinstance(entry, str):
            labels[entry] = len(instructions)
        else:
            instructions.append(entry)

    def offset(position: int, target: Target) -> int:
        if isinstance(target, int):
            return target
        distance = labels[target] - position - 1
        if not 0 <= distance <= 255:
            raise AssertionError(f"a seccomp jump to {target!r} spans {distance} instructions")
        return distance

    return b"".join(
        struct.pack("<HBBI", op, offset(position, true), offset(position, false), k)
        for position, (op, true, false, k) in enumerate(instructions)
    )


@contextmanager
def filter_fd() -> Iterator[int]:
    """A descriptor holding the filter from its start, for one bubblewrap: give it as `--seccomp FD` and keep it open
    in the child (`pass_fds=(FD,)`); bubblewrap reads it to the end. Closed here when the block ends (after the
    spawn). It is a pipe's read end: not inherited by other children, and the filter fits its buffer."""
    program = filter_program()
    read, write = os.pipe()  # both ends close-on-exec; pass_fds opens only this child's copy
    try:
        written = 0
        while written < len(program):
            written += os.write(write, program[written:])
    except BaseException:
        os.close(read)
        raise
    finally:
        os.close(write)
    try:
        yield read
    finally:
        os.close(read)
