"""A need as an agent writes it, read apart: the request (what to do) and the material it acts on.

Agents paste what they work with into a need: paths, URLs, quoted or pasted text, code, JSON, error output, and side
clauses about why. None of it says which tool to use, yet it holds words that do (an "image" tag in a compose file,
"tasks" in a page about asyncio). `read_need` takes the material out before anything is ranked:

1. blocks: fenced code; in a need of several lines, each line that reads as code, data or error output;
2. spans: URLs, `code`, quoted text, JSON, error phrases (`KeyError: ...`), paths and file names, math expressions,
   identifiers; each is replaced by its kind ("web page", "code", "text", "data", "error message", "file",
   "folder", "expression"); an id with a word prefix keeps the word (task_0a1b -> "task");
3. sentences (ends, semicolons, dashes, lines); a colon after a request ("create x with this content: ...",
   "remember this: ...") ends it, what follows being text;
4. each sentence is cut into clauses, and each clause is read as a request (a question, an imperative verb, "can
   you", "I need"...) or an aside: in parentheses, opening with a subordinating word ("before I commit,", "so
   nobody else grabs it", "I think..."), or what someone is to tell ("tell me | whether it removed the argument").
   A clause that is neither is context.

`Need.request` is the request clauses (every clause but the asides when none reads as a request); `Need.head` the
first words of each (the verb and its object, before the details); `Need.context` every clause. All hold the
material as its kind. `Need.mood` says whether the request asks to be told something or for a change. How much
each weighs in the ranking is `tool_search`'s business.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

_WORD = re.compile(r"[A-Za-z][A-Za-z'’]*")
Mood = Literal["ask", "change"]

#: Verbs a request opens with (imperative), lower case.
IMPERATIVE_VERBS = frozenset(
    _WORD.findall(
        "activate add analyse analyze answer append apply archive ask assign audit back backfill break bring browse "
        "build bump calculate call cancel caption change check clean clear clone close collect combine commit compare "
        "compute configure confirm convert copy count crawl create cut debug decide define delegate delete derive "
        "describe determine diff differentiate display download draw drop dump duplicate edit embed empty end erase "
        "evaluate execute expand explain explore export express extract factor feed fetch figure file fill find "
        "finish fix flag flip follow forget format free generate get give go google grab grep hand have help ignore "
        "import index inspect install integrate keep kill launch leave let list load locate log look make mark merge "
        "mkdir move name note open organise organize parse patch pause pick pin plan play point post preview print "
        "profile pull purge push put query read rebuild recall record reduce refresh register release reload "
        "remember remove rename render reopen replace report request reset resolve restart restore resume retrieve "
        "revert review rewrite roll run save scan schedule scope search send set setup share show shut simplify solve "
        "sort spawn spin split start stash stop store summarise summarize swap switch take tell terminate test throw "
        "tick tidy time touch trace track translate turn type undo uninstall unload update upgrade upload use "
        "validate verify view walk watch wipe work write"
    )
)
#: Words that make a clause a request wherever they are.
REQUEST_MARKERS = re.compile(
    r"\b(?:can|could|would|will) you\b|\bplease\b|\bi(?:'d| would) like\b|\bi (?:need|want)\b|\bhelp me\b|"
    r"\blet(?:'s| us| me)\b|\bhow (?:do|can|should) i\b|\bis there a way\b",
    re.IGNORECASE,
)
#: Verbs that ask for a change (to files, stores, processes, agents) when a request opens with them; "run", "log",
#: "file" and "execute" are left out: they open reads as often ("run this query", "log base 2", "file won't open").
CHANGE_VERBS = frozenset(
    _WORD.findall(
        "save store note remember write create add append delete remove forget update change set edit rename move copy "
        "undo restore revert bump mark make put replace install uninstall ingest index generate spawn kill terminate "
        "stop start launch apply record assign tick complete close reopen register clear purge wipe drop empty switch "
        "activate unload load fix patch insert type send push commit"
    )
)
#: Words that open a question asking to be told something (not "have", which opens orders: "have three agents ...").
ASKING_WORDS = frozenset(_WORD.findall("what which where who whom whose how is are does do did was were why when"))
QUESTION_WORDS = frozenset(
    _WORD.findall("what which where who whom whose how is are does do did can could would should has have")
)
#: Words that open a clause saying why, when or what happened rather than what to do: an aside.
SUBORDINATORS = frozenset(
    _WORD.findall(
        "after although as because before btw fyi if once since so though unless until whenever whereas while otherwise"
    )
)
ASIDE_OPENINGS = re.compile(
    r"^(?:i think|i guess|i suspect|i believe|i mean|i'm (?:not sure|guessing|trying)|it's|it was|it is|that's|"
    r"there's|they|whose|e\.g\.|i\.e\.|by the way|for (?:the|a|my|our) )\b",
    re.IGNORECASE,
)
#: Words skipped before the first word of a clause (fillers, connectives, politeness).
LEADING_FILLERS = frozenset(
    _WORD.findall(
        "ok okay so and then also now just right alright well hey hi hmm umm um uh oh oops quick first next finally "
        "actually basically but or please kindly again too still yes no"
    )
)

HEAD_WORDS = 5
_LEAD = re.compile(
    r"^(?:(?:ok|okay|so|and|then|also|now|just|right|alright|well|hey|please|kindly|(?:can|could|would|will) you|"
    r"i (?:need|want)(?: you)? to|i'd like(?: you)? to|i (?:need|want)|let's|help me)\b[\s,]*)+",
    re.IGNORECASE,
)
_URL = re.compile(r"\b(?:https?|ftp)://[^\s<>\"'`)\]]+|\bwww\.[^\s<>\"'`)\]]+")
_FENCE = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_BACKTICK = re.compile(r"`[^`\n]+`")
_QUOTED = re.compile(r"""(?<![\w])(?:"[^"\n]+"|'[^'\n]+'|“[^”\n]+”|‘[^’\n]+’)(?![\w])""")
_JSON = re.compile(r"\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\}|\[[^\[\]]*\"[^\[\]]*\]")
_ERROR_PHRASE = re.compile(
    r"\b(?:[A-Z][A-Za-z]*(?:Error|Exception|Warning)|ERR_[A-Z_]+|E[A-Z]{3,}|FATAL|ERROR|npm ERR!|Traceback)\b:?"
    r"(?:(?!\s[—–-]{1,2}\s|[.;](?:\s|$))[^\n])*"
)
_PATH = re.compile(r"(?=[^\s]*[A-Za-z])(?:~|\.{1,2})?(?:/[\w.@+-]+)+/?|[\w.@+-]+(?:/[\w.@+-]*)+")
_FILE_NAME = re.compile(r"(?<![\w/])[\w@+-]+(?:\.[\w-]+)*\.[A-Za-z][A-Za-z0-9]{0,5}\b")
_PREFIXED_ID = re.compile(r"\b([A-Za-z]{2,})_[0-9a-f]{4,}\b")
_EXPRESSION = re.compile(r"[\w.]*[(\[]?[\w.]*\s*(?:[-+*/^=<>]\s*[(\[]?[\w.]+[)\]]?\s*){2,}")
#: Identifiers, versions and numbers: no tool text holds them (a short word with a digit, "3D", "Neo4j", stays).
_IDENTIFIER = re.compile(
    r"(?<![\w'])(?:\w*_\w*|\w*[a-z][A-Z]\w*|(?!\d[A-Za-z]\b)v?[\d.:,]*\d[\d.:,]*\w*|\w+\d\w*\d\w*)(?![\w'])"
)
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\s*;\s*|\s+[—–-]{1,2}\s+|\s*\n\s*")
#: Inside a sentence, where a subordinate clause or a new subject starts (the comma or word stays with what follows).
_CLAUSE_START = re.compile(
    r",\s+(?=\w)|\s+(?=(?:and|but|so|or)\s+(?:i|we|you|it|they|then)\b)|\s+(?=(?:so|because|since|as|"
    r"although|though|unless|until|while|whereas|so that|in order to)\s+(?:i|we|you|it|they|nobody|no one|"
    r"everyone|the|that|this|its?)\b)|(?<=\btell me)\s+(?=(?:whether|if|what|why|how|which|where|when)\b)|"
    r"(?<=\blet me know)\s+|(?<=\bexplain)\s+(?=(?:whether|what|why|how)\b)",
    re.IGNORECASE,
)

