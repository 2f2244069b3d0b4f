"""calculator_evaluate's linear algebra at its size limits, in the real worker with the default time limit.

Run: python -m benchmarks.bench_calculator
Goal (issue #23): every function on a matrix at the limit (40×40 of exact numbers, 20×20 with symbols,
200×200 float64) answers well inside the worker's time limit (10 s), or fails fast with a coded error; the
peer column runs sympy's generic Matrix method on the same matrix in the same worker (capped by the same
limit), which is what the DomainMatrix route replaces. The first table also times the float64 path (numpy)
on 40×40 next to the exact path on the same size. A second table times 200×200 (the float64 limit): the
float64 path end to end (parsing a literal of 17-digit decimals included) and numpy alone, against the
routes without numpy (exact DomainMatrix, mpmath's float and multiprecision matrices), which is why exact
matrices stay at 40. Timings vary with the machine's load.
"""

from __future__ import annotations

import random
import time
from typing import Any

from benchmarks.harness import print_table
from mcp_sections.servers.calculator.settings import CalculatorSettings
from mcp_sections.servers.calculator.state import SYMBOLIC
from mcp_sections.servers.calculator.workers import WorkerProcess, WorkerTimeout
from mcp_sections.shared.ground.errors import ToolFailure

CELLS = {
    "integers": lambda i, j, draw: str(draw.randint(-99, 99)),
    # ±1000 with 17 significant digits, exact (decimal literals would make the matrix float64)
    "17-digit fractions": lambda i, j, draw: f"{draw.randint(-(10**17), 10**17)}/{10**14}",
    "float64": lambda i, j, draw: repr(draw.uniform(-1, 1)),  # decimal literals (17 digits): the numpy path
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
    (40, "17-digit fractions", ("det", "rank", "inv", "rref", "nullspace", "linsolve", "A*A", "A**3"), ("det",)),
    (40, "float64", ("det", "rank", "inv", "linsolve", "eigenvals", "A*A", "A**3"), ()),
    (20, "integers", ("eigenvals", "eigenvects"), ()),
    (20, "17-digit fractions", ("eigenvals",), ()),
    (20, "x on diagonal", ("det", "rank", "inv", "linsolve", "eigenvals"), ("det", "rank")),
    (20, "with sqrt(2)", ("det", "rank", "inv", "linsolve"), ("det",)),
    (20, "x and sqrt(2)", ("det",), ()),
]


def literal(size: int, kind: str, draw: random.Random) -> str:
    cell = CELLS[kind]
    return "[" + ", ".join("[" + ", ".join(cell(i, j, draw) for j in range(size)) + "]" for i in range(size)) + "]"


def expression(function: str, matrix: str, size: int, kind: str = "") -> str:
    if function == "linsolve":
        point = ".0" if kind == "float64" else ""  # a float64 vector b needs a decimal entry too
        return f"linsolve({matrix}, [{', '.join(f'{i % 7 - 3}{point}' for i in range(size))}])"
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
    """The peers for 200×200, in the worker: one route on a random matrix of integers in [-9, 9]."""
    import mpmath
    import numpy
    from sympy import ZZ
    from sympy.polys.matrices import DomainMatrix

    draw = random.Random(1)
    rows = [[draw.randint(-9, 9) for _ in range(200)] for _ in range(200)]
    if route == "numpy alone (float64)":
        array = numpy.array(rows, dtype=float)
        work = {"det": numpy.linalg.det, "inv": numpy.linalg.inv, "eigenvals": numpy.linalg.eigvals}
        return str(min(_seconds(work[operation], array) for _ in range(3)))[:8]  # best of 3
    if route == "exact (DomainMatrix over ZZ)":
        matrix = DomainMatrix([[ZZ(v) for v in row] for row in rows], (200, 200), ZZ)
        return str({"det": matrix.det, "rank": matrix.rank, "inv": matrix.inv_den}[operation]())[:20]
    context = mpmath.fp if route.startswith("mpmath.fp") else mpmath.mp
    floats = context.matrix(rows)
    return str({"det": context.det, "inv": context.inverse}[operation](floats))[:20]


def _seconds(function: Any, *args: Any) -> float:
    started = time.perf_counter()
    function(*args)
    return time.perf_counter() - started


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
                seconds, outcome = timed(worker, f"{SYMBOLIC}:evaluate", expression(function, matrix, size, kind), 15)
                peer = ""
                if function in peers:
                    peer_seconds, peer_outcome = timed(worker, "benchmarks.bench_calculator:generic", matrix, function)
                    peer = f"{peer_seconds:.2f}" + ("" if peer_outcome == "ok" else f" ({peer_outcome})")
                rows.append((f"{size}×{size} {kind}", function, f"{seconds:.2f}", outcome, peer))
        routes = []
        floats = literal(200, "float64", draw)  # about 880 KB of 17-digit decimals
        for function in ("det", "inv", "linsolve", "eigenvals", "A**2"):
            seconds, outcome = timed(worker, f"{SYMBOLIC}:evaluate", expression(function, floats, 200, "float64"), 15)
            routes.append(("calculator_evaluate float64 (parse + numpy)", function, f"{seconds:.2f}", outcome))
        for route, operations in (
            ("numpy alone (float64)", ("det", "inv", "eigenvals")),
            ("exact (DomainMatrix over ZZ)", ("det", "rank", "inv")),
            ("mpmath.fp (floats)", ("det", "inv")),
            ("mpmath.mp (15 digits)", ("det",)),
        ):
            for operation in operations:
                seconds, outcome = timed(worker, "benchmarks.bench_calculator:at_200", route, operation)
                if route.startswith("numpy"):  # the work alone, best of 3 in the worker: no pickling, no parsing
                    seconds = float(worker.run("benchmarks.bench_calculator:at_200", route, operation))
                routes.append((route, operation, f"{seconds:.3f}" if seconds < 0.1 else f"{seconds:.2f}", outcome))
    finally:
        worker.close()
    print(f"worker time limit {settings.timeout_seconds:g} s; sympy Matrix method = the generic route replaced")
    print_table(("matrix", "function", "seconds", "outcome", "sympy Matrix method, s"), rows)
    print(
        f"\n200×200 (the float64 limit): calculator_evaluate on a {len(floats)}-character literal of 17-digit "
        "decimals; the other routes on integers in [-9, 9] (mpmath.fp.eig fails: no fp.hypot)"
    )
    print_table(("route", "operation", "seconds", "outcome"), routes)


if __name__ == "__main__":
    main()
