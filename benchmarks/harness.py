"""Runs the side-by-side job with every runner and writes the comparison (see README.md).

Each run is its own process, so wall time and peak memory (the RSS high-water mark, from
wait4's rusage) are the whole process's, interpreter and library loading included. Steps/s
counts the training loop alone (each runner times it itself). Runners take turns within each
repeat so that load on a shared machine spreads over all of them; each repeat uses its own seed,
so the spread of final accuracy across repeats is the noise the comparison is judged against.

Standard library only: it runs under the benchmark venv's Python but imports nothing from it.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# The job at each size. A sequence size (the Transformer cross-encoder, batch 32, length 128)
# joins here once the model exists: it needs token data (`data` would write triplets instead of
# LETOR) and each runner a `model: "transformer"` branch; the table code needs no change.
SIZES = {
    "small": {  # dispatch-bound: a few microseconds of arithmetic per operation
        "features": 46, "hidden": "64", "batch": 32, "steps": 4000, "epochs": 10, "lr": 1e-3,
        "train_queries": 300, "heldout_queries": 100, "docs_per_query": 20,
    },
    "medium": {  # compute-bound: matrix products dominate
        "features": 136, "hidden": "512,512", "batch": 256, "steps": 300, "epochs": 10, "lr": 1e-3,
        "train_queries": 300, "heldout_queries": 100, "docs_per_query": 20,
    },
}

REFERENCE = "xpm-torch"


def job_args(size, data_dir, seed, style):
    """The job's settings as command-line arguments: `--key value` or positional (`tch`)."""
    values = {
        "train": os.path.join(data_dir, "train.letor"),
        "heldout": os.path.join(data_dir, "heldout.letor"),
        "features": size["features"], "hidden": size["hidden"], "batch": size["batch"],
        "steps": size["steps"], "epochs": size["epochs"], "lr": size["lr"], "seed": seed,
    }
    if style == "positional":
        return [str(values[k]) for k in ("train", "heldout", "features", "hidden", "batch", "steps", "epochs", "lr", "seed")]
    return [part for k, v in values.items() for part in (f"--{k}", str(v))]


def runners(tools):
    py = os.path.join(HERE, "runners")
    return {
        "xpm-torch": lambda a: [tools["node"], os.path.join(py, "xpm-torch.mjs")] + a("named"),
        "xpm-torch core, no Node": lambda a: [tools["tch"], "learner"] + a("positional"),
        "raw tch (fused Adam)": lambda a: [tools["tch"], "train"] + a("positional") + ["fused-adam"],
        "raw tch (nn::Adam)": lambda a: [tools["tch"], "train"] + a("positional") + ["nn-adam"],
        "PyTorch loop": lambda a: [tools["python"], os.path.join(py, "torch_loop.py")] + a("named"),
        "PyTorch loop (fused Adam)": lambda a: [tools["python"], os.path.join(py, "torch_loop.py"), "--fused"] + a("named"),
        "Lightning Fabric": lambda a: [tools["python"], os.path.join(py, "torch_loop.py"), "--fabric"] + a("named"),
        "xpm-torch (Python)": lambda a: [tools["python"], os.path.join(py, "xpm_torch_python.py")] + a("named"),
    }


def run_once(argv, threads):
    """One training run in its own process: its JSON line plus wall time, CPU time, peak RSS,
    steps per second and the final loss."""
    result = measure(argv, threads)
    if "error" in result:
        return result
    result["steps_per_second"] = result["steps"] / result["train_seconds"]
    result["final_loss"] = result["epoch_losses"][-1]
    return result


