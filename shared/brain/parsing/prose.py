"""Inline markup read as the words it shows: what the embedding model should see of docstrings and documents.

reStructuredText roles and references (:class:`Schema <marshmallow.Schema>` → Schema, `text <url>`_ → text),
literals (``data`` → data), emphasis (*attrs* → attrs) and Markdown links ([text](url) → text) become their text.
"""

from __future__ import annotations

import re

_ROLE_OR_REFERENCE = re.compile(r"(?::[\w.+-]+:)?`+([^`<]*?)\s*(?:<[^>]*>)?`+_{0,2}")
_MARKDOWN_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_EMPHASIS = re.compile(r"(?<![\w*])\*{1,2}([^*\s][^*]*?)\*{1,2}(?![\w*])")


def inline_text(text: str) -> str:
    """`text` with its inline markup replaced by what it shows."""
    text = _MARKDOWN_LINK.sub(lambda m: m.group(1), text)
    text = _ROLE_OR_REFERENCE.sub(lambda m: m.group(1), text)
    return _EMPHASIS.sub(lambda m: m.group(1), text)
