#!/usr/bin/env bash
# One command for the side-by-side benchmark: provisions the Python side, builds the Rust side,
# runs every runner at every size and thread count, writes benchmarks/results/latest.{json,md}.
# Arguments go to harness.py (e.g. --sizes small --threads 1 --repeats 1 --scale 0.1).
set -euo pipefail

python_packages=(lightning xpm-torch)
python_imports="lightning, xpm_torch"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

provision_python
build_rust
exec "$python" "$root/benchmarks/harness.py" --tch "$tch_runner" "$@"
