#!/usr/bin/env bash
# The GPU suite, for a machine with a CUDA GPU and a Python torch 2.11, no Node and no Rust
# needed there. `npm run test:gpu` runs `all` on the machine it is on.
#
#   scripts/gpu/suite.sh build   # on a build machine (LIBTORCH and CARGO_TARGET_DIR set, after
#                                # `npm run build`): stripped binaries and the CUDA library
#                                # into target/gpu/ (carry that folder with the repository)
#   scripts/gpu/suite.sh run     # on the GPU machine: runs what target/gpu/ holds
#   scripts/gpu/suite.sh all     # both, here
#   scripts/gpu/suite.sh bench-cpu [PRECISION]  # the MiniLM benchmark's plumbing on the CPU:
#                                # 2 timed steps, 32-true unless PRECISION is bf16-mixed
#
# What runs: the GPU tests (crates/core/tests/gpu.rs: 32-true vs CPU losses, bf16/16-mixed
# accuracy, the loss scaler with an injected inf, a real out-of-memory replayed in
# micro-batches, the memory probe, NCCL with world size 1, pinned-memory copies; with two GPUs,
# NCCL between two ranks, crates/core/tests/distributed.rs); the runner on the demo job with
# accelerator cuda; kill-and-resume bit-identity with dropout on CUDA (examples/dropout_repro);
# then the predictive batcher's predicted against measured GPU peaks of the MiniLM
# cross-encoder (examples/batching_sim, fresh weights, 32-true and bf16-mixed)
# and the precision benchmark lines (examples/precision_demo), which report, not judge; last,
# the MiniLM cross-encoder benchmark in bf16-mixed: xpm-torch-run against a plain PyTorch loop
# (benchmarks/gpu/), steps/s and peak GPU memory, reported, not judged (benchmarks/README.md).
#
# The binaries run against the torch of PYTHON (default python3): LD_LIBRARY_PATH to its
# torch/lib, XPM_TORCH_CUDA_LIBRARY to the carried CUDA library. Results also go to $OUT when
# set. Exit status: 0 all passed; 1 a check failed; 3 no CUDA GPU here, so nothing ran (never a
# pass); 4 the suite cannot start (no torch 2.11 in PYTHON, or target/gpu not built).
set -euo pipefail

here="$(cd "$(dirname "$0")/../.." && pwd)"
dest="$here/target/gpu"
triple=x86_64-unknown-linux-gnu

NO_GPU=3
CANNOT_START=4

# The executable cargo reports for one artifact of a `--message-format=json` build.
executable() {
  python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == sys.argv[1]:
        print(m["executable"])' "$1"
}

