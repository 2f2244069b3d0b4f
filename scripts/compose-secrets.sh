#!/usr/bin/env bash
# Makes the secrets compose.yaml reads, once: random values in docker/secrets/ (git-ignored), mode 0600.
# An existing file is kept, so re-running never rotates a secret under running containers.
set -euo pipefail
dir="${1:-$(dirname "$0")/../docker/secrets}"
mkdir -p "$dir"
umask 077
random() { python3 -c 'import secrets; print(secrets.token_urlsafe(32))'; }
[ -s "$dir/mcp_token" ] || random > "$dir/mcp_token"
if [ ! -s "$dir/neo4j_password" ]; then
    password="$(random)"
    printf '%s\n' "$password" > "$dir/neo4j_password"
    printf 'neo4j/%s\n' "$password" > "$dir/neo4j_auth"
fi
# SearXNG's settings: its defaults, the JSON API that web_ops' search_web asks, and a random secret key.
if [ ! -s "$dir/searxng_settings.yml" ]; then
    printf 'use_default_settings: true\nserver:\n  secret_key: "%s"\n  limiter: false\n  bind_address: "0.0.0.0"\n  port: 8080\nsearch:\n  formats: [html, json]\n' \
        "$(random)" > "$dir/searxng_settings.yml"
fi
# The team profile's Redis and PostgreSQL (compose.yaml --profile team).
[ -s "$dir/redis_password" ] || random > "$dir/redis_password"
[ -s "$dir/postgres_password" ] || random > "$dir/postgres_password"
# The containers run as uid 10001 and read the token through the compose secret mount.
chmod 0644 "$dir/mcp_token" "$dir/neo4j_password" "$dir/searxng_settings.yml" \
    "$dir/redis_password" "$dir/postgres_password" 2>/dev/null || true
echo "compose secrets in $dir (the gateway's bearer token: $dir/mcp_token)"
