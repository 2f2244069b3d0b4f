"""`mcp-sections`: serve a section or the gateway, list the sections, print tool definitions, check the machine
(`doctor`), read the audit log. The composition root: the one place that knows every section."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import gc
import json
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from mcp_sections.servers.doctor import check_config
from mcp_sections.servers.registry import BUILTIN_SECTIONS, UnknownSection, all_sections, load_section
from mcp_sections.shared.ground.about import package_version
from mcp_sections.shared.serving import telemetry
from mcp_sections.shared.settings.config import ConfigError, Settings, load_settings

if TYPE_CHECKING:  # pragma: no cover
    from mcp.server.mcpserver import MCPServer


def _add_settings_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config", type=Path, help="TOML config file (default: MCP_SECTIONS_CONFIG or the user config dir)"
    )
    parser.add_argument("--data-dir", type=Path, help="where databases live (env MCP_SECTIONS_DATA_DIR)")
    parser.add_argument(
        "--root",
        action="append",
        type=Path,
        dest="roots",
        metavar="DIR",
        help="allowed root directory for file-touching tools; repeatable (env MCP_SECTIONS_ROOTS)",
    )
    parser.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"])


_Number = TypeVar("_Number", int, float)


def _bounded(text: str, kind: Callable[[str], _Number], high: _Number, noun: str, outside: str) -> _Number:
    """`kind(text)` between 1 and `high`, else an argparse error: `text` is not `noun`, or `outside` (formatted)."""
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {noun}") from None
    if not 1 <= value <= high:
        raise argparse.ArgumentTypeError(outside.format(value))
    return value


def _port(text: str) -> int:
    return _bounded(text, int, 65535, "a port number", "{} is not a port number (1-65535)")


def _port_or_any(text: str) -> int:
    return 0 if text.strip() == "0" else _port(text)


def _seconds(text: str) -> float:
    return _bounded(text, float, 86400.0, "a number of seconds", "{:g} is not between 1 and 86400 seconds")


def _add_transport_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=_port, default=8000, help="HTTP port (default %(default)s)")
    parser.add_argument(
        "--auth-token-file",
        type=Path,
        metavar="FILE",
        help="HTTP: require `Authorization: Bearer <token>` with the token in FILE (env MCP_SECTIONS_AUTH_TOKEN_FILE; "
        "required when binding beyond loopback)",
    )
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        dest="allowed_hosts",
        metavar="HOST[:PORT]",
        help="extra Host header accepted over HTTP (DNS-rebinding protection is always on)",
    )
    parser.add_argument(
        "--allowed-origin",
        action="append",
        default=[],
        dest="allowed_origins",
        metavar="ORIGIN",
        help="extra Origin header accepted over HTTP",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mcp-sections", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run one section as an MCP server")
    serve.add_argument("section", choices=sorted(BUILTIN_SECTIONS), help="section id")
    _add_settings_flags(serve)
    _add_transport_flags(serve)

    listing = commands.add_parser("list", help="list the sections and their tools")
    listing.add_argument("--json", action="store_true", help="machine-readable output")

    tools = commands.add_parser("tools", help="print a section's tools/list definitions as JSON")
    tools.add_argument("section", choices=sorted(BUILTIN_SECTIONS))

    doctor = commands.add_parser("doctor", help="check, per section, whether it can run here and what to install")
    doctor.add_argument("section", nargs="*", help="section ids (default: all)")
    _add_settings_flags(doctor)
    doctor.add_argument("--json", action="store_true", help="machine-readable output")

    audit = commands.add_parser("audit", help="show the audit log of tool calls (newest last)")
    _add_settings_flags(audit)
    audit.add_argument("--server", help="only this section (or `gateway`)")
    audit.add_argument("--tail", type=int, default=50, help="how many records (default 50; 0 for all)")
    audit.add_argument("--json", action="store_true", help="one JSON object per line")

    reembed = commands.add_parser(
        "reembed", help="give a section's store to the configured embedding model (vectors are made again)"
    )
    _add_settings_flags(reembed)
    reembed.add_argument("section", help="the section whose store to re-embed (one that keeps embeddings)")

    base = commands.add_parser(
        "trusted-base", help="what the suite runs and reads here, and how each part is kept from programs"
    )
    _add_settings_flags(base)
    base.add_argument("--json", action="store_true", help="machine-readable output")

    _add_install_commands(commands)

    gateway = commands.add_parser(
        "gateway", help="run the gateway: lists the sections, forwards calls to them, runs sub-agents"
    )
    _add_settings_flags(gateway)
    _add_transport_flags(gateway)
    gateway.add_argument(
        "--expose",
        action="append",
        metavar="SECTION[,SECTION...]",
        help="also list these sections' tools directly in the gateway's tools/list (env MCP_SECTIONS_GATEWAY_EXPOSE)",
    )
    gateway.add_argument(
        "--in-process",
        action="append",
        metavar="SECTION[,SECTION...]",
        help="run these light built-in sections inside the gateway instead of a subprocess (faster calls, no "
        "isolation; env MCP_SECTIONS_GATEWAY_IN_PROCESS)",
    )
    gateway.add_argument(
        "--max-depth", type=int, help="deepest sub-agent level, plan_actions is hidden there (default 3)"
    )
    gateway.add_argument("--max-subagents", type=int, help="sub-agents alive at once (default 3)")
    gateway.add_argument(
        "--profile",
        metavar="NAME",
        help="tool profile: `readonly` (only tools annotated read-only) or a [gateway.profiles.NAME] of the config "
        "(env MCP_SECTIONS_GATEWAY_PROFILE)",
    )
    _add_approval_flags(gateway)
    return parser


def _add_approval_flags(gateway: argparse.ArgumentParser) -> None:
    """Where the gateway's approval questions wait for a client that cannot ask (`shared.serving.approval`)."""
    gateway.add_argument(
        "--status-page",
        choices=["auto", "on", "off"],
        default="auto",
        help="over stdio, also serve the status page on loopback, where approval questions wait for a client that "
        "cannot ask its user (auto: when approval is on; its address and token go to <data dir>/status-pages/)",
    )
    gateway.add_argument(
        "--status-port", type=_port_or_any, default=0, help="over stdio, the status page's port (default: any free one)"
    )
    gateway.add_argument(
        "--approval-timeout",
        type=_seconds,
        help="seconds an approval question waits on the status page before it is declined (default 300)",
    )


