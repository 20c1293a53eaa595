# Sourced by run.sh and minilm.sh: the Python interpreter of the benchmarks and the Rust side.
# The caller sets `python_packages` (pip names) and `python_imports` (the modules they give).

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${XPM_TORCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/xpm-torch}"
venv="$cache/bench-venv"
full="$cache/fullvenv"
# XPM_TORCH_BENCH_PYTHON: an interpreter that already has torch 2.11 (packages missing from it
# are installed into it); otherwise the benchmark venv.
python="${XPM_TORCH_BENCH_PYTHON:-$venv/bin/python}"

has_torch_211() {
  "$1" -c 'import sys, torch; sys.exit(0 if torch.__version__.split("+")[0] == "2.11.0" else 1)' 2>/dev/null
}

# The venv: torch 2.11 (reused from the full venv when that has it: a plain install downloads
# about 3 GB of CUDA wheels) and the caller's packages.
provision_python() {
  if [[ -x "$python" ]] && has_torch_211 "$python" && "$python" -c "import $python_imports" 2>/dev/null; then
    return
  fi
  if [[ -n "${XPM_TORCH_BENCH_PYTHON:-}" ]]; then
    has_torch_211 "$python" || { echo "XPM_TORCH_BENCH_PYTHON=$python lacks torch 2.11" >&2; exit 1; }
    "$python" -m pip install "${python_packages[@]}"
    return
  fi
  echo "== Python venv for the benchmark: $venv" >&2
  if [[ -x "$full/bin/python" ]] && has_torch_211 "$full/bin/python"; then
    if [[ ! -x "$venv/bin/python" ]]; then
      "$("$full/bin/python" -c 'import sys; print(sys._base_executable)')" -m venv "$venv"
    fi
    # The full venv's packages (torch) are visible from this one; pip sees torch as installed.
    local site
    site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    "$full/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' >"$site/xpm-torch-bench-base.pth"
  else
    [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
    "$venv/bin/pip" install "torch==2.11.0"
  fi
  "$venv/bin/pip" install "${python_packages[@]}"
}

build_rust() {
  echo "== TypeScript and the addon" >&2
  (cd "$root" && npm run build >&2)
  echo "== raw tch runner" >&2
  local torch
  torch="$(cd "$root" && node dist/cli.js libtorch-path)"
  (cd "$root" && LIBTORCH="$torch" cargo build --release --target x86_64-unknown-linux-gnu \
    -p xpm-torch-core --example side_by_side >&2)
  local target="${CARGO_TARGET_DIR:-$root/target}"
  tch_runner="$target/x86_64-unknown-linux-gnu/release/examples/side_by_side"
  # The example links libtorch dynamically; the addon finds it itself, this binary needs the path.
  export LD_LIBRARY_PATH="$torch/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

# transformers.js 4.3.2 in $cache/transformers-js (`transformers_js_modules`), installed without
# its install script, which fetches GPU libraries: the CPU build of ONNX Runtime comes in the npm
# package; and the model directory $1 exported to ONNX once (`onnx_model`). Needs the venv's
# onnx and onnxscript.
provision_transformers_js() {
  transformers_js_modules="$cache/transformers-js"
  if [[ ! -d "$transformers_js_modules/node_modules/@huggingface/transformers" ]]; then
    mkdir -p "$transformers_js_modules"
    (cd "$transformers_js_modules" && { [[ -f package.json ]] || npm init -y >/dev/null; } &&
      npm install --ignore-scripts --no-audit --no-fund "@huggingface/transformers@4.3.2" >&2)
  fi
  onnx_model="$cache/bench-data/$(basename "$1")-onnx"
  [[ -f "$onnx_model/onnx/model.onnx" ]] || "$python" "$root/benchmarks/runners/export_onnx.py" "$1" "$onnx_model" >&2
}
