"""calculator_evaluate's linear algebra at its size limits, in the real worker with the default time limit.

Run: python -m benchmarks.bench_calculator
Goal (issue #23): every function on a matrix at the limit (40×40 of numbers, 20×20 with symbols) answers
well inside the worker's time limit (10 s), or fails fast with a coded error; the peer column runs sympy's
generic Matrix method on the same matrix in the same worker (capped by the same limit), which is what the
DomainMatrix route replaces. A second table times the issue's example limit, 200×200 of small integers,
by the routes available without new dependencies (exact DomainMatrix, mpmath's float and multiprecision
matrices): why the numeric limit is 40. Timings vary with the machine's load.
"""

from __future__ import annotations

import random
import time
from typing import Any

from benchmarks.harness import print_table
from mcp_sections.servers.calculator.state import SYMBOLIC, CalculatorSettings
from mcp_sections.servers.calculator.workers import WorkerProcess, WorkerTimeout
from mcp_sections.shared.errors import ToolFailure

CELLS = {
    "integers": lambda i, j, draw: str(draw.randint(-99, 99)),
    "decimals": lambda i, j, draw: repr(draw.uniform(-1000, 1000)),  # float reprs: 17 significant digits
    "x on diagonal": lambda i, j, draw: "x" if i == j else str(draw.randint(-9, 9)),  # ZZ[x]
    "with sqrt(2)": lambda i, j, draw: (
        f"{draw.randint(1, 9)}*sqrt(2)" if (i + j) % 3 == 0 else str(draw.randint(-9, 9))
    ),
    "x and sqrt(2)": lambda i, j, draw: (
        ("x" if i == j else "sqrt(2)") if (i + j) % 5 == 0 else str(draw.randint(-9, 9))
    ),
}
CASES: list[tuple[int, str, tuple[str, ...], tuple[str, ...]]] = [
    # size, entries, functions timed through calculator_evaluate, sympy Matrix methods timed as the peer
    (40, "integers", ("det", "rank", "inv", "rref", "nullspace", "linsolve", "A*A", "A**3"), ("det", "rank")),
    (40, "decimals", ("det", "rank", "inv", "rref", "nullspace", "linsolve", "A*A", "A**3"), ("det", "rank")),
    (20, "integers", ("eigenvals", "eigenvects"), ()),
    (20, "decimals", ("eigenvals",), ()),
    (20, "x on diagonal", ("det", "rank", "inv", "linsolve", "eigenvals"), ("det", "rank")),
    (20, "with sqrt(2)", ("det", "rank", "inv", "linsolve"), ("det",)),
    (20, "x and sqrt(2)", ("det",), ()),
]


def literal(size: int, kind: str, draw: random.Random) -> str:
    cell = CELLS[kind]
    return "[" + ", ".join("[" + ", ".join(cell(i, j, draw) for j in range(size)) + "]" for i in range(size)) + "]"


def expression(function: str, matrix: str, size: int) -> str:
    if function == "linsolve":
        return f"linsolve({matrix}, [{', '.join(str(i % 7 - 3) for i in range(size))}])"
    if function.startswith("A"):
        return function.replace("A", matrix)
    return f"{function}({matrix})"


def generic(text: str, method: str) -> str:
    """The peer, in the worker: sympy's own Matrix method on the matrix parsed by calculator_evaluate."""
    import sympy

    from mcp_sections.servers.calculator import expressions, symbolic

    matrix = sympy.Matrix(expressions.build(text, symbolic.EVALUATE))
    return str(getattr(matrix, method)())[:20]


def at_200(route: str, operation: str) -> str:
    """The peer for 200×200, in the worker: one route on a random matrix of integers in [-9, 9]."""
    import mpmath
    from sympy import ZZ
    from sympy.polys.matrices import DomainMatrix

    draw = random.Random(1)
    rows = [[draw.randint(-9, 9) for _ in range(200)] for _ in range(200)]
    if route == "exact (DomainMatrix over ZZ)":
        matrix = DomainMatrix([[ZZ(v) for v in row] for row in rows], (200, 200), ZZ)
        return str({"det": matrix.det, "rank": matrix.rank, "inv": matrix.inv_den}[operation]())[:20]
    context = mpmath.fp if route.startswith("mpmath.fp") else mpmath.mp
    floats = context.matrix(rows)
    return str({"det": context.det, "inv": context.inverse}[operation](floats))[:20]


def timed(worker: WorkerProcess, target: str, *args: Any) -> tuple[float, str]:
    started = time.perf_counter()
    try:
        result = worker.run(target, *args)
        outcome = f"ok, {len(result['exact'])} chars" if isinstance(result, dict) else "ok"
    except WorkerTimeout:
        outcome = "TIMEOUT"
    except ToolFailure as failure:
        outcome = failure.code.value
    return time.perf_counter() - started, outcome


def main() -> None:
    settings = CalculatorSettings()
    worker = WorkerProcess(
        "bench",
        timeout_seconds=settings.timeout_seconds,
        memory_limit_bytes=settings.memory_limit_mb * 1024 * 1024,
        preload=(SYMBOLIC,),
    )
    worker.start(wait=True)
    draw = random.Random(7)
    rows = []
    try:
        for size, kind, functions, peers in CASES:
            matrix = literal(size, kind, draw)
            for function in functions:
                seconds, outcome = timed(worker, f"{SYMBOLIC}:evaluate", expression(function, matrix, size), 15)
                peer = ""
                if function in peers:
                    peer_seconds, peer_outcome = timed(worker, "benchmarks.bench_calculator:generic", matrix, function)
                    peer = f"{peer_seconds:.2f}" + ("" if peer_outcome == "ok" else f" ({peer_outcome})")
                rows.append((f"{size}×{size} {kind}", function, f"{seconds:.2f}", outcome, peer))
        routes = []
        for route, operations in (
            ("exact (DomainMatrix over ZZ)", ("det", "rank", "inv")),
            ("mpmath.fp (floats)", ("det", "inv")),
            ("mpmath.mp (15 digits)", ("det",)),
        ):
            for operation in operations:
                seconds, outcome = timed(worker, "benchmarks.bench_calculator:at_200", route, operation)
                routes.append((route, operation, f"{seconds:.2f}", outcome))
    finally:
        worker.close()
    print(f"worker time limit {settings.timeout_seconds:g} s; sympy Matrix method = the generic route replaced")
    print_table(("matrix", "function", "seconds", "outcome", "sympy Matrix method, s"), rows)
    print("\n200×200 of integers in [-9, 9], the issue's example numeric limit (mpmath.fp.eig fails: no fp.hypot)")
    print_table(("route", "operation", "seconds", "outcome"), routes)


if __name__ == "__main__":
    main()