#: The clients `install` knows (`servers.install.CLIENTS`, imported only when installing: not at every start).
INSTALLABLE = ("claude-code", "claude-desktop", "cursor", "vscode")


def _add_install_commands(commands: Any) -> None:
    install = commands.add_parser(
        "install",
        help="connect an MCP client to the gateway: write its config (merged, with a backup)",
        description="Add the gateway to an MCP client's user config: the stdio command of this installation, with "
        "the MCP_SECTIONS_* settings of this shell in the entry's env (secrets never; --no-env: none); or, with "
        "--url, a gateway already serving over HTTP.",
    )
    install.add_argument("client", choices=INSTALLABLE, help="the MCP client to connect")
    install.add_argument(
        "--root", action="append", type=Path, default=[], dest="roots", metavar="DIR", help="allowed root; repeatable"
    )
    install.add_argument("--data-dir", type=Path, help="the gateway's data directory (default: the usual one)")
    install.add_argument("--config", type=Path, help="the gateway's config file (default: the usual one)")
    install.add_argument(
        "--approval",
        choices=["destructive", "off"],
        help="ask the user before destructive calls (destructive) or never (off): MCP_SECTIONS_APPROVAL in the "
        "entry's env (default: this shell's MCP_SECTIONS_APPROVAL, else the config file's `approval`, else off)",
    )
    install.add_argument(
        "--no-env",
        action="store_true",
        help="do not carry this shell's MCP_SECTIONS_* settings into the entry's env (the gateway then runs on the "
        "config file and the flags given alone)",
    )
    install.add_argument(
        "--url",
        metavar="URL",
        help="instead of a command: a gateway already serving Streamable HTTP at URL (e.g. http://127.0.0.1:8000/mcp;"
        " not Claude Desktop, whose config takes stdio servers only)",
    )
    token = install.add_mutually_exclusive_group()
    token.add_argument(
        "--token-file",
        type=Path,
        metavar="FILE",
        help="with --url: write the gateway's bearer token, read from FILE, in the entry (the config file is then "
        "made 0600); default: a reference the client resolves (VS Code asks once; Claude Code and Cursor read "
        "MCP_SECTIONS_AUTH_TOKEN from their environment)",
    )
    token.add_argument(
        "--no-token", action="store_true", help="with --url: no Authorization header (a gateway without a token)"
    )
    uninstall = commands.add_parser("uninstall", help="remove the gateway from an MCP client's config")
    uninstall.add_argument("client", choices=INSTALLABLE, help="the MCP client to disconnect")
    for parser in (install, uninstall):
        parser.add_argument(
            "--name", default="mcp-sections", help="the server's name in the client (default mcp-sections)"
        )
        parser.add_argument("--dry-run", action="store_true", help="print what would change, write nothing")