build() {
  : "${LIBTORCH:?set LIBTORCH to the torch 2.11 install to build against}"
  : "${CARGO_TARGET_DIR:?set CARGO_TARGET_DIR}"
  local library="$here/libxpm_torch_cuda.so"
  [[ -f "$library" ]] || { echo "no $library: run npm run build first" >&2; exit "$CANNOT_START"; }
  mkdir -p "$dest"
  local json tests
  json="$(cd "$here" && cargo test --release --target "$triple" -p xpm-torch-core --test gpu --no-run --message-format=json)"
  tests="$(executable gpu <<<"$json")"
  [[ -n "$tests" ]] || { echo "cargo built no gpu test binary" >&2; exit 1; }
  strip -o "$dest/gpu-tests" "$tests"
  json="$(cd "$here" && cargo test --release --target "$triple" -p xpm-torch-core --test distributed --no-run --message-format=json)"
  tests="$(executable distributed <<<"$json")"
  [[ -n "$tests" ]] || { echo "cargo built no distributed test binary" >&2; exit 1; }
  strip -o "$dest/distributed-tests" "$tests"
  (cd "$here" && cargo build --release --target "$triple" -p xpm-torch-core --example precision_demo --example dropout_repro --example batching_sim)
  (cd "$here" && cargo build --release --target "$triple" -p xpm-torch-runner)
  local release="$CARGO_TARGET_DIR/$triple/release"
  strip -o "$dest/precision_demo" "$release/examples/precision_demo"
  strip -o "$dest/dropout_repro" "$release/examples/dropout_repro"
  strip -o "$dest/batching_sim" "$release/examples/batching_sim"
  strip -o "$dest/xpm-torch-run" "$release/xpm-torch-run"
  cp "$library" "$dest/"
  cp "$here/crates/core/tests/fixtures/demo.json" "$dest/demo.json"
  build_bench "$release/examples/minilm_ids"
  du -ch "$dest"/* | tail -1 | sed 's/total/in target\/gpu (carried)/'
}

# The MiniLM benchmark's inputs, without the weights (90 MB would not travel; the run writes
# fresh ones): the model's config.json and tokenizer.json, the triplets of benchmarks/minilm.py
# (documents long enough that every pair fills 128 tokens), their ids as xpm-torch tokenises
# them (for the PyTorch loop, which has no tokenizer there) and the Learner as `wire` writes it.
BENCH_PAIRS=16
BENCH_LENGTH=128
BENCH_TRIPLETS=480 # 60 steps of 8 triplets: the warm-up and the timed steps, once each

build_bench() {
  local tokenize="$1" bench="$dest/minilm" model
  (cd "$here" && cargo build --release --target "$triple" -p xpm-torch-runner --example minilm_ids)
  model="$(cd "$here" && node scripts/minilm.mjs | tail -n 1)"
  rm -rf "$bench"
  mkdir -p "$bench/model"
  cp "$model/config.json" "$model/tokenizer.json" "$bench/model/"
  python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import minilm; minilm.write_triplets(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))' \
    "$here/benchmarks" "$bench/triplets.tsv" "$BENCH_TRIPLETS" "$BENCH_LENGTH"
  "$tokenize" "$bench/model" "$bench/triplets.tsv" "$BENCH_LENGTH" "$BENCH_PAIRS" "$bench/ids.safetensors"
  (cd "$here" && node dist/cli.js wire scripts/gpu/minilm-learner.mjs --out "$bench/learner.json")
}

# Prints a line and appends it to the file `log` names, when the caller set one.
note() { echo "$*"; if [[ -n "${log:-}" ]]; then echo "$*" >>"$log"; fi; }

# One line "<torch version> <torch/lib> <CUDA devices>" from PYTHON's torch.
probe() {
  "$1" -c 'import os, torch
print(torch.__version__, os.path.join(os.path.dirname(torch.__file__), "lib"), torch.cuda.device_count() if torch.cuda.is_available() else 0)'
}

run() {
  local python="${PYTHON:-python3}"
  local found
  if ! found="$(probe "$python" 2>/dev/null)"; then
    if nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
      echo "the GPU suite cannot start: $python has no importable torch (set PYTHON to the python of a torch 2.11 virtualenv)" >&2
      exit "$CANNOT_START"
    fi
    echo "no CUDA GPU on this machine (nvidia-smi lists none, and $python has no torch): the GPU suite did not run"
    exit "$NO_GPU"
  fi
  local version torch_lib gpus
  read -r version torch_lib gpus <<<"$found"
  if [[ "$version" != 2.11.* ]]; then
    echo "the GPU suite cannot start: $python has torch $version, the suite needs 2.11" >&2
    exit "$CANNOT_START"
  fi
  if [[ "$gpus" -lt 1 ]]; then
    echo "no CUDA GPU on this machine (torch $version sees none): the GPU suite did not run"
    exit "$NO_GPU"
  fi
  [[ -x "$dest/gpu-tests" ]] || { echo "no $dest/gpu-tests: run scripts/gpu/suite.sh build first" >&2; exit "$CANNOT_START"; }
  echo "torch $version, $gpus CUDA GPU(s)"
  export LD_LIBRARY_PATH="$torch_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export XPM_TORCH_CUDA_LIBRARY="$dest/libxpm_torch_cuda.so"
  local out="${OUT:-}"
  local log="${out:+$out/gpu-suite.log}"
  local status=0

  note "== GPU tests"
  "$dest/gpu-tests" --ignored --test-threads=1 2>&1 | tee ${log:+-a "$log"} || status=1

  note "== NCCL between two GPUs"
  if [[ "$gpus" -ge 2 ]]; then
    "$dest/distributed-tests" --ignored --exact nccl_between_two_gpus_trains_like_one_process 2>&1 | tee ${log:+-a "$log"} || status=1
  else
    note "NOT RUN: needs 2 GPUs, this machine has $gpus"
  fi

  note "== runner, demo job on CUDA"
  local job
  job="$(mktemp -d)"
  python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); c["fabric_config"]["accelerator"]="cuda"; c["random"]["seed"]=3; c["max_epochs"]=2; c["steps_per_epoch"]=20; json.dump(c, open(sys.argv[2],"w"))' \
    "$dest/demo.json" "$job/cuda.json"
  if "$dest/xpm-torch-run" "$job/cuda.json" --job-dir "$job" >"$job/output.json" 2>"$job/stderr"; then
    note "$(cat "$job/stderr")"
  else
    note "runner failed: $(cat "$job/stderr")"
    status=1
  fi

  # The examples were written for a preloaded libtorch_cuda.
  note "== kill and resume with dropout on CUDA"
  local line
  for accelerator in cuda cpu; do
    line="$(LD_PRELOAD="$torch_lib/libtorch_cuda.so" "$dest/dropout_repro" "$accelerator")" || status=1
    note "$line"
  done

  note "== predictive batcher: predicted against measured peaks on the GPU (MiniLM cross-encoder)"
  local model
  model="$(mktemp -d)"
  if fresh_model "$python" "$model"; then
    for precision in 32-true bf16-mixed; do
      line="$("$dest/batching_sim" cuda --hf "$model" --precision "$precision" 2>&1)" || status=1
      note "$line"
    done
  else
    status=1
  fi
  rm -rf "$model"

  note "== precision benchmark (MLP demo, 8 epochs)"
  for spec in "32-true cuda" "bf16-mixed cuda" "16-mixed cuda" "32-true cpu"; do
    # shellcheck disable=SC2086
    line="$(LD_PRELOAD="$torch_lib/libtorch_cuda.so" "$dest/precision_demo" $spec default 8 || true)"
    note "$line"
  done

  note "== benchmark: MiniLM cross-encoder, bf16-mixed (xpm-torch-run against a plain PyTorch loop)"
  bench "$python" cuda bf16-mixed 10 50 2 || status=1

  if [[ "$status" -eq 0 ]]; then note "GPU suite: passed"; else note "GPU suite: FAILED"; fi
  exit "$status"
}

# fresh_model PYTHON DIR: the benchmark's model (all-MiniLM-L6-v2's configuration and tokenizer,
# freshly initialised weights) in DIR.
fresh_model() {
  local python="$1" dir="$2" source="$dest/minilm/model"
  if [[ ! -f "$source/config.json" ]]; then
    note "NOT RUN: no $source/config.json (scripts/gpu/suite.sh build prepares it)"
    return 1
  fi
  mkdir -p "$dir"
  cp "$source/config.json" "$source/tokenizer.json" "$dir/"
  "$python" "$here/benchmarks/gpu/minilm_bench.py" weights "$dir" || { note "writing the weights failed"; return 1; }
}

# bench PYTHON DEVICE PRECISION WARMUP TIMED REPEATS: the MiniLM job by xpm-torch-run and by
# benchmarks/gpu/minilm_bench.py in turn, REPEATS times, in a fresh directory holding the model
# (fresh weights), the triplets and the job directories (the Learner's paths are ../model and
# ../triplets.tsv). xpm-torch's warm-up is its first epoch (WARMUP steps), the loop's its first
# WARMUP steps; TIMED is a multiple of WARMUP. Prints the table; $OUT/gpu-bench.json when OUT
# is set. Returns 1 when a run failed.
bench() {
  local python="$1" device="$2" precision="$3" warmup="$4" timed="$5" repeats="$6"
  local source="$dest/minilm" work failed=0 results=() repeat
  if [[ ! -f "$source/learner.json" ]]; then
    note "NOT RUN: no $source/learner.json (scripts/gpu/suite.sh build prepares it)"
    return 1
  fi
  work="$(mktemp -d)"
  fresh_model "$python" "$work/model" || return 1
  cp "$source/triplets.tsv" "$work/"
  "$python" -c 'import json, sys
c = json.load(open(sys.argv[1]))
warmup, timed = int(sys.argv[4]), int(sys.argv[5])
c["fabric_config"]["accelerator"], c["fabric_config"]["precision"] = sys.argv[2], sys.argv[3]
c["steps_per_epoch"] = warmup
c["max_epochs"] = c["checkpoint_interval"] = 1 + timed // warmup
json.dump(c, open(sys.argv[6], "w"))' "$source/learner.json" "$device" "$precision" "$warmup" "$timed" "$work/learner.json" ||
    { note "writing the benchmark's Learner failed"; return 1; }
  for repeat in $(seq 1 "$repeats"); do
    if ! "$dest/xpm-torch-run" "$work/learner.json" --job-dir "$work/job-$repeat" >"$work/xpm-$repeat.json" 2>"$work/xpm-$repeat.log"; then
      note "xpm-torch-run failed (repeat $repeat): $(tail -n 5 "$work/xpm-$repeat.log")"
      failed=1
    fi
    results+=("xpm-torch #$repeat=$work/xpm-$repeat.json")
    # The plain loop with PyTorch's default AdamW (foreach), then with the fused kernel that
    # xpm-torch's AdamW calls.
    local variant label
    for variant in torch fused; do
      local flags=()
      label="PyTorch loop"
      if [[ "$variant" == fused ]]; then flags=(--fused); label="PyTorch loop (fused AdamW)"; fi
      if ! "$python" "$here/benchmarks/gpu/minilm_bench.py" loop "$work/model" "$source/ids.safetensors" --device "$device" \
        --precision "$precision" --warmup "$warmup" --steps "$timed" --pairs "$BENCH_PAIRS" "${flags[@]}" \
        >"$work/$variant-$repeat.json" 2>"$work/$variant-$repeat.log"; then
        note "$label failed (repeat $repeat): $(tail -n 5 "$work/$variant-$repeat.log")"
        failed=1
      fi
      results+=("$label #$repeat=$work/$variant-$repeat.json")
    done
  done
  local table
  table="$("$python" "$here/benchmarks/gpu/minilm_bench.py" table "$work/gpu-bench.json" "${results[@]}")" || failed=1
  note "$device, $precision, $BENCH_PAIRS pairs x $BENCH_LENGTH tokens a step, $warmup warm-up + $timed timed steps"
  note "$table"
  if [[ -n "${OUT:-}" ]]; then cp "$work/gpu-bench.json" "$OUT/gpu-bench.json" 2>/dev/null || true; fi
  if [[ "$failed" -eq 0 ]]; then rm -rf "$work"; else note "the runs' outputs and logs are kept in $work"; fi
  return "$failed"
}

# The benchmark's whole path on the CPU, in 32-true (or $1), 1 warm-up and 2 timed steps: proves the
# plumbing (weights, wired Learner, pre-tokenized ids, table) without a GPU. Needs a built
# target/gpu and a PYTHON with torch.
bench_cpu() {
  local python="${PYTHON:-python3}" precision="${1:-32-true}"
  local log="${OUT:+$OUT/gpu-suite.log}"
  [[ -x "$dest/xpm-torch-run" ]] || { echo "no $dest/xpm-torch-run: run scripts/gpu/suite.sh build first" >&2; exit "$CANNOT_START"; }
  note "== benchmark on the CPU (plumbing only): MiniLM cross-encoder, $precision"
  bench "$python" cpu "$precision" 1 2 1
}

case "${1:-all}" in
  build) build ;;
  run) run ;;
  bench-cpu) bench_cpu "${2:-}" ;;
  all)
    build
    run
    ;;
  *) echo "usage: $0 build|run|all|bench-cpu" >&2; exit 2 ;;
esac
