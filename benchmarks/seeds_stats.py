"""The statistics of a many-seed comparison written by benchmarks/seeds.mjs: per group of runs
(side, variant, steps), the distribution of dev MRR@10 — mean with its 95 % t interval, standard
deviation with its 95 % chi-square interval, median, range — and, per compared pair of groups,
tests of the difference of means (Welch's t, a permutation test) and of spreads (the F test of
the variance ratio with its 95 % interval, Brown-Forsythe's test, a bootstrap interval of the
ratio of standard deviations).

Groups are named `side/variant/steps`. By default each variant and length compares xpm-torch
with the reference; --compare A=B adds a comparison of any two groups (when both have runs).
--paired A=B compares two groups seed by seed, over the seeds both have: the mean of the
differences with its 95 % t interval, the paired t test, the standard deviation of the
differences, and Pearson's correlation of the two (with its p): how much of a seed's outcome the
two runs of a seed share (a fixed ingredient makes them correlate).

Usage: python benchmarks/seeds_stats.py FILE.jsonl [...] [--compare A=B ...] [--paired A=B ...]
  [--markdown OUT.md]
"""
import argparse
import json
import math
from collections import defaultdict

import numpy as np
from scipy import stats

BOOTSTRAP = 20000


def describe(values):
    v = np.asarray(values)
    n = len(v)
    mean, sd = v.mean(), v.std(ddof=1)
    half = stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n)
    chi_hi, chi_lo = stats.chi2.ppf(0.975, n - 1), stats.chi2.ppf(0.025, n - 1)
    return {
        "n": n,
        "mean": mean,
        "mean_ci": (mean - half, mean + half),
        "sd": sd,
        "sd_ci": (sd * math.sqrt((n - 1) / chi_hi), sd * math.sqrt((n - 1) / chi_lo)),
        "median": float(np.median(v)),
        "min": v.min(),
        "max": v.max(),
    }


def compare(a, b, rng):
    a, b = np.asarray(a), np.asarray(b)
    welch = stats.ttest_ind(a, b, equal_var=False)
    se = math.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
    df = se**4 / ((a.var(ddof=1) / len(a)) ** 2 / (len(a) - 1) + (b.var(ddof=1) / len(b)) ** 2 / (len(b) - 1))
    diff = a.mean() - b.mean()
    half = stats.t.ppf(0.975, df) * se
    permutation = stats.permutation_test((a, b), lambda x, y: x.mean() - y.mean(), n_resamples=BOOTSTRAP, random_state=rng)
    ratio = a.var(ddof=1) / b.var(ddof=1)
    dfa, dfb = len(a) - 1, len(b) - 1
    f_p = 2 * min(stats.f.cdf(ratio, dfa, dfb), stats.f.sf(ratio, dfa, dfb))
    ratio_ci = (ratio / stats.f.ppf(0.975, dfa, dfb), ratio / stats.f.ppf(0.025, dfa, dfb))
    brown_forsythe = stats.levene(a, b, center="median")
    boot = [
        rng.choice(a, len(a)).std(ddof=1) / max(rng.choice(b, len(b)).std(ddof=1), 1e-12) for _ in range(BOOTSTRAP)
    ]
    return {
        "mean_diff": diff,
        "mean_diff_ci": (diff - half, diff + half),
        "welch_p": welch.pvalue,
        "permutation_p": permutation.pvalue,
        "variance_ratio": ratio,
        "variance_ratio_ci": ratio_ci,
        "f_p": f_p,
        "brown_forsythe_p": brown_forsythe.pvalue,
        "sd_ratio_bootstrap_ci": tuple(np.percentile(boot, [2.5, 97.5])),
    }


