"""`mcp-sections`: serve a section, list the sections, print a section's tool definitions."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp_sections.shared.about import package_version
from mcp_sections.shared.config import ConfigError, Settings, load_settings
from mcp_sections.servers.registry import BUILTIN_SECTIONS, UnknownSection, all_sections, load_section

if TYPE_CHECKING:  # pragma: no cover
    from mcp.server.mcpserver import MCPServer

    from mcp_sections.shared.preface import Handover


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


def _add_transport_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="HTTP port (default 8000)")
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
    return parser


def _settings_from(args: argparse.Namespace) -> Settings:
    """The settings of the config layers and the flags, with logging configured from them."""
    settings = load_settings(
        config_file=args.config,
        data_dir=args.data_dir,
        roots=args.roots,
        log_level=args.log_level,
    )
    _configure_logging(settings.log_level)
    return settings


def _configure_logging(level: str) -> None:
    # stdout carries the protocol; every log line goes to stderr.
    logging.basicConfig(stream=sys.stderr, level=level, format="%(asctime)s %(name)s %(levelname)s %(message)s")


def _run(server: MCPServer, settings: Settings, args: argparse.Namespace, handover: Handover | None = None) -> int:
    """Serve on the transport of the flags; over HTTP, the flags' extra hosts and origins add to the settings'."""
    from mcp_sections.shared.server import serve

    serve(
        server,
        args.transport,
        args.host,
        args.port,
        [*settings.allowed_hosts, *args.allowed_hosts],
        [*settings.allowed_origins, *args.allowed_origins],
        handover,
    )
    return 0


def prepare(argv: list[str]) -> None:
    """What `serve <section>` imports (the SDK, the section): run by the start-up preface in the background."""
    from mcp_sections.shared import server, stdio  # noqa: F401

    if len(argv) > 1:
        load_section(argv[1])


def _serve(args: argparse.Namespace, handover: Handover | None = None) -> int:
    from mcp_sections.shared.server import build_server

    settings = _settings_from(args)
    section = load_section(args.section)
    server, _ = build_server(section, section.runtime(settings))
    return _run(server, settings, args, handover)


def _gateway(args: argparse.Namespace) -> int:
    from mcp_sections.servers.gateway.server import build_gateway_server
    from mcp_sections.servers.gateway.settings import load_gateway_settings

    settings = _settings_from(args)
    expose = [part.strip() for value in args.expose or [] for part in value.split(",") if part.strip()]
    in_process = [part.strip() for value in args.in_process or [] for part in value.split(",") if part.strip()]
    config = load_gateway_settings(
        settings,
        expose=expose or None,
        in_process=in_process or None,
        max_depth=args.max_depth,
        max_subagents=args.max_subagents,
    )
    server, _ = build_gateway_server(settings, config)
    return _run(server, settings, args)


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
    from mcp_sections.shared.server import build_server

    section = load_section(section_id)
    server, _ = build_server(section, section.runtime(Settings.load()))
    tools = asyncio.run(server.list_tools())
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]


def main(argv: list[str] | None = None, handover: Handover | None = None) -> int:
    """The CLI; `handover` comes from the start-up preface (`shared/preface.py`), which runs first."""
    args = build_parser().parse_args(argv)
    try:
        if args.command == "serve":
            return _serve(args, handover)
        if args.command == "list":
            return _list(args)
        if args.command == "gateway":
            return _gateway(args)
        if args.command == "tools":
            print(json.dumps(tool_definitions(args.section), indent=2))
            return 0
    except (ConfigError, UnknownSection) as exc:
        print(f"mcp-sections: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 2


if __name__ == "__main__":
    sys.exit(main())
