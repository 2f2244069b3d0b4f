"""Python's own parser, one tree at a time in a process: every `ast.parse` of the suite goes through here.

CPython (3.11.7 here) keeps the AST constructor's recursion depth per interpreter, not per thread. While one thread
turns a parse into `ast` objects, a garbage collection can run Python code (a finalizer, a `gc.callbacks` hook), the
GIL passes to another thread, and if that thread parses too, the first fails with `SystemError: AST constructor
recursion depth mismatch` (gh-106905). calculator_evaluate parses in worker threads, and the brain parses Python files
while other calls run, so two parses at once were possible: a 200×200 matrix literal failed that way in a test run. A
process-wide lock makes them take turns (a parse holds it for milliseconds; the largest input calculator_evaluate
takes, about 140 ms)."""

from __future__ import annotations

import ast
import threading

_ONE_AT_A_TIME = threading.Lock()


def parse_module(source: str) -> ast.Module:
    """`ast.parse(source)`, no other parse running meanwhile. Raises SyntaxError, RecursionError, MemoryError,
    ValueError as it does."""
    with _ONE_AT_A_TIME:
        return ast.parse(source)


def parse_expression(source: str) -> ast.Expression:
    """`ast.parse(source, mode="eval")`, no other parse running meanwhile (same errors)."""
    with _ONE_AT_A_TIME:
        return ast.parse(source, mode="eval")