#: A line that reads as code, data or error output rather than prose.
_CODE_LINE = re.compile(
    r"^\s{2,}\S|^\s*(?:def|class|import|from|return|const|let|var|function|export|async|if|for|while|#!|//|#|"
    r"\$|>>>|at |File \"|[A-Za-z]*(?:Error|Exception|Warning)\b|(?:error|warning|warn|fatal)\b|npm ERR!|E\s{2,})|"
    r"[{};]\s*$|^\s*[-\w]+:\s*\S*\s*$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Clause:
    text: str  # with the material replaced by its kind
    role: str  # "request", "context" or "aside"


@dataclass(frozen=True)
class Need:
    """A need read apart: its clauses (material replaced by its kind) and the material taken out."""

    text: str
    clauses: tuple[Clause, ...]
    material: tuple[tuple[str, str], ...] = field(default=())

    @property
    def request(self) -> str:
        """What is asked: the request clauses, else every clause but the asides, else every clause."""
        for roles in (("request",), ("request", "context"), ("request", "context", "aside")):
            chosen = [clause.text for clause in self.clauses if clause.role in roles]
            if chosen:
                return " ".join(chosen)
        return self.text

    @property
    def head(self) -> str:
        """The first `HEAD_WORDS` words of each request clause, after "can you", "I need to" and the like: the verb
        and what it acts on, before the details (the request when no clause reads as one)."""
        heads = [
            " ".join(_LEAD.sub("", clause.text).split()[:HEAD_WORDS])
            for clause in self.clauses
            if clause.role == "request"
        ]
        return " ".join(head for head in heads if head) or self.request

    @property
    def context(self) -> str:
        """Every clause, the material as its kind."""
        return " ".join(clause.text for clause in self.clauses) or self.text

    @property
    def mood(self) -> Mood | None:
        """What the first request clause asks for: "change" when it opens with a verb of change ("save ...", "can
        you delete ..."), "ask" when it is a question ("what did we decide ...?", "is the model up"), else None."""
        first = next((clause.text for clause in self.clauses if clause.role == "request"), None)
        if first is None:
            return None
        words = [word.lower() for word in _WORD.findall(_LEAD.sub("", first))]
        if words and words[0] in CHANGE_VERBS:
            return "change"
        if (words and words[0] in ASKING_WORDS) or first.rstrip().endswith("?"):
            return "ask"
        return None


@lru_cache(maxsize=64)
def read_need(text: str) -> Need:
    """The need's clauses, each with its role, and its material (see the module's docstring). Kept for the last 64
    needs: a search reads its need twice (its texts to embed, its mood to rank), ~0.7 ms each for a long one."""
    material: list[tuple[str, str]] = []
    rest = _without_spans(_without_blocks(text, material), material)
    clauses: list[Clause] = []
    for sentence in _SENTENCE_BREAK.split(rest):
        clauses += _sentence_clauses(sentence, material)
    return Need(text, tuple(clause for clause in clauses if _WORD.search(clause.text)), tuple(material))


def _without_blocks(text: str, material: list[tuple[str, str]]) -> str:
    """Fenced code out; in a need of several lines, the lines that read as code, data or errors out."""

    def fenced(match: re.Match[str]) -> str:
        material.append(("code", match.group()))
        return "\ncode\n"

    text = _FENCE.sub(fenced, text)
    lines = text.split("\n")
    if len(lines) < 2:
        return text
    kept: list[str] = []
    pasted: list[str] = []
    introduced = False  # after a request ending in a colon ("... with this content:"), every line is material
    for line in lines:
        if not introduced and _reads_as_prose(line):
            introduced = line.rstrip().endswith(":") and _role(line.rstrip()[:-1]) == "request"
            if pasted:
                kept.append(_kind_of_lines(pasted, material))
                pasted = []
            kept.append(line)
        elif line.strip():
            pasted.append(line)
    if pasted:
        kept.append(_kind_of_lines(pasted, material))
    return "\n".join(kept)


def _reads_as_prose(line: str) -> bool:
    words = _WORD.findall(line)
    if line.strip() in ("code", "to", "with", "into", "by", "as") or not words:
        return bool(words)  # a lone connective between two pasted blocks ("change <code> to <code>") stays
    if _CODE_LINE.search(line) or len(words) < 3:
        return False
    return sum(len(word) for word in words) >= 0.6 * len(line.strip())


def _kind_of_lines(lines: list[str], material: list[tuple[str, str]]) -> str:
    block = "\n".join(lines)
    kind = "error message" if _ERROR_PHRASE.search(block) or re.search(r"(?im)^\s*(?:error|fatal)", block) else "code"
    material.append((kind, block))
    return kind


def _without_spans(text: str, material: list[tuple[str, str]]) -> str:
    """Each span of material replaced by its kind (in this order: a URL before a path, a quote before a file)."""

    def replace(pattern: re.Pattern[str], kind_of: str | None) -> None:
        nonlocal text

        def sub(match: re.Match[str]) -> str:
            span = match.group()
            if kind_of == "expression" and not re.search(r"[\d^=]", span):
                return span  # words between slashes or dashes ("yes / no"), not arithmetic
            kind = kind_of or _kind_of_span(span)
            material.append((kind, span))
            return f" {kind} "

        text = pattern.sub(sub, text)

    replace(_URL, "web page")
    replace(_BACKTICK, None)
    replace(_JSON, "data")
    replace(_QUOTED, None)
    replace(_ERROR_PHRASE, "error message")
    text = re.sub(r"(?<=\w)\.(?=\s|$)", " .", text)  # a sentence's full stop is not an extension
    text = re.sub(r"(?<![\w/.])(\w{1,2})/(\w+)(?![\w/]|\.\w)|(?<![\w/.])(\w+)/(\w{1,2})(?![\w/]|\.\w)", _ratio, text)
    replace(_PATH, None)
    replace(_FILE_NAME, "file")
    text = _PREFIXED_ID.sub(lambda match: f" {match.group(1).lower()} ", text)
    replace(_EXPRESSION, "expression")
    text = _IDENTIFIER.sub(" ", text)
    return re.sub(r"[ \t]+", " ", text)


def _ratio(match: re.Match[str]) -> str:
    """A unit or ratio written with a slash (km/h, m/s, I/O): its parts, not a path."""
    return " per ".join(part for part in match.groups() if part)


def _kind_of_span(span: str) -> str:
    inner = span.strip("`'\"“”‘’")
    if _ERROR_PHRASE.search(inner):
        return "error message"
    if " " not in inner and ("/" in inner.rstrip("/") or inner.startswith(("/", "~", "."))):
        return "folder" if inner.endswith("/") or not _FILE_NAME.search(inner.rsplit("/", 1)[-1]) else "file"
    return "code" if span.startswith("`") else "text"


def _sentence_clauses(sentence: str, material: list[tuple[str, str]]) -> list[Clause]:
    """One sentence's clauses; a request ending in a colon makes what follows it text."""
    head, colon, tail = sentence.partition(":")
    if colon and tail.strip():
        if _role(head) == "request" and _role(tail) != "request":
            material.append(("text", tail.strip()))
            return _clauses(f"{head} text")
        return [*_clauses(head), *_sentence_clauses(tail, material)]
    return _clauses(sentence)


def _clauses(sentence: str) -> list[Clause]:
    """A sentence cut into clauses: parentheses make asides; the rest is cut where a clause starts. A clause opening
    with a question word is a request at the start of a sentence or in a question, else an aside ("..., which can't
    be undone"); what one is to tell ("tell me | what happens when...") is context."""
    clauses: list[Clause] = []
    question = sentence.rstrip(" )").endswith("?")
    depth = 0
    for piece in re.split(r"([()])", sentence):
        if piece in "()":
            depth = max(0, depth + (1 if piece == "(" else -1))
            continue
        for part in _CLAUSE_START.split(piece):
            text = " ".join(part.strip(" ,").split())
            if not text:
                continue
            told = bool(clauses) and re.search(r"\b(?:tell me|let me know|explain)$", clauses[-1].text) is not None
            role = "aside" if depth > 0 else "context" if told else _role(text, initial=not clauses or question)
            main = [index for index, clause in enumerate(clauses) if clause.role != "aside"]
            if role == "context" and not told and main:  # the rest of a clause, after a comma or parentheses
                clauses[main[-1]] = Clause(f"{clauses[main[-1]].text} {text}", clauses[main[-1]].role)
            else:
                clauses.append(Clause(text, role))
    return clauses


def _role(clause: str, initial: bool = True) -> str:
    words = [word.lower() for word in _WORD.findall(clause)]
    if words and not initial and words[0] in SUBORDINATORS:
        return "aside"  # "..., so it starts clean", "... because it failed"
    while words and words[0] in LEADING_FILLERS:
        words = words[1:]
    if not words:
        return "aside"
    first = words[0]
    if first in SUBORDINATORS or ASIDE_OPENINGS.match(" ".join(words)):
        return "aside"
    if REQUEST_MARKERS.search(clause) or first in IMPERATIVE_VERBS:
        return "request"
    if first in QUESTION_WORDS:
        return "request" if initial else "aside"
    if clause.rstrip().endswith("?"):
        return "request"
    return "context"