def settings_from(args: argparse.Namespace) -> Settings:
    """The settings of the config layers and the flags; every `[sections.<id>]` table of the config file checked
    against its section's settings (`servers.doctor.check_config`: a typo is refused here, at start)."""
    settings = load_settings(
        config_file=args.config, data_dir=args.data_dir, roots=args.roots, log_level=args.log_level
    )
    for note in check_config(settings):
        logging.getLogger("mcp_sections.settings").warning("%s", note)
    return settings


def _settings_from(args: argparse.Namespace) -> Settings:
    """`settings_from`, with logging configured from them."""
    settings = settings_from(args)
    _configure_logging(settings.log_level)
    return settings


def _configure_logging(level: str) -> None:
    # stdout carries the protocol; every log line goes to stderr.
    logging.basicConfig(stream=sys.stderr, level=level, format="%(asctime)s %(name)s %(levelname)s %(message)s")


def server_built() -> None:
    """Everything start-up created stays alive: freeze it out of the collector's reach and resume collection (the
    entry point, `servers.startup`, paused it)."""
    gc.freeze()
    gc.enable()


def _run(server: MCPServer, settings: Settings, args: argparse.Namespace, gateway: Any = None) -> int:
    """Serve on the transport of the flags; over HTTP, the flags' extra hosts and origins add to the settings', and
    the gateway's status page is served at /status (behind the same token)."""
    from mcp_sections.shared.serving.http_auth import resolve_guard
    from mcp_sections.shared.serving.server import serve, transport_security

    guard = resolve_guard(args.auth_token_file, args.host, _oauth_guard(gateway)) if args.transport == "http" else None
    if args.transport == "http":
        from mcp_sections.shared.settings.endpoints import announce_listener

        announce_listener(args.host, args.port)  # the sections it starts inherit it: no program may publish this port
    hosts = [*settings.allowed_hosts, *args.allowed_hosts]
    origins = [*settings.allowed_origins, *args.allowed_origins]
    pages = beside = None
    if gateway is not None and args.transport == "http":
        from mcp_sections.servers.gateway.status import PREFIX, StatusPage, page_address
        from mcp_sections.shared.serving.replica_secret import replica_secret

        security = transport_security(args.host, args.port, hosts, origins)
        page = StatusPage(gateway, guard, security, replica_secret())  # signed sessions any replica takes
        pages = {PREFIX: page}
        sign_in = "sign in with your access token" if page.oauth else "sign in with the gateway's token"
        gateway.questions.open_at(page_address(gateway, args.host, args.port, origins), sign_in=sign_in)
    elif gateway is not None and _status_beside(args, settings):
        from functools import partial

        from mcp_sections.servers.gateway.status_beside import serve_status_beside

        beside = partial(serve_status_beside, gateway, args.status_port)
    server_built()
    serve(server, args.transport, args.host, args.port, hosts, origins, guard, pages, beside)
    return 0


