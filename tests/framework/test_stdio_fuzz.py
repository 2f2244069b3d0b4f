# ruff: noqa: UP031  (raw JSON-RPC text is built with %-templates: braces stay literal)
"""Fuzzing the real stdio server: every request gets exactly one reply, nothing else gets one, nothing crashes.

2,000 seeded lines of ten kinds go to `mcp-sections serve todo` in one burst; stdin is then closed and every
reply collected. Requests with a valid id must be answered once with that id; lines that try to be a request
but carry an invalid id (true, {}, [], 1.5, null, 1e400, an integer past 64 bits, a lone surrogate) or are not
JSON-RPC at all get one error with `id: null`; responses and notifications from the client get nothing.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

BIN = Path(sys.executable).parent / "mcp-sections"
BAD_IDS = ["true", "false", "{}", "[]", "1.5", "null", "1e400", "-2.0", str(2**70), '{"a":1}']


def _fuzz_lines(seed: int, count: int) -> tuple[list[str], dict[str, set[object]]]:
    rng = random.Random(seed)
    expected: dict[str, set[object]] = {"answered": set(), "null": set(), "either": set()}
    lines: list[str] = []
    for index in range(count):
        kind = rng.choice("ABCDEFGHIJ")
        if kind == "A":  # a valid request
            lines.append(json.dumps({"jsonrpc": "2.0", "id": index, "method": "ping"}))
            expected["answered"].add(index)
        elif kind == "B":  # an unknown method, string id
            lines.append(json.dumps({"jsonrpc": "2.0", "id": f"s{index}", "method": f"no/such/{index}"}))
            expected["answered"].add(f"s{index}")
        elif kind == "C":  # a request with an invalid id
            lines.append(f'{{"jsonrpc":"2.0","id":{rng.choice(BAD_IDS)},"method":"ping"}}')
            expected["null"].add(index)
        elif kind == "D":  # a response object from the client, valid or not: never answered
            result = rng.choice(["null", "{}", "[]", '"x"'])
            lines.append('{"jsonrpc":"2.0","id":%d,"result":%s}' % (index, result))
        elif kind == "E":  # a notification: never answered
            lines.append(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized", "params": {}}))
        elif kind == "F":  # not JSON
            lines.append(rng.choice(["{", "nope", '{"jsonrpc":', "\x00\x01", "{'a': 1}"]))
            expected["null"].add(index)
        elif kind == "G":  # JSON, but not one object
            lines.append(rng.choice(["[]", "[1,2]", "3", '"text"', "null"]))
            expected["null"].add(index)
        elif kind == "H":  # a lone surrogate inside the arguments of a valid request
            lines.append(
                '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"todo_list",'
                '"arguments":{"workflow_id":"\\ud800"}}}' % index
            )
            expected["answered"].add(index)
        elif kind == "I":  # a lone surrogate as the id
            lines.append('{"jsonrpc":"2.0","id":"\\udc00%d","method":"ping"}' % index)
            expected["null"].add(index)
        else:  # J: nested ~1,500 levels deep
            depth = 1500
            lines.append(
                '{"jsonrpc":"2.0","id":%d,"method":"ping","params":{"a":%s%s}}' % (index, "[" * depth, "]" * depth)
            )
            expected["either"].add(index)
    return lines, expected


def test_every_request_gets_exactly_one_reply(tmp_path: Path) -> None:
    lines, expected = _fuzz_lines(seed=20261123, count=2000)
    result = subprocess.run(
        [str(BIN), "serve", "todo", "--data-dir", str(tmp_path)],
        input=("\n".join(lines) + "\n").encode(),
        capture_output=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")[-3000:]
    assert b"Traceback" not in result.stderr, result.stderr.decode(errors="replace")[-3000:]
    replies = [json.loads(line) for line in result.stdout.decode().splitlines() if line.strip()]
    ids = Counter(reply.get("id") for reply in replies)
    nulls = ids.pop(None, 0)
    duplicated = {key: times for key, times in ids.items() if times > 1}
    assert not duplicated, f"answered more than once: {duplicated}"
    either_answered = expected["either"] & set(ids)
    assert set(ids) == expected["answered"] | either_answered, "a reply to something that is not a request"
    assert nulls == len(expected["null"]) + len(expected["either"] - either_answered)


def test_a_response_object_from_the_client_gets_no_reply(tmp_path: Path) -> None:
    lines = ['{"jsonrpc":"2.0","id":1,"result":null}', '{"jsonrpc":"2.0","id":2,"error":{"code":1}}', "{}"]
    lines.append('{"jsonrpc":"2.0","id":3,"method":"ping"}')
    result = subprocess.run(
        [str(BIN), "serve", "todo", "--data-dir", str(tmp_path)],
        input=("\n".join(lines) + "\n").encode(),
        capture_output=True,
        timeout=60,
    )
    replies = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert [reply["id"] for reply in replies] == [None, 3]  # `{}` is an invalid request; 1 and 2 are responses


def test_serving_with_stdin_on_dev_null_exits_cleanly(tmp_path: Path) -> None:
    with open("/dev/null", "rb") as devnull:
        result = subprocess.run(
            [str(BIN), "serve", "todo", "--data-dir", str(tmp_path)], stdin=devnull, capture_output=True, timeout=30
        )
    assert result.returncode == 0 and result.stdout == b""
    assert b"Traceback" not in result.stderr and b"ERROR" not in result.stderr
