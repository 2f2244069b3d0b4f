"""Two parses at once: calculator_evaluate's matrix literal in one thread, the brain's Python parser in another.

CPython keeps the AST constructor's recursion depth per interpreter (gh-106905): a second thread that parses while the
first is turning its parse into `ast` objects (the GIL passed during a garbage collection that ran Python code) made
the first fail with `SystemError: AST constructor recursion depth mismatch`. A test run met it on a 200×200 literal.
Here a `gc.callbacks` hook hands the GIL over at the worst moment, every time: the other parse waits for its turn
(`shared.text.python_syntax`), and both trees come out whole."""

from __future__ import annotations

import gc
import threading
from typing import Any

from mcp_sections.servers.calculator import grammar
from mcp_sections.servers.calculator.symbolic import EVALUATE
from mcp_sections.shared.brain.parsing.builder import Builder
from mcp_sections.shared.brain.parsing.python_code import parse_python
from tests.calculator.helpers import literal

SIZE = 60  # 3,600 entries: dozens of collections while their tree is built
MODULE = "def scale(x):\n    return [x, (x, {x: x})]\n"


def test_a_parse_in_another_thread_waits_while_a_tree_is_being_built() -> None:
    # a decimal entry makes it a float64 literal (up to 200×200)
    text = literal([[row * SIZE + column + 0.5 for column in range(SIZE)] for row in range(SIZE)])
    handed_over, other_done = threading.Event(), threading.Event()
    other: dict[str, Any] = {}
    turns = {"left": 3}

    def brain_parse() -> None:
        handed_over.wait(30)
        builder = Builder("p", "pkg/scale.py", "python", "0" * 64, len(MODULE), 0)
        try:
            parse_python(builder, MODULE)
            other["scopes"] = [node.name for node in builder.nodes if node.label == "Scope"]
        except BaseException as exc:  # reported below, in the test's thread
            other["error"] = exc
        other_done.set()

    def hand_over(phase: str, info: dict[str, Any]) -> None:
        """In the calculator's thread, at a collection: let the other thread parse now (it may have to wait)."""
        if phase == "start" and turns["left"] and threading.current_thread() is threading.main_thread():
            turns["left"] -= 1
            handed_over.set()
            other_done.wait(0.2)

    thread = threading.Thread(target=brain_parse)
    thread.start()
    gc.callbacks.append(hand_over)
    try:
        tree = grammar.parse(text, EVALUATE)  # what calculator_evaluate parses first
    finally:
        gc.callbacks.remove(hand_over)
        handed_over.set()
        thread.join(30)
    assert turns["left"] < 3, "no garbage collection ran while the tree was built: the test proves nothing"
    assert len(getattr(tree, "elts", [])) == SIZE
    assert "error" not in other, other.get("error")
    assert other.get("scopes") == ["scale"]