def _oauth_guard(gateway: Any) -> Any:
    """The OAuth resource server of a gateway with `[gateway.auth]` (`shared.serving.oauth`), which answers a call its
    token's scopes do not allow with 403 (`servers/gateway/scope_challenge.py`; only with `[gateway.auth.scopes]`:
    without, no call is refused for its scopes, and requests are not read twice), else None."""
    server = gateway.config.auth.resource_server() if gateway is not None else None
    if server is None:
        return None
    from mcp_sections.servers.gateway.scope_challenge import CallScopes
    from mcp_sections.shared.serving.http_auth import ScopeChallenge
    from mcp_sections.shared.serving.oauth import OAuthGuard

    guard = OAuthGuard(server)
    if not gateway.pool.filters.scopes:
        return guard
    return ScopeChallenge(guard, CallScopes(gateway.pool), guard.metadata_url)


def _status_beside(args: argparse.Namespace, settings: Settings) -> bool:
    """Whether a stdio gateway also serves its status page (`--status-page`; auto: when approval is on)."""
    return args.status_page == "on" or (args.status_page == "auto" and settings.approval != "off")


def section_server(args: argparse.Namespace, settings: Settings) -> MCPServer:
    """The server `serve` runs for these arguments (also what the tests connect to in memory)."""
    from mcp_sections.shared.serving.server import build_server

    section = load_section(args.section)
    server, _ = build_server(section, section.runtime(settings))
    return server


def gateway_server(args: argparse.Namespace, settings: Settings) -> tuple[MCPServer, Any]:
    """The server and `Gateway` that `gateway` runs for these arguments (also what the tests connect to in memory)."""
    from mcp_sections.servers.gateway.server import build_gateway_server
    from mcp_sections.servers.pool.settings import load_gateway_settings

    expose = [part.strip() for value in args.expose or [] for part in value.split(",") if part.strip()]
    in_process = [part.strip() for value in args.in_process or [] for part in value.split(",") if part.strip()]
    config = load_gateway_settings(
        settings,
        expose=expose or None,
        in_process=in_process or None,
        max_depth=args.max_depth,
        max_subagents=args.max_subagents,
        profile=args.profile,
    )
    server, gateway = build_gateway_server(settings, config)
    if getattr(args, "approval_timeout", None):
        gateway.questions.timeout_seconds = args.approval_timeout
    return server, gateway


def _serve(args: argparse.Namespace) -> int:
    settings = _settings_from(args)
    telemetry.configure(args.section)
    return _run(section_server(args, settings), settings, args)


def _gateway(args: argparse.Namespace) -> int:
    settings = _settings_from(args)
    telemetry.configure("gateway")
    server, gateway = gateway_server(args, settings)
    return _run(server, settings, args, gateway)


def _list(args: argparse.Namespace) -> int:
    sections = [section.metadata() for section in all_sections()]
    if args.json:
        print(json.dumps({"sections": sections}, indent=2))
        return 0
    print(f"{'SECTION':<14} {'TOOLS':>5}  DESCRIPTION")
    for meta in sections:
        print(f"{meta['id']:<14} {meta['tool_count']:>5}  {meta['description']}")
        print(f"{'':<21}{', '.join(meta['tools'])}")
    return 0


def tool_definitions(section_id: str) -> list[dict[str, Any]]:
    """The section's `tools/list` result, exactly as served (used by the snapshot tests)."""
    from mcp_sections.shared.serving.server import build_server

    section = load_section(section_id)
    server, _ = build_server(section, section.runtime(Settings.load()))
    tools = asyncio.run(server.list_tools())
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]


def _doctor(args: argparse.Namespace) -> int:
    from mcp_sections.servers.doctor import check_all, render

    unknown = sorted(set(args.section) - set(BUILTIN_SECTIONS))
    if unknown:
        raise UnknownSection(f"unknown section(s) {', '.join(unknown)}; known: {', '.join(sorted(BUILTIN_SECTIONS))}")
    reports = check_all(args.section or list(BUILTIN_SECTIONS), _settings_from(args))
    if args.json:
        print(json.dumps({"sections": [report.as_dict() for report in reports]}, indent=2))
    else:
        print(render(reports))
    return 0 if all(report.status != "unavailable" for report in reports) else 1


