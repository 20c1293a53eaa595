#!/usr/bin/env bash
# Makes (once) a virtual environment of the xpm-torch cache holding exactly the pinned packages,
# and prints its Python:
#
#   scripts/python-venv.sh NAME PACKAGE==VERSION...
#
# The environment: ${XPM_TORCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/xpm-torch}/NAME. It is made
# again when a pinned version is missing (an older pin, or an interrupted install).
set -euo pipefail

name="$1"
shift
cache="${XPM_TORCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/xpm-torch}"
venv="$cache/$name"
check='import importlib.metadata as m, sys
for pin in sys.argv[1:]:
    package, version = pin.split("==")
    if m.version(package) != version: sys.exit(1)'
if ! "$venv/bin/python" -c "$check" "$@" 2>/dev/null; then
  echo "python-venv: installing $* in $venv" >&2
  mkdir -p "$cache"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$@"
fi
echo "$venv/bin/python"
