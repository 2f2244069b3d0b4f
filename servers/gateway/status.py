"""The gateway's status page: `/status` on its Streamable HTTP server, behind the same bearer token as `/mcp`.

What it shows: the calls waiting for the person's approval, first (with approval on and a client that cannot ask
its user: `shared.serving.approval`), each with its question id, everything it would run, the client that asked and
the time left, and two buttons — the one thing on the page that changes anything; then, read-only, the sections with
their state, tool count (as the tool filters leave it) and uptime; the newest calls of the audit log (time, user,
tool, section, depth, duration, outcome: never arguments; the approval answers too), every user's to every signed-in
user (the gateway knows no operator apart from its users: run separate gateways for people who must not see each
other's); the sub-agents running and finished, as a tree; the brain's projects with node counts and pending
embeddings, read from its SQLite file read-only without starting rag_ops (`shared.brain.summary`).

An answer is a POST to `/status/questions/<id>` carrying the page's CSRF token (an HMAC of the sign-in session, so
another site can neither read nor forge it; the session cookie is SameSite=Strict and Origin is checked as well); it
is audited with who gave it (the user, the sign-in session by a short digest, and the address it came from). A
question nobody answers within the gateway's approval timeout is declined and leaves the page.

Access: a request carries `Authorization: Bearer <token>`, or a session cookie a browser gets from the sign-in
form (POST `/status/sign-in` with the token: an HttpOnly, SameSite=Strict cookie, path `/status`, 12 hours, signed
with the secret a team's replicas share, so that any replica takes it and a sign-out holds on all:
`status_sessions.py`). The token is what `/mcp` takes (`shared.serving.http_auth`): the gateway's single bearer
token, or on a team's gateway (`[gateway.auth]`) an access token of its authorization server — then the page knows
the user, the session ends when the token expires, and each user sees and answers only the questions of their own
calls. A gateway serving without a token (loopback only) serves the page without sign-in, as it serves `/mcp`. Host
and Origin are checked as for `/mcp` (DNS-rebinding protection). The address the approval messages give
(`page_address`): the public one when the gateway knows it.

The page is server-rendered HTML with its own stylesheet and script (no external asset), under a strict
Content-Security-Policy; the script refreshes the live part (`/status/live`, a fragment) every few seconds, and
only while the page is visible, refresh is on and the keyboard focus is not inside it.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from importlib import resources
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

import anyio.to_thread
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route, Router

from mcp_sections.shared.brain.summary import BrainSummary, brain_summary
from mcp_sections.shared.framework.clients import User
from mcp_sections.shared.ground.about import package_version
from mcp_sections.shared.ground.hosts import url_host
from mcp_sections.shared.serving.audit import recent_records
from mcp_sections.shared.serving.http_auth import BearerToken, HttpGuard, bearer_credential
from mcp_sections.shared.serving.question_board import PendingQuestion
from mcp_sections.shared.serving.replica_secret import ReplicaSecret, process_secret
from mcp_sections.shared.serving.server import ExplainedTransportSecurity

from .status_sessions import SESSION_SECONDS, Sessions, signed_out_here_or_shared

if TYPE_CHECKING:
    from mcp_sections.shared.agents.runtime import AgentRuntime

    from .core import Gateway

PREFIX = "/status"
COOKIE = "mcp_sections_status"
MAX_FORM_BYTES = 20_000  # an access token of an authorization server may be a few KiB
RECENT_CALLS = 40
BRAIN_REFRESH_SECONDS = 10.0
REFRESH_SECONDS = 5

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",  # no-referrer would make a browser send `Origin: null` on sign-in
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
    "Cache-Control": "no-store",
}


def page_address(gateway: Gateway, host: str, port: int, origins: list[str]) -> str:
    """Where a person opens the page, as the approval messages say it: beside `[gateway.auth] resource` (the gateway
    as clients reach it), else at the first origin allowed beyond the bound address (`--allowed-origin`: the load
    balancer's or public address people sign in through), else at the bound address (`localhost` when bound to all)."""
    resource = gateway.config.auth.resource
    if resource:
        return resource.rstrip("/").removesuffix("/mcp") + PREFIX
    public = [origin.rstrip("/") for origin in origins if origin.startswith(("http://", "https://"))]
    public = [origin for origin in public if not origin.endswith(":*")]
    if public:
        return public[0] + PREFIX
    shown = "localhost" if host in ("0.0.0.0", "::") else host  # bound to all: the local address
    return f"http://{url_host(shown)}:{port}{PREFIX}"


@dataclass(frozen=True)
class Visitor:
    """Who makes a request to the page: what its CSRF token is made of, and the user (None: an open page)."""

    key: str
    user: User | None = None

    @property
    def viewer(self) -> str | None:
        """The OAuth user whose questions alone it sees and answers (None: it sees every question)."""
        return self.user.id if self.user is not None and self.user.authenticated else None


class StatusPage:
    """The ASGI app of `/status` and its paths (see the module docstring)."""

    def __init__(
        self,
        gateway: Gateway,
        guard: HttpGuard | None,
        security: TransportSecuritySettings,
        secret: ReplicaSecret | None = None,
    ) -> None:
        """`guard`: what `/mcp` takes (None: no sign-in, loopback only); `secret`: what signs the sessions and CSRF
        tokens (the replicas' shared one, `shared.serving.replica_secret`; None: one of this process)."""
        self.gateway = gateway
        self._guard = guard
        self.oauth = guard is not None and not isinstance(guard, BearerToken)  # signs users in with access tokens
        self._security = ExplainedTransportSecurity(security)
        self._sessions = Sessions(secret or process_secret(), signed_out_here_or_shared())
        self._brain: tuple[float, BrainSummary] | None = None
        self._router = Router(
            routes=[
                Route(PREFIX, self.page, methods=["GET"]),
                Route(f"{PREFIX}/questions/{{question}}", self.answer, methods=["POST"]),
                Route(f"{PREFIX}/live", self.live, methods=["GET"]),
                Route(f"{PREFIX}/sign-in", self.sign_in, methods=["POST"]),
                Route(f"{PREFIX}/sign-out", self.sign_out, methods=["POST"]),
                Route(f"{PREFIX}/status.css", self.asset, methods=["GET"]),
                Route(f"{PREFIX}/status.js", self.asset, methods=["GET"]),
            ]
        )

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        request = Request(scope, receive)
        refused = await self._security.validate_request(request, is_post=False)
        if refused is not None:
            await refused(scope, receive, send)
            return
        await self._router(scope, receive, send)

    # -- access ---------------------------------------------------------------------------------------------

    async def _visitor(self, request: Request) -> Visitor | None:
        """Who makes this request (the bearer header, the session cookie, or an open page), or None: not signed in."""
        if self._guard is None:
            return Visitor("open")
        credential = bearer_credential(request.headers.get("authorization", ""))
        if credential is not None:
            identified = await self._guard.identify(credential)
            if identified is not None:
                return Visitor(f"bearer:{identified.user.id}", identified.user)
        session = await self._sessions.session(request.cookies.get(COOKIE))
        if session is None or not self._guard.vouches_for(session.user):
            return None
        return Visitor(f"session:{session.id}", session.user)

    def _csrf(self, visitor: Visitor) -> str:
        return self._sessions.csrf(visitor.key)

    @staticmethod
    def _who(visitor: Visitor, request: Request) -> str:
        """Who answered, for the audit: the user, the sign-in session by a digest (never the session itself), and
        from where."""
        place = request.client.host if request.client is not None else "an unknown address"
        user = visitor.user if visitor.user is not None and visitor.user.authenticated else None
        if visitor.key.startswith("session:"):
            digest = hashlib.sha256(visitor.key.encode()).hexdigest()[:12]
            person = user.name if user is not None else "the person"
            return f"{person} signed in with session {digest} from {place}"
        if user is not None:
            return f"{user.name} with an access token from {place}"
        if visitor.user is not None:
            return f"a request with the gateway's bearer token from {place}"
        return f"an open page (no token: loopback only) from {place}"

    async def sign_in(self, request: Request) -> Response:
        if self._guard is None:
            return RedirectResponse(PREFIX, status_code=303)
        form = await _form(request)
        if form is None:
            return _html(sign_in_page("The form is too large.", self.oauth), 413)
        identified = await self._guard.identify(form.get("token", "").strip())
        if identified is None:
            wrong = "a valid access token of the team's authorization server" if self.oauth else "the gateway's token"
            return _html(sign_in_page(f"That is not {wrong}.", self.oauth), 401)
        response = RedirectResponse(PREFIX, status_code=303)
        cookie, session = self._sessions.new(identified)
        response.set_cookie(
            COOKIE,
            cookie,
            max_age=max(1, min(SESSION_SECONDS, int(session.until - time.time()))),
            path=PREFIX,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        _secure(response)
        return response

    async def answer(self, request: Request) -> Response:
        """A signed-in person approves or declines one waiting call (CSRF-checked; audited by approval); on a team's
        gateway, only a call of their own."""
        visitor = await self._visitor(request)
        if visitor is None:
            return _secure(Response("sign in first", status_code=401, media_type="text/plain"))
        form = await _form(request)
        if form is None:
            return _secure(Response("the form is too large", status_code=413, media_type="text/plain"))
        if not self._sessions.csrf_ok(visitor.key, form.get("csrf", "")):
            return _secure(Response("the form's CSRF token is wrong: reload the page", 403, media_type="text/plain"))
        choice = form.get("answer")
        if choice not in ("approve", "decline"):
            return _secure(Response("answer approve or decline", status_code=400, media_type="text/plain"))
        question = request.path_params["question"]
        answered = self.gateway.questions.answer(
            question, choice == "approve", self._who(visitor, request), visitor.viewer
        )
        if answered is None:
            gone = "That question is no longer waiting: it was answered, or its time ran out (then it was declined)."
            return _html(full_page(await self.live_html(visitor), signed_in=self._guard is not None, note=gone), 409)
        return _secure(RedirectResponse(PREFIX, status_code=303))

    async def sign_out(self, request: Request) -> Response:
        await self._sessions.end(request.cookies.get(COOKIE))
        response = RedirectResponse(PREFIX, status_code=303)
        response.delete_cookie(COOKIE, path=PREFIX, httponly=True, samesite="strict")
        return _secure(response)

    # -- pages ----------------------------------------------------------------------------------------------

    async def page(self, request: Request) -> Response:
        visitor = await self._visitor(request)
        if visitor is None:
            return _html(sign_in_page(None, self.oauth), 401)
        return _html(full_page(await self.live_html(visitor), signed_in=self._guard is not None))

    async def live(self, request: Request) -> Response:
        visitor = await self._visitor(request)
        if visitor is None:
            return _secure(Response("sign in first", status_code=401, media_type="text/plain"))
        return _html(await self.live_html(visitor))

    async def asset(self, request: Request) -> Response:
        name = request.url.path.rsplit("/", 1)[1]
        media = "text/css" if name.endswith(".css") else "text/javascript"
        text = resources.files("mcp_sections.servers.gateway").joinpath("static", name).read_text(encoding="utf-8")
        response = Response(text, media_type=media)
        _secure(response)
        response.headers["Cache-Control"] = "no-cache"
        return response

    # -- what is shown --------------------------------------------------------------------------------------

    async def live_html(self, visitor: Visitor) -> str:
        gateway = self.gateway
        await gateway.pool.load_declarations()
        data_dir = gateway.settings.data_dir
        calls = await anyio.to_thread.run_sync(recent_records, data_dir / "audit", RECENT_CALLS)
        now = time.monotonic()
        if self._brain is None or now - self._brain[0] > BRAIN_REFRESH_SECONDS:
            self._brain = (now, await anyio.to_thread.run_sync(brain_summary, data_dir))
        questions = gateway.questions
        asking = questions.is_open and gateway.settings.approval != "off"
        waiting = questions_html(questions.pending(visitor.viewer), self._csrf(visitor)) if asking else ""
        return "\n".join(
            [
                waiting,
                self.overview_html(now),
                self.sections_html(now),
                agents_html(gateway.agent_runtimes),
                calls_html(calls),
                brain_html(self._brain[1]),
            ]
        )

    def overview_html(self, now: float) -> str:
        gateway = self.gateway
        slots = gateway.agents.slots
        filters = gateway.pool.filters.describe()
        items = [
            ("Up for", _duration(now - gateway.started)),
            ("Version", package_version()),
            ("Sub-agents running", f"{slots.live} of {slots.size}"),
            ("Deepest sub-agent reached", deepest_reached(gateway.agent_runtimes)),
            ("Sub-agent depth limit", str(gateway.config.max_depth)),
            ("Tool filters", filters),
            ("Updated", datetime.now(UTC).strftime("%H:%M:%S UTC")),
        ]
        rows = "".join(f"<div><dt>{escape(k)}</dt><dd>{escape(v)}</dd></div>" for k, v in items)
        heading = '<h2 id="overview-h">Gateway</h2>'
        return f'<section aria-labelledby="overview-h">{heading}<dl class="facts">{rows}</dl></section>'

    def sections_html(self, now: float) -> str:
        gateway = self.gateway
        rows = []
        for entry in gateway.catalog.values():
            info = gateway.section_info(entry)
            since = gateway.pool.running_since(entry.id)
            uptime = _duration(now - since) if since is not None and info.state == "running" else "—"
            tools = str(info.tool_count) if info.tools_known else "?"
            state = f'<span class="state {escape(info.state)}">{escape(info.state.replace("_", " "))}</span>'
            detail = f'<div class="note">{escape(info.error[:200])}</div>' if info.error else ""
            rows.append(
                f"<tr><th scope=row>{escape(info.id)}<div class=note>{escape(info.name)}</div></th>"
                f"<td>{state}{detail}</td><td class=num>{tools}</td><td>{uptime}</td>"
                f"<td>{escape(info.kind)}{' · exposed' if info.exposed else ''}</td></tr>"
            )
        return _table(
            "sections",
            "Sections",
            ["Section", "State", "Tools", "Up for", "Kind"],
            rows,
            "No section is configured.",
        )


def questions_html(pending: list[PendingQuestion], csrf: str) -> str:
    """The calls waiting for the person's approval, each with what it would run and two buttons."""
    heading = '<h2 id="questions-h">Waiting for your approval</h2>'
    if not pending:
        empty = '<p class="empty">No call is waiting for your approval.</p>'
        return f'<section aria-labelledby="questions-h">{heading}{empty}</section>'
    items = []
    for question in pending:
        action = f"{PREFIX}/questions/{escape(question.id)}"
        asked = datetime.fromtimestamp(question.asked_wall, UTC).strftime("%H:%M:%S UTC")
        gone = question.withdrawn_in
        state = (
            f" · <strong class=disconnected>the client that asked is disconnected</strong>: withdrawn in {gone:.0f} s "
            "unless it reconnects"
            if gone is not None
            else ""
        )
        items.append(
            f'<li class="question" data-question="{escape(question.id)}">'
            f"<p class=note>Question {escape(question.id)} · {escape(question.asker)} asked at {asked} · declined in "
            f"{question.seconds_left:.0f} s unless you answer{state}</p>"
            f"<p class=message>{escape(question.message)}</p>"
            f'<form method=post action="{action}"><input type=hidden name=csrf value="{csrf}">'
            "<button type=submit name=answer value=approve class=approve>Approve</button> "
            "<button type=submit name=answer value=decline class=decline>Decline</button></form></li>"
        )
    return f'<section aria-labelledby="questions-h" class="questions">{heading}<ul>{"".join(items)}</ul></section>'


def deepest_reached(runtimes: dict[str, AgentRuntime]) -> str:
    """The depth of the deepest sub-agent started since the gateway began: "none yet" when none ran."""
    deepest = max((runtime.deepest for runtime in runtimes.values()), default=0)
    return f"depth {deepest}" if deepest else "none yet"


def agents_html(runtimes: dict[str, AgentRuntime]) -> str:
    """Every runtime's sub-agents, running then finished, as trees (children under the agent that started them)."""
    parts = []
    total = 0
    for label, runtime in runtimes.items():
        nodes: list[dict[str, Any]] = []
        for agent in runtime.live.values():
            nodes.append(
                {
                    "id": agent.id,
                    "parent": agent.parent,
                    "text": f"{agent.name} · {agent.kind} · depth {agent.depth}",
                    "state": "running",
                    "detail": f"started {agent.started_at[11:19]}",
                }
            )
        for done in runtime.finished:
            nodes.append(
                {
                    "id": done.id,
                    "parent": done.parent,
                    "text": f"{done.name} · {done.kind} · depth {done.depth}",
                    "state": done.status,
                    "detail": f"{done.tool_calls} tool calls · {done.duration_ms / 1000:.1f} s · "
                    f"ended {done.ended_at[11:19]}",
                }
            )
        total += len(nodes)
        if nodes:
            parts.append(f'<h3>{escape(label)}</h3><ul class="tree">{_tree(nodes, None)}</ul>')
    body = "".join(parts) if total else '<p class="empty">No sub-agent has run since the gateway started.</p>'
    return f'<section aria-labelledby="agents-h"><h2 id="agents-h">Sub-agents</h2>{body}</section>'


def _tree(nodes: list[dict[str, Any]], parent: str | None, depth: int = 0) -> str:
    ids = {node["id"] for node in nodes}
    children = [
        node
        for node in nodes
        if node["parent"] == parent or (parent is None and node["parent"] is not None and node["parent"] not in ids)
    ]
    if depth > 12:
        return ""
    items = []
    for node in sorted(children, key=lambda node: (len(node["id"]), node["id"])):  # agent-2 before agent-10
        below = _tree(nodes, node["id"], depth + 1)
        items.append(
            f"<li><span class=agent>{escape(node['id'])}</span> {escape(node['text'])} "
            f'<span class="state {escape(node["state"])}">{escape(node["state"])}</span> '
            f"<span class=note>{escape(node['detail'])}</span>" + (f"<ul>{below}</ul>" if below else "") + "</li>"
        )
    return "".join(items)


def calls_html(records: list[dict[str, Any]]) -> str:
    rows = []
    for record in records:
        outcome = str(record.get("outcome", ""))
        kind = "ok" if outcome == "OK" else ("running" if outcome == "UNFINISHED" else "failed")
        agent = record.get("agent_id")
        duration = record.get("duration_ms")
        shown = f"{float(duration):.1f} ms" if isinstance(duration, int | float) and outcome != "UNFINISHED" else "—"
        user = record.get("user") or "—"  # none: a local caller (stdio, loopback without a token)
        rows.append(
            f"<tr><td>{escape(str(record.get('time', ''))[11:23])}</td><td>{escape(str(user)[:200])}</td>"
            f"<td>{escape(str(record.get('tool', '')))}</td>"
            f"<td>{escape(str(record.get('server', '')))}</td>"
            f"<td class=num>{escape(str(record.get('depth', 0)))}{' · ' + escape(str(agent)) if agent else ''}</td>"
            f"<td class=num>{shown}</td><td><span class='state {kind}'>{escape(outcome)}</span></td></tr>"
        )
    return _table(
        "calls",
        "Recent calls",
        ["Time (UTC)", "User", "Tool", "Logged by", "Depth · agent", "Duration", "Outcome"],
        rows,
        "No call yet: the audit log is empty.",
    )


def brain_html(summary: BrainSummary) -> str:
    rows = []
    for project in summary.projects:
        ingested = (
            datetime.fromtimestamp(project.last_ingest, UTC).strftime("%Y-%m-%d %H:%M") if project.last_ingest else "—"
        )
        rows.append(
            f"<tr><th scope=row>{escape(project.name)}<div class=note>{escape(project.id)}</div></th>"
            f"<td>{escape(project.type)}</td><td class=num>{project.nodes}</td>"
            f"<td class=num>{project.pending_embeddings}</td><td>{escape(project.status)}</td><td>{ingested}</td></tr>"
        )
    return _table(
        "brain",
        "Brain projects",
        ["Project", "Type", "Nodes", "Pending embeddings", "Status", "Last ingest (UTC)"],
        rows,
        summary.note or "The brain has no project yet.",
    )


def _table(key: str, title: str, headers: list[str], rows: list[str], empty: str) -> str:
    heading = f'<h2 id="{key}-h">{escape(title)}</h2>'
    if not rows:
        return f'<section aria-labelledby="{key}-h">{heading}<p class="empty">{escape(empty)}</p></section>'
    head = "".join(f"<th scope=col>{escape(h)}</th>" for h in headers)
    return (
        f'<section aria-labelledby="{key}-h">{heading}'
        f'<div class="scroll" tabindex="0" role="region" aria-labelledby="{key}-h">'
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div></section>"
    )


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    if seconds < 86400:
        return f"{seconds // 3600} h {seconds % 3600 // 60} min"
    return f"{seconds // 86400} d {seconds % 86400 // 3600} h"


def _document(title: str, body: str) -> str:
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f'<title>{escape(title)}</title><link rel=stylesheet href="{PREFIX}/status.css">'
        f'<script src="{PREFIX}/status.js" defer></script></head><body>{body}</body></html>'
    )


def full_page(live: str, *, signed_in: bool, note: str | None = None) -> str:
    sign_out = (
        f'<form method=post action="{PREFIX}/sign-out"><button type=submit>Sign out</button></form>'
        if signed_in
        else ""
    )
    header = (
        '<header><h1>mcp-sections gateway</h1><div class="controls">'
        f'<label><input type=checkbox id=refresh checked data-seconds="{REFRESH_SECONDS}"> '
        f"Refresh every {REFRESH_SECONDS} s</label>{sign_out}</div></header>"
    )
    alert = f'<p class="error" role="alert">{escape(note)}</p>' if note else ""
    return _document("mcp-sections status", f'{header}{alert}<main id="live">{live}</main>')


def sign_in_page(error: str | None, oauth: bool = False) -> str:
    alert = f'<p class="error" role="alert">{escape(error)}</p>' if error else ""
    which = (
        "an access token of the team's authorization server (the bearer token your MCP client sends)"
        if oauth
        else "the gateway's bearer token (the content of its <code>--auth-token-file</code>)"
    )
    form = (
        '<main class="sign-in"><h1>mcp-sections gateway</h1>'
        f"<p>Sign in with {which}.</p>"
        f'{alert}<form method=post action="{PREFIX}/sign-in">'
        "<label for=token>Token</label><input id=token name=token type=password autocomplete=current-password "
        f"required autofocus maxlength={16384 if oauth else 512}><button type=submit>Sign in</button></form></main>"
    )
    return _document("Sign in · mcp-sections", form)


async def _form(request: Request) -> dict[str, str] | None:
    """A small url-encoded form's fields (None when it is larger than `MAX_FORM_BYTES`)."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return None
    return {key: values[0] for key, values in parse_qs(body.decode("utf-8", "replace")).items() if values}


def _secure(response: Response) -> Response:
    for name, value in SECURITY_HEADERS.items():
        response.headers[name] = value
    return response


def _html(text: str, status: int = 200) -> Response:
    response = Response(text, status_code=status, media_type="text/html")
    if status == 401:
        response.headers["WWW-Authenticate"] = 'Bearer realm="mcp-sections"'
    return _secure(response)