def measure(argv, threads):
    """One run in its own process: its last JSON line plus wall time, CPU time and peak RSS."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
               RAYON_NUM_THREADS=str(threads))
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env, cwd=ROOT)
        # Reaped by wait4 rather than Popen.wait, for the child's own rusage.
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    lines = stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        sys.stderr.write(stderr[-4000:])
        last = (stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": without_local_paths(f"exit {proc.returncode}: {last}")}
    result = json.loads(lines[-1])
    if "error" in result:
        return result
    result["wall_seconds"] = wall
    result["peak_rss_mib"] = usage.ru_maxrss / 1024  # KiB on Linux
    # Less sensitive than wall time to other load on the machine, and shows extra threads.
    result["cpu_seconds"] = usage.ru_utime + usage.ru_stime
    return result


def without_local_paths(text):
    """Messages go into committed results: this checkout's and the home folder's paths go."""
    return text.replace(ROOT, "<repo>").replace(os.path.expanduser("~"), "~")


def load_average():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def machine():
    model = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {"cpu": model, "cores": os.cpu_count(), "system": f"{platform.system()} {platform.release()}"}


METRICS = ("steps_per_second", "wall_seconds", "cpu_seconds", "peak_rss_mib", "final_loss", "heldout_pairwise_accuracy")


def summarise(runs):
    """Medians over the successful repeats, with the spread of the accuracy."""
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return {"error": runs[0]["error"]}
    summary = {m: statistics.median(r[m] for r in ok) for m in METRICS}
    accuracies = [r["heldout_pairwise_accuracy"] for r in ok]
    summary["accuracy_stdev"] = statistics.stdev(accuracies) if len(accuracies) > 1 else 0.0
    summary["accuracy_mean"] = statistics.fmean(accuracies)
    summary["repeats"] = len(ok)
    return summary


def with_ratios(table):
    """Each metric also as a ratio to xpm-torch's."""
    reference = table.get(REFERENCE, {})
    for summary in table.values():
        if "error" in summary or "error" in reference:
            continue
        summary["ratio_to_xpm_torch"] = {m: summary[m] / reference[m] for m in METRICS if reference[m]}
    return table


def targets(results):
    """The issue's targets, each with its measured value and whether it is met."""
    checks = []
    for key, table in results.items():
        size, threads = key.split("/")
        ref = table.get(REFERENCE, {})
        if "error" in ref:
            continue

        def speedup(name):
            peer = table.get(name, {})
            return None if "error" in peer or not peer else ref["steps_per_second"] / peer["steps_per_second"]

        tch = speedup("raw tch (fused Adam)")
        if size == "small" and tch is not None:
            overhead = 1 / tch - 1
            checks.append({"case": key, "target": "overhead per step over raw tch (same kernels) <= 5%", "value": overhead, "met": overhead <= 0.05})
        goal = 1.5 if size == "small" else 0.95
        for peer in ("PyTorch loop", "Lightning Fabric"):
            value = speedup(peer)
            if value is not None:
                checks.append({"case": key, "target": f"steps/s >= {goal}x {peer}", "value": value, "met": value >= goal})
        loop = table.get("PyTorch loop", {})
        if "error" not in loop and loop:
            diff = ref["accuracy_mean"] - loop["accuracy_mean"]
            noise = max(0.005, 2 * max(ref["accuracy_stdev"], loop["accuracy_stdev"]))
            checks.append({"case": key, "target": "held-out accuracy = PyTorch loop's within noise", "value": diff, "noise": noise, "met": abs(diff) <= noise})
    return checks