def paired(a, b):
    """Seed-by-seed comparison of two groups ({seed: value}) over their common seeds."""
    seeds = sorted(set(a) & set(b))
    x, y = np.array([a[s] for s in seeds]), np.array([b[s] for s in seeds])
    d = x - y
    n = len(d)
    half = stats.t.ppf(0.975, n - 1) * d.std(ddof=1) / math.sqrt(n)
    r = stats.pearsonr(x, y)
    return {
        "n": n,
        "mean_diff": d.mean(),
        "mean_diff_ci": (d.mean() - half, d.mean() + half),
        "paired_p": stats.ttest_rel(x, y).pvalue,
        "sd_diff": d.std(ddof=1),
        "r": r.statistic,
        "r_p": r.pvalue,
    }


def fmt(x):
    return f"{x:.3f}"


def interval(pair):
    return f"[{pair[0]:.3f}, {pair[1]:.3f}]"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="+")
    parser.add_argument("--compare", action="append", default=[], help="A=B, each side/variant/steps")
    parser.add_argument("--paired", action="append", default=[], help="A=B, compared seed by seed")
    parser.add_argument("--markdown")
    args = parser.parse_args()
    by_seed = defaultdict(dict)
    for path in args.files:
        for line in open(path):
            if line.strip():
                r = json.loads(line)
                by_seed[f"{r['side']}/{r['variant']}/{r['steps']}"][r["seed"]] = r["mrr10"]
    groups = {name: list(runs.values()) for name, runs in by_seed.items()}
    pairs = []
    for name in sorted(groups):
        side, variant, steps = name.split("/")
        other = f"reference/{variant}/{steps}"
        if side == "xpm-torch" and other in groups:
            pairs.append((name, other))
    # A comparison asked for whose groups have no runs yet is left out.
    pairs += [(a, b) for a, b in (c.split("=") for c in args.compare) if a in groups and b in groups]
    rng = np.random.default_rng(0)
    lines = [
        "| group | n | mean [95 % CI] | sd [95 % CI] | median | range |",
        "|---|---|---|---|---|---|",
    ]
    for name in sorted(groups):
        d = describe(groups[name])
        lines.append(
            f"| {name} | {d['n']} | {fmt(d['mean'])} {interval(d['mean_ci'])} | {fmt(d['sd'])} {interval(d['sd_ci'])} "
            f"| {fmt(d['median'])} | {fmt(d['min'])}–{fmt(d['max'])} |"
        )
    lines += [
        "",
        "| A vs B | mean A − B [95 % CI] | Welch p | permutation p | variance ratio A/B [95 % CI] | F p | Brown-Forsythe p | sd ratio, bootstrap 95 % CI |",
        "|---|---|---|---|---|---|---|---|",
    ]
    results = {}
    for a, b in pairs:
        c = compare(groups[a], groups[b], rng)
        results[f"{a}={b}"] = c
        lines.append(
            f"| {a} vs {b} | {c['mean_diff']:+.3f} {interval(c['mean_diff_ci'])} | {c['welch_p']:.3f} | {c['permutation_p']:.3f} "
            f"| {c['variance_ratio']:.2f} [{c['variance_ratio_ci'][0]:.2f}, {c['variance_ratio_ci'][1]:.2f}] | {c['f_p']:.3f} "
            f"| {c['brown_forsythe_p']:.3f} | {interval(c['sd_ratio_bootstrap_ci'])} |"
        )
    matched = [(a, b) for a, b in (c.split("=") for c in args.paired) if a in groups and b in groups]
    if matched:
        lines += [
            "",
            "| A vs B, seed by seed | seeds | mean of A − B [95 % CI] | paired t p | sd of A − B | Pearson r (p) |",
            "|---|---|---|---|---|---|",
        ]
    for a, b in matched:
        p = paired(by_seed[a], by_seed[b])
        results[f"{a}~{b}"] = p
        lines.append(
            f"| {a} vs {b} | {p['n']} | {p['mean_diff']:+.3f} {interval(p['mean_diff_ci'])} | {p['paired_p']:.3f} "
            f"| {p['sd_diff']:.3f} | {p['r']:.2f} ({p['r_p']:.3f}) |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as out:
            out.write(text)


if __name__ == "__main__":
    main()
