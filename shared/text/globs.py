"""Glob matching that cannot backtrack catastrophically (the globs come from callers and from .gitignore files).

A glob translated to a regular expression (`[^/]*` per `*`, `(?:.*/)?` per `**/`) makes Python's backtracking
engine exponential in the number of wildcards: `**/**/**/**/**/**/**/**/**/**/x` against a 30-deep path, or
`*a*a*a*a*a*a*a*a*a*a*b` against a long name, runs for minutes and holds the GIL, so one hostile include
pattern or one hostile `.gitignore` hangs the whole server. Here a glob is a list of tokens; with at most
`REGEX_WILDCARDS` unbounded wildcards it is still compiled to a regex (at most quadratic, and fast), with
more it is matched by simulating its automaton: time linear in the path length times the pattern length.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

REGEX_WILDCARDS = 2


@dataclass(frozen=True)
class Token:
    """One glob element. kind: lit (text), one ([^/]), cls (a one-character class regex), star ([^/]*),
    any (.*), dirs ((?:.*/)? — zero or more whole directories)."""

    kind: str
    text: str = ""

    def regex(self) -> str:
        return {
            "lit": re.escape(self.text),
            "one": "[^/]",
            "cls": self.text,
            "star": "[^/]*",
            "any": ".*",
            "dirs": "(?:.*/)?",
        }[self.kind]


STAR, ANY, DIRS = "star", "any", "dirs"
UNBOUNDED = frozenset({STAR, ANY, DIRS})


def lit(text: str) -> Token:
    return Token("lit", text)


def cls(body: str) -> Token:
    """A character class from its regex body (`a-z`, `^/`), matched against one character."""
    return Token("cls", f"[{body}]")


class GlobPattern:
    """A compiled glob: `.match(text)` is truthy when the glob matches the whole of `text` (like `re.match`
    on a pattern ending in `\\Z`). Any of several token sequences (brace alternatives) may match."""

    def __init__(self, alternatives: Iterable[Sequence[Token]], source: str = "") -> None:
        self.pattern = source
        self._alternatives = [tuple(tokens) for tokens in alternatives]
        self._regexes: list[re.Pattern[str]] = []
        self._automata: list[tuple[Token, ...]] = []
        for tokens in self._alternatives:
            if sum(token.kind in UNBOUNDED for token in tokens) <= REGEX_WILDCARDS:
                self._regexes.append(re.compile("".join(token.regex() for token in tokens) + r"\Z", re.DOTALL))
            else:
                self._automata.append(tokens)
        self._classes = {
            token.text: re.compile(token.text, re.DOTALL)
            for tokens in self._alternatives
            for token in tokens
            if token.kind == "cls"
        }

    def __repr__(self) -> str:
        return f"GlobPattern({self.pattern!r})"

    def match(self, text: str) -> bool | None:
        if any(regex.match(text) for regex in self._regexes):
            return True
        if any(self._simulate(tokens, text) for tokens in self._automata):
            return True
        return None

    def _simulate(self, tokens: tuple[Token, ...], text: str) -> bool:
        end = len(tokens)
        # A state is (token index, inside): `inside` marks a `dirs` token that has consumed characters already
        # (it may then only be left right after a '/').
        states = self._closure(tokens, {(0, False)})
        for char in text:
            following = {state for index, _ in states if index != end for state in self._moves(tokens, index, char)}
            if not following:
                return False
            states = self._closure(tokens, following)
        return any(index == end for index, _ in states)

    def _moves(self, tokens: tuple[Token, ...], index: int, char: str) -> tuple[tuple[int, bool], ...]:
        """The states a state at token `index` goes to on `char` (none: it dies there)."""
        token = tokens[index]
        kind = token.kind
        if kind == "lit":
            return ((index + 1, False),) if char == token.text else ()
        if kind == "one":
            return ((index + 1, False),) if char != "/" else ()
        if kind == "cls":
            return ((index + 1, False),) if self._classes[token.text].match(char) else ()
        if kind == "star":
            return ((index, False),) if char != "/" else ()
        if kind == "any":
            return ((index, False),)
        return ((index, True), (index + 1, False)) if char == "/" else ((index, True),)  # dirs

    @staticmethod
    def _closure(tokens: tuple[Token, ...], states: set[tuple[int, bool]]) -> set[tuple[int, bool]]:
        result = set(states)
        pending = list(states)
        while pending:
            index, inside = pending.pop()
            if index < len(tokens) and (
                tokens[index].kind in (STAR, ANY) or (tokens[index].kind == DIRS and not inside)
            ):
                state = (index + 1, False)
                if state not in result:
                    result.add(state)
                    pending.append(state)
        return result
