#!/usr/bin/env bash
# Sets up everything mcp-sections needs on a fresh machine, idempotently:
#   - system packages (Debian/Ubuntu, when run as root or with sudo): bubblewrap, git, ripgrep (search_files'
#     fast engine), util-linux's setpriv (the container entrypoint tests run as the images' user), chromium
#     (web_ops renders pages that need JavaScript with it; Playwright cannot download its own build offline);
#     Mesa's EGL (media_ops renders 3D assets on the CPU);
#   - .venv with a CPU build of torch (a bare `torch` pulls a multi-GB CUDA build) and the project with every extra.
# Usage: scripts/setup.sh [EXTRAS]   (default: all,dev)
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="${1:-all,dev}"
PYTHON="${PYTHON:-python3}"

need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v git >/dev/null 2>&1 || need+=(git)
command -v rg >/dev/null 2>&1 || need+=(ripgrep)
command -v setpriv >/dev/null 2>&1 || need+=(util-linux)
case ",$EXTRAS," in
*,all,*|*,web,*) [ -x /usr/lib/chromium/chromium ] || command -v chromium >/dev/null 2>&1 || need+=(chromium) ;;
esac
case ",$EXTRAS," in  # media_ops renders 3D on Mesa's software OpenGL through EGL
*,all,*|*,media,*) ls /usr/lib/*/libEGL_mesa.so.0 >/dev/null 2>&1 || need+=(libegl1 libegl-mesa0 libgl1-mesa-dri) ;;
esac
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
*,all,*|*,media,*) pip install --quiet --no-deps "pyrender==0.1.45" ;;  # its needs are in the media extra
esac
echo "setup: done (. .venv/bin/activate; mcp-sections doctor)"