def markdown(results, checks):
    lines = []
    for key, table in results.items():
        lines += [f"### {key} threads", "",
                  "| runner | steps/s | wall s | CPU s | peak RSS MiB | final loss | held-out pairwise acc. |",
                  "|---|---|---|---|---|---|---|"]
        for name, s in table.items():
            if "error" in s:
                lines.append(f"| {name} | failed: {s['error'][:150]} | | | | | |")
                continue
            r = s.get("ratio_to_xpm_torch", {})
            cell = lambda m, fmt: f"{fmt.format(s[m])} ({r[m]:.2f}×)" if m in r else fmt.format(s[m])  # noqa: E731
            lines.append(f"| {name} | {cell('steps_per_second', '{:.0f}' if s['steps_per_second'] >= 100 else '{:.1f}')} | {cell('wall_seconds', '{:.2f}')} | "
                         f"{cell('cpu_seconds', '{:.2f}')} | {cell('peak_rss_mib', '{:.0f}')} | {cell('final_loss', '{:.4f}')} | "
                         f"{s['accuracy_mean']:.4f} ± {s['accuracy_stdev']:.4f} |")
        lines.append("")
    lines += ["### Targets", "", "| case | target | measured | met |", "|---|---|---|---|"]
    for c in checks:
        value = f"{c['value']:+.1%}" if "overhead" in c["target"] else (
            f"{c['value']:+.4f} (noise {c['noise']:.4f})" if "noise" in c else f"{c['value']:.2f}×")
        lines.append(f"| {c['case']} | {c['target']} | {value} | {'yes' if c['met'] else 'no'} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tch", help="the side_by_side example binary (run.sh passes it)")
    parser.add_argument("--node", default="node")
    parser.add_argument("--sizes", default=",".join(SIZES))
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--runners", default=None, help="comma-separated subset of the runners")
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies the step counts (0.1 for a smoke run)")
    parser.add_argument("--data", default=None, help="where the LETOR files go (default: a cache folder)")
    parser.add_argument("--out", default=os.path.join(HERE, "results"))
    parser.add_argument("--name", default="latest", help="stem of the result files in --out")
    parser.add_argument("--render", metavar="JSON", help="only print the tables of a results file")
    args = parser.parse_args()
    if args.render:
        with open(args.render) as f:
            saved = json.load(f)
        print(markdown(saved["results"], saved["targets"]), end="")
        return
    if not args.tch:
        parser.error("--tch is required to run the benchmark")

    tools = {"node": args.node, "tch": args.tch, "python": sys.executable}
    every = runners(tools)
    chosen = args.runners.split(",") if args.runners else list(every)
    cache = os.environ.get("XPM_TORCH_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "xpm-torch")
    data_root = args.data or os.path.join(cache, "bench-data")
    results, runs, loads = {}, {}, {}
    for size_name in args.sizes.split(","):
        size = dict(SIZES[size_name])
        size["steps"] = max(size["epochs"], int(size["steps"] * args.scale) // size["epochs"] * size["epochs"])
        data_dir = os.path.join(data_root, size_name)
        subprocess.run([args.tch, "data", data_dir] + [str(size[k]) for k in ("features", "train_queries", "heldout_queries", "docs_per_query")], check=True)
        for threads in [int(t) for t in args.threads.split(",")]:
            key = f"{size_name}/{threads}"
            loads[key] = {"before": load_average()}
            per_runner = {name: [] for name in chosen}
            for repeat in range(args.repeats):
                for name in chosen:
                    argv = every[name](lambda style: job_args(size, data_dir, repeat, style))
                    result = run_once(argv, threads)
                    per_runner[name].append(result)
                    shown = result.get("error") or f"{result['steps_per_second']:.0f} steps/s, acc {result['heldout_pairwise_accuracy']:.4f}"
                    print(f"[{key} #{repeat}] {name}: {shown}", file=sys.stderr, flush=True)
            loads[key]["after"] = load_average()
            runs[key] = per_runner
            results[key] = with_ratios({name: summarise(r) for name, r in per_runner.items()})
    checks = targets(results)
    table = markdown(results, checks)
    os.makedirs(args.out, exist_ok=True)
    report = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "load_average": loads,
        "sizes": {k: SIZES[k] for k in args.sizes.split(",")},
        "scale": args.scale,
        "repeats": args.repeats,
        "results": results,
        "targets": checks,
        "runs": runs,
    }
    with open(os.path.join(args.out, f"{args.name}.json"), "w") as f:
        json.dump(report, f, indent=1)
    with open(os.path.join(args.out, f"{args.name}.md"), "w") as f:
        f.write(table)
    print(table)


if __name__ == "__main__":
    main()