def _audit(args: argparse.Namespace) -> int:
    from mcp_sections.shared.serving.audit import logged_servers, read_records

    settings = _settings_from(args)
    directory = settings.data_dir / "audit"
    if args.server is not None and args.server not in logged_servers(directory):
        known = ", ".join(logged_servers(directory)) or "none yet"
        print(
            f"mcp-sections: no audit log for {printable(args.server)!r} in {directory}; logs: {known}", file=sys.stderr
        )
        return 1
    records = list(read_records(directory, args.server))
    if args.tail > 0:
        records = records[-args.tail :]
    for record in records:
        if args.json:
            print(json.dumps(record, ensure_ascii=True))  # control characters escaped by JSON itself
            continue
        agent = record.get("agent_id")
        who = f"depth {record.get('depth', 0)}" + (f" {agent}" if agent else "")
        fields = (
            record.get("time", "?"),
            f"{record.get('server', '?')}.{record.get('tool', '?')}",
            record.get("outcome", "?"),
            f"{record.get('duration_ms', 0)} ms",
            f"user {record['user']}" if record.get("user") else "user -",  # none: a local caller
            who,
            record.get("arguments_digest", ""),
        )
        print("  ".join(printable(str(field)) for field in fields))
    return 0


def printable(text: str) -> str:
    """`text` with every control or bidirectional-override character escaped: what a caller wrote (an agent id in
    `_meta`, a tool name) can neither erase nor rewrite a line on the terminal."""
    return "".join(
        char
        if char.isprintable() and not 0x202A <= ord(char) <= 0x202E and not 0x2066 <= ord(char) <= 0x2069
        else f"\\x{ord(char):02x}"
        if ord(char) < 0x100
        else f"\\u{ord(char):04x}"
        for char in text
    )


def _reembed(args: argparse.Namespace) -> int:
    """After a change of embedding model: the store stops refusing searches and is embedded again."""
    from mcp_sections.servers.registry import load_section
    from mcp_sections.shared.ground.errors import ToolFailure

    section = load_section(args.section)
    if not section.embeds or section.open_state is None:
        embedding = ", ".join(other.id for other in all_sections() if other.embeds)
        print(f"mcp-sections: {args.section} keeps no embeddings; sections that do: {embedding}", file=sys.stderr)
        return 2
    state = section.open_state(section.runtime(_settings_from(args)))
    try:
        owner = state if hasattr(state, "reembed") else state.store
        try:
            previous = owner.reembed()
        except ToolFailure as failure:
            print(f"mcp-sections: {failure.message}", file=sys.stderr)
            return 1
        model = owner.model_key
    finally:
        state.close()
    if previous == model:
        print(f"{args.section}: the store already belongs to {model}; nothing to do.")
    else:
        print(
            f"{args.section}: the store now belongs to {model} (was {previous or 'no model'}); its items are embedded "
            "again in the background by the running section, or at its next start. Searches by meaning answer "
            "from what is re-embedded so far until then."
        )
    return 0


def _install(args: argparse.Namespace) -> int:
    """`mcp-sections install <client>`: the gateway's stdio command for this installation (with this shell's
    settings), or the URL of a running HTTP gateway, merged into the client's config (`servers.install`)."""
    from mcp_sections.servers import install

    client = install.CLIENTS[args.client]
    given = [
        flag
        for flag, value in (
            ("--root", args.roots),
            ("--data-dir", args.data_dir),
            ("--config", args.config),
            ("--approval", args.approval),
        )
        if value
    ]
    if args.url is not None:
        if given:
            raise install.InstallError(
                f"{', '.join(given)} configure a gateway the client starts; with --url the gateway runs already: "
                "give them to that gateway."
            )
        entry = install.http_entry(client, args.name, args.url, args.token_file, header=not args.no_token)
    elif args.token_file is not None or args.no_token:
        raise install.InstallError("--token-file and --no-token go with --url (a gateway serving over HTTP).")
    else:
        carried = install.gateway_environment(os.environ, given, args.approval, carry=not args.no_env)
        command = install.launch_command()
        flags = install.gateway_args(args.roots, args.data_dir, args.config)
        entry = client.entry(command, flags, carried.env, notes=carried.notes())
    change = install.install(client, args.name, entry, dry_run=args.dry_run)
    _report(change, client, args, "install")
    for note in entry.notes:
        print(note)
    return 0


