#!/usr/bin/env bash
# Sets up everything mcp-sections needs on a fresh machine, idempotently:
#   - system packages (Debian/Ubuntu, when run as root or with sudo): bubblewrap (shell_ops' sandbox), git,
#     ripgrep, Chromium (web_ops), Mesa's OSMesa (media_ops' 3D renders), docker-compose/hadolint for checks;
#   - .venv with a CPU build of torch (a bare `torch` pulls a multi-GB CUDA build) and the project with every extra;
#   - pyrender without its PyOpenGL pin (3.1.0 cannot render headless on current Mesa).
# Usage: scripts/setup.sh [EXTRAS]   (default: all,dev,neo4j-test)
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="${1:-all,dev,neo4j-test}"
PYTHON="${PYTHON:-python3}"

need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v git >/dev/null 2>&1 || need+=(git)
command -v rg >/dev/null 2>&1 || need+=(ripgrep)
[ -x /usr/lib/chromium/chromium ] || need+=(chromium)
ldconfig -p 2>/dev/null | grep -q libOSMesa || need+=(libosmesa6)
if [ "${#need[@]}" -gt 0 ] && command -v apt-get >/dev/null 2>&1; then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo -n"
    if ($sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null); then
        echo "setup: installed ${need[*]}"
    else
        echo "setup: could not install ${need[*]} (the sections that need them say so; tests skip)" >&2
    fi
elif [ "${#need[@]}" -gt 0 ]; then
    echo "setup: please install ${need[*]} with your system's package manager" >&2
fi

[ -d .venv ] || "$PYTHON" -m venv .venv
# shellcheck disable=SC1091
. .venv/bin/activate
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
case ",$EXTRAS," in
*,all,*|*,memory,*|*,rag,*)
    if python -c "import torch" 2>/dev/null; then
        :
    elif ls "${PIP_FIND_LINKS:-/nonexistent}"/torch-2.13.0* >/dev/null 2>&1; then
        pip install --quiet torch==2.13.0          # a CPU wheel served locally
    else
        pip install --quiet --index-url "${TORCH_INDEX_URL:-https://download.pytorch.org/whl/cpu}" torch==2.13.0
    fi
    ;;
esac
pip install --quiet -e ".[${EXTRAS}]"
case ",$EXTRAS," in
*,all,*|*,media,*)
    pip install --quiet --no-deps pyrender==0.1.45
    pip install --quiet "PyOpenGL>=3.1.10" freetype-py imageio networkx pyglet scipy six
    ;;
esac
echo "setup: done (. .venv/bin/activate; mcp-sections doctor)"
