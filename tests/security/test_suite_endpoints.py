"""The suite's own endpoints are reserved (issue #38, finding 6 and design point 3): a program cannot publish the HTTP
listener's port, a model's or a URL section's port, or the OTLP endpoint's.

The attacks, re-derived through the gateway (its shell_ops a real subprocess, programs in the real sandbox):
- a program publishes the port the HTTP gateway is about to bind: its clients' bearer token would land in
  `read_process_output`;
- a program publishes the port of the configured model `base_url` while that server is down: the fake model would
  receive the API key and drive the sub-agent's tool calls.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from mcp import Client

from mcp_sections.servers.pool.launchers import builtin_parameters
from mcp_sections.servers.pool.settings import load_gateway_settings
from mcp_sections.shared.settings.config import load_settings
from mcp_sections.shared.settings.endpoints import SUITE_ENDPOINTS, announce_listener, reserved_ports
from tests.in_memory import gateway_in_memory, section_in_memory
from tests.processes import free_port
from tests.stdio import call, data_of, error_of

pytestmark = pytest.mark.anyio
HAVE_BWRAP = shutil.which("bwrap", path="/usr/local/bin:/usr/bin:/bin") is not None


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "site").mkdir(parents=True)
    (root / "site" / "index.html").write_text("<p>a program's page</p>\n")
    return root


def serving(port: int) -> dict[str, object]:
    command = ["python3", "-m", "http.server", "--bind", "127.0.0.1", str(port)]
    return {"command": command, "cwd": "site", "ports": [port], "wait_for": "Serving HTTP", "wait_seconds": 15}


async def publish(client: Client, port: int, gateway: bool) -> tuple[str | None, str]:
    """start_process publishing `port` (through call_section_tool on the gateway): (error code or None, message)."""
    arguments = serving(port)
    if gateway:
        result = await client.call_tool(
            "call_section_tool", {"section": "shell_ops", "tool": "start_process", "arguments": arguments}
        )
    else:
        result = await client.call_tool("start_process", arguments)
    if not result.is_error:
        started = data_of(result)
        stop = {"process_id": started["process"]["process_id"], "signal": "SIGKILL"}
        if gateway:
            await call(client, "call_section_tool", section="shell_ops", tool="stop_process", arguments=stop)
        else:
            await call(client, "stop_process", **stop)
        return None, ""
    return error_of(result)


def test_every_spelling_of_this_machine_is_reserved_and_only_that(tmp_path: Path) -> None:
    ports = iter(range(41001, 41100))
    local = {
        "http://127.0.0.1:{}/v1": "127.0.0.1",
        "http://127.1:{}": "a short IPv4 form",
        "http://2130706433:{}/": "a decimal IPv4",
        "http://0x7f000001:{}/": "a hex IPv4",
        "http://[::1]:{}/": "IPv6 loopback",
        "http://[::ffff:127.0.0.1]:{}/": "IPv4-mapped loopback",
        "http://0.0.0.0:{}/": "the unspecified address (a listener on all interfaces)",
        "http://localhost:{}/": "localhost",
        "https://ollama.localhost:{}/": "a name under localhost",
        "http://no-such-host.invalid:{}/": "a name that does not resolve (taken to be here)",
    }
    remote = "http://93.184.215.14:{}/"
    env = {f"MCP_SECTIONS_X_{n}": url.format(next(ports)) for n, url in enumerate([*local, remote])}
    reserved = reserved_ports(env, configured=[])
    assert sorted(reserved) == list(range(41001, 41001 + len(local))), (reserved, local)
    otlp = {
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "localhost:4318",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317",
    }
    assert set(reserved_ports(otlp, configured=[])) == {4317, 4318}
    config = tmp_path / "config.toml"
    config.write_text(
        '[gateway.model]\nprovider = "openai"\nmodel = "m"\nbase_url = "http://localhost:11434/v1"\n'
        '[gateway.sections.hub]\nurl = "http://127.0.0.1:9123/mcp"\n'
        '[sections.memory]\nembedding_base_url = "http://[::1]:8081/v1"\n'
        '[sections.web_ops]\nsearxng_url = "http://localhost:8888"\nallow = ["127.0.0.1:5173"]\n'
    )
    reserved = reserved_ports({}, configured=[load_settings(config)])  # its tables, from the one parse of the file
    assert set(reserved) == {11434, 9123, 8081, 8888}  # an allow entry is a destination, not an endpoint
    assert reserved[11434].where == f"[gateway.model] base_url in {config}"


def test_the_gateway_tells_its_sections_its_listener_and_its_model(tmp_path: Path) -> None:
    environ: dict[str, str] = {}
    announce_listener("127.0.0.1", 8765, environ)
    assert environ == {SUITE_ENDPOINTS: "http://127.0.0.1:8765"}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(SUITE_ENDPOINTS, environ[SUITE_ENDPOINTS])
        patch.setenv("MCP_SECTIONS_GATEWAY_MODEL_BASE_URL", "http://127.0.0.1:11435/v1")  # a section does not get it
        patch.setenv("MCP_SECTIONS_CONFIG", "/dev/null")
        settings = load_settings(None, data_dir=tmp_path / "data")
        gateway = load_gateway_settings(settings)
        env = builtin_parameters("shell_ops", settings, gateway).env or {}
    assert "MCP_SECTIONS_GATEWAY_MODEL_BASE_URL" not in env
    assert env[SUITE_ENDPOINTS] == "http://127.0.0.1:8765,http://127.0.0.1:11435/v1"
    assert set(reserved_ports(env, configured=[])) == {8765, 11435}


@pytest.mark.skipif(not HAVE_BWRAP, reason="bubblewrap is not installed (apt-get install bubblewrap)")
async def test_a_program_cannot_publish_the_port_the_http_gateway_binds(root: Path, tmp_path: Path) -> None:
    """The gateway announces its listener before it binds (`announce_listener`); its shell_ops gets it."""
    port, honest = free_port(), free_port()
    env: dict[str, str] = {}
    announce_listener("127.0.0.1", port, env)
    args = ("--root", str(root), "--data-dir", str(tmp_path / "data"))
    async with gateway_in_memory(*args, env=env) as gateway:
        code, message = await publish(gateway, port, gateway=True)
        assert code == "PERMISSION_DENIED", message
        assert f"port {port} is one of mcp-sections' own endpoints" in message and SUITE_ENDPOINTS in message
        assert "another port" in message
        assert await publish(gateway, honest, gateway=True) == (None, "")  # any other port is published as before


@pytest.mark.skipif(not HAVE_BWRAP, reason="bubblewrap is not installed (apt-get install bubblewrap)")
@pytest.mark.parametrize("configured", ["config file", "environment"])
async def test_a_program_cannot_publish_the_port_of_the_model_endpoint(
    root: Path, tmp_path: Path, configured: str
) -> None:
    """The model's server is down (nothing listens there): a program that published its port would be the model."""
    port = free_port()
    base_url = f"http://localhost:{port}/v1"
    model = {"provider": "openai", "model": "m", "base_url": base_url, "api_key_env": "TEST_MODEL_KEY"}
    config = tmp_path / "config.toml"
    env = {"TEST_MODEL_KEY": "sk-test-canary"}
    if configured == "config file":
        config.write_text("[gateway.model]\n" + "".join(f'{key} = "{value}"\n' for key, value in model.items()))
    else:
        config.write_text("")
        env |= {f"MCP_SECTIONS_GATEWAY_MODEL_{key.upper()}": value for key, value in model.items()}
    args = ("--config", str(config), "--root", str(root), "--data-dir", str(tmp_path / "data"))
    async with gateway_in_memory(*args, env=env) as gateway:
        code, message = await publish(gateway, port, gateway=True)
    assert code == "PERMISSION_DENIED", message
    assert base_url in message


@pytest.mark.skipif(not HAVE_BWRAP, reason="bubblewrap is not installed (apt-get install bubblewrap)")
async def test_a_program_cannot_publish_the_otlp_endpoint(root: Path, tmp_path: Path) -> None:
    port = free_port()
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://[::1]:{port}", "OTEL_SDK_DISABLED": "true"}
    async with section_in_memory("shell_ops", "--root", str(root), "--data-dir", str(tmp_path / "d"), env=env) as shell:
        code, message = await publish(shell, port, gateway=False)
    assert code == "PERMISSION_DENIED" and "OTEL_EXPORTER_OTLP_ENDPOINT" in message, message