def _uninstall(args: argparse.Namespace) -> int:
    from mcp_sections.servers import install

    client = install.CLIENTS[args.client]
    _report(install.uninstall(client, args.name, dry_run=args.dry_run), client, args, "uninstall")
    return 0


def _report(change: Any, client: Any, args: argparse.Namespace, action: str) -> None:
    from mcp_sections.servers.install import shown_entry

    shown = json.dumps({client.key: {args.name: shown_entry(change.entry)}}, indent=2, ensure_ascii=False)
    if not change.changed:
        state = "is already in" if action == "install" else "is not in"
        print(f"{args.name} {state} {client.title}'s config ({change.path}); nothing changed.")
    elif args.dry_run:
        verb = "add to" if action == "install" else "remove from"
        print(f"would {verb} {change.path} (nothing written: --dry-run):\n{shown}")
    else:
        done = "added to" if action == "install" else "removed from"
        backup = f"; the previous file is kept as {change.backup}" if change.backup else ""
        private = " It holds the token: the file is now readable by you alone (0600)." if change.private else ""
        print(f"{args.name} {done} {client.title}'s config ({change.path}){backup}.{private}")
        if action == "install":
            print(shown)
        print(f"Restart {client.title} to use it.")


def _trusted_base(args: argparse.Namespace) -> int:
    """`mcp-sections trusted-base`: the table of `shared.confinement.base_table.describe` for these roots and
    settings."""
    from mcp_sections.servers.shell_ops.settings import ShellOpsSettings
    from mcp_sections.shared.confinement.base_table import describe

    settings = _settings_from(args)
    search_path = settings.section_settings(ShellOpsSettings, "shell_ops").search_path
    rows = describe(settings.roots, settings.own_state().described, search_path)
    if args.json:
        print(json.dumps([row.__dict__ for row in rows], indent=2))
        return 0
    print(f"roots: {', '.join(map(str, settings.roots)) or '(none)'}; shell_ops search path: {search_path}")
    print("| entry | what | where | sandboxed programs | file tools |")
    print("|---|---|---|---|---|")
    for row in rows:
        print(f"| `{row.entry}` | {row.what} | {row.where} | {row.programs} | {row.file_tools} |")
    return 0


COMMANDS = {
    "serve": _serve,
    "trusted-base": _trusted_base,
    "list": _list,
    "gateway": _gateway,
    "doctor": _doctor,
    "audit": _audit,
    "reembed": _reembed,
    "install": _install,
    "uninstall": _uninstall,
}


def main(argv: list[str] | None = None) -> int:
    """The `mcp-sections` command."""
    from mcp_sections.servers.install import InstallError
    from mcp_sections.shared.serving.http_auth import AuthConfigError

    args = build_parser().parse_args(argv)
    try:
        if args.command == "tools":
            print(json.dumps(tool_definitions(args.section), indent=2))
            return 0
        return COMMANDS[args.command](args)
    except (ConfigError, UnknownSection, AuthConfigError, InstallError) as exc:
        print(f"mcp-sections: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        if isinstance(exc, BrokenPipeError) or exc.errno == errno.EPIPE:
            return _reader_went_away()
        if exc.errno == errno.EADDRINUSE:
            print(f"mcp-sections: cannot listen: {exc.strerror} (choose another --port)", file=sys.stderr)
            return 2
        raise
    except KeyboardInterrupt:
        return 130


def _reader_went_away() -> int:
    """`mcp-sections tools X | head`: the reader closed the pipe; stop quietly, as Unix tools do."""
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
