"""Size kept in check (#39): no file of the project over 800 lines, no function over 80 lines without a `# Long:`
comment right above it saying why it is one function (ruff's complexity rule, C901, is on in pyproject.toml)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.stdio import REPO

MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 80
CODE = ("shared", "servers", "benchmarks", "scripts")


def code_files() -> list[Path]:
    return sorted(path for top in CODE for path in (REPO / top).rglob("*.py") if "__pycache__" not in path.parts)


def test_no_file_is_over_800_lines() -> None:
    long = {
        str(path.relative_to(REPO)): count
        for path in code_files()
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > MAX_FILE_LINES
    }
    assert not long, f"split these by concept (at most {MAX_FILE_LINES} lines): {long}"


def test_no_function_is_over_80_lines_without_saying_why() -> None:
    unexplained = []
    for path in code_files():
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if node.end_lineno is None or node.end_lineno - node.lineno + 1 <= MAX_FUNCTION_LINES:
                continue
            first = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
            above = {lines[line - 2].strip() for line in (first, node.lineno) if line >= 2}  # decorators, or the def
            if not any(line.startswith("# Long:") for line in above):
                unexplained.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name}")
    assert not unexplained, f"split these, or say why above the def (`# Long: ...`): {unexplained}"
