#!/usr/bin/env bash
# Runs scripts/hf_hub_cache.py under Python's own huggingface_hub, to check that the Hugging Face
# cache xpm-torch writes is Python's, and to lay out a cache with Python's own code:
#
#   scripts/hf-hub-python.sh fill ID FILE...    (HF_ENDPOINT and HF_HUB_CACHE set by the caller)
#   scripts/hf-hub-python.sh scan               (JSON of what scan_cache_dir() finds)
#   scripts/hf-hub-python.sh read ID FILE       (the path hf_hub_download finds offline)
#   scripts/hf-hub-python.sh --provision        (only makes its virtual environment)
#
# The environment: hf-hub-venv in the xpm-torch cache (scripts/python-venv.sh).
set -euo pipefail

python="$(bash "$(dirname "$0")/python-venv.sh" hf-hub-venv huggingface_hub==0.36.0)"
if [ "${1:-}" = "--provision" ]; then exit 0; fi
exec "$python" "$(dirname "$0")/hf_hub_cache.py" "$@"
