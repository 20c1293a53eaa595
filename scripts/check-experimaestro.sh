#!/usr/bin/env bash
# Checks that experimaestro 2.7.0's own commands list an experiment of a workspace as expected:
#
#   scripts/check-experimaestro.sh WORKSPACE EXPERIMENT JOB_COUNT [PREFIX=STATE[,TAG=VALUE...]]...
#   scripts/check-experimaestro.sh --provision     (only makes its virtual environment)
#
# PREFIX: the start of a job identifier; STATE: what `experimaestro jobs list` prints, any case (DONE,
# FAIL, RUNNING, SCHEDULED, WAITING, READY, UNSCHED), FAIL:REASON for a failure reason as its monitor
# reads it (FAILED, DEPENDENCY, MEMORY, TIMEOUT, CANCELLED); TAG=VALUE: a tag `jobs list --tags` shows.
# Runs `experiments list`, `jobs list` (whole workspace, then the experiment with --tags) and
# `jobs list --filter` by state and by tag; exits 1 naming what differs.
# The environment: experimaestro-venv in the xpm-torch cache (scripts/python-venv.sh).
set -euo pipefail

python="$(bash "$(dirname "$0")/python-venv.sh" experimaestro-venv experimaestro==2.7.0)"
if [ "${1:-}" = "--provision" ]; then exit 0; fi
if [ $# -lt 3 ]; then
  sed -n '2,10p' "$0" >&2
  exit 2
fi

exec "$python" - "$@" <<'PY'
import json, os, re, subprocess, sys

workspace, experiment, count, *specs = sys.argv[1:]
count = int(count)
xpm = os.path.join(os.path.dirname(sys.executable), "experimaestro")
env = {**os.environ, "NO_COLOR": "1", "ANSI_COLORS_DISABLED": "1", "TERM": "dumb"}
ansi = re.compile(r"\x1b\[[0-9;]*m")
# The state names of `jobs list` and those of its @state filter
FILTER_STATE = {"DONE": "done", "FAIL": "error", "RUNNING": "running", "SCHEDULED": "scheduled",
                "WAITING": "waiting", "READY": "ready", "UNSCHED": "unscheduled"}
problems = []


def run(*args):
    command = [xpm, *args]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    out = ansi.sub("", done.stdout)
    if done.returncode != 0:
        sys.exit(f"check-experimaestro: `{' '.join(args)}` exited with {done.returncode}\n{out}{done.stderr}")
    return out


def jobs(*args):
    """`jobs list` lines as {identifier: (state, task, tags)}"""
    out = run("jobs", "--workdir", workspace, "list", *args)
    listed = {}
    for line in out.splitlines():
        m = re.match(r"^(\S+)\s+([^/\s]+)/([0-9a-zA-Z]+)(?: (.*))?$", line)
        if m:
            tags = dict(t.split("=", 1) for t in (m.group(4) or "").split() if "=" in t)
            listed[m.group(3)] = (m.group(1).upper(), m.group(2), tags)
    return listed, out


expected = {}
reasons = {}
for spec in specs:
    head, *tags = spec.split(",")
    if "=" not in head:
        sys.exit(f"check-experimaestro: {spec!r} is not PREFIX=STATE[,TAG=VALUE...]")
    prefix, state = head.split("=", 1)
    # It prints DONE, FAIL, UNSCHED but running, scheduled, waiting, ready
    state, _, reason = state.upper().partition(":")
    if state not in FILTER_STATE:
        sys.exit(f"check-experimaestro: unknown state {state} (one of {', '.join(FILTER_STATE)})")
    expected[prefix] = (state, dict(t.split("=", 1) for t in tags))
    if reason:
        reasons[prefix] = reason


def match(listed, prefix):
    found = [i for i in listed if i.startswith(prefix)]
    return found[0] if len(found) == 1 else None, found


# 1. experiments list: "<name> [<host>] (<done>/<total> jobs)"
out = run("experiments", "--workdir", workspace, "list")
line = next((l for l in out.splitlines() if l.split(" ", 1)[0] == experiment), None)
if line is None:
    problems.append(f"`experiments list` does not list {experiment}:\n{out}")
else:
    m = re.search(r"\((\d+)/(\d+) jobs\)", line)
    done = sum(1 for s, _ in expected.values() if s == "DONE")
    if not m or int(m.group(2)) != count:
        problems.append(f"`experiments list` shows {line!r}, expected {count} jobs")
    elif len(expected) == count and int(m.group(1)) != done:
        problems.append(f"`experiments list` shows {line!r}, expected {done} done")

# 2. jobs list (whole workspace) and jobs list --experiment --tags
everywhere, out_all = jobs()
listed, out = jobs("--experiment", experiment, "--tags")
if len(listed) != count:
    problems.append(f"`jobs list --experiment {experiment}` lists {len(listed)} jobs, expected {count}:\n{out}")
for prefix, (state, tags) in expected.items():
    identifier, found = match(listed, prefix)
    if identifier is None:
        problems.append(f"job {prefix}: listed {len(found)} times by `jobs list --experiment {experiment}`:\n{out}")
        continue
    shown, task, shown_tags = listed[identifier]
    if shown != state:
        problems.append(f"job {prefix}: `jobs list` shows {shown}, expected {state}")
    for key, value in tags.items():
        if shown_tags.get(key) != value:
            problems.append(f"job {prefix}: `jobs list --tags` shows tags {shown_tags}, expected {key}={value}")
    if everywhere.get(identifier, (None,))[0] != state:
        problems.append(f"job {prefix}: the workspace's `jobs list` shows {everywhere.get(identifier, ('nothing',))[0]}, expected {state}:\n{out_all}")

# 3. jobs list --filter '@state = "..."' and 'TAG = "VALUE"'
for state in sorted({s for s, _ in expected.values()}):
    selected, out = jobs("--experiment", experiment, "--filter", f'@state = "{FILTER_STATE[state]}"')
    for prefix, (wanted, _) in expected.items():
        identifier, _ = match(listed, prefix)
        if identifier is not None and (identifier in selected) != (wanted == state):
            problems.append(f"job {prefix}: --filter '@state = \"{FILTER_STATE[state]}\"' {'selects' if identifier in selected else 'misses'} it")
for prefix, (_, tags) in expected.items():
    identifier, _ = match(listed, prefix)
    for key, value in tags.items():
        selected, out = jobs("--experiment", experiment, "--filter", f'{key} = "{value}"')
        if identifier is not None and identifier not in selected:
            try:
                typed = not isinstance(json.loads(value.lower()), str)
            except ValueError:
                typed = False
            if typed:  # its filter compares strings: a number or boolean tag never matches
                print(f"check-experimaestro: note: --filter '{key} = \"{value}\"' cannot select a non-string tag", file=sys.stderr)
            else:
                problems.append(f"job {prefix}: --filter '{key} = \"{value}\"' misses it:\n{out}")

# 4. failure reasons, as its monitor gets them (it prints none)
if reasons:
    from pathlib import Path
    from experimaestro.scheduler.workspace_state_provider import WorkspaceStateProvider

    provider = WorkspaceStateProvider.get_instance(Path(workspace))
    try:
        states = {j.identifier: j.state for j in provider.get_jobs(experiment_id=experiment)}
    finally:
        provider.close()
    for prefix, reason in reasons.items():
        identifier, _ = match(states, prefix)
        state = states.get(identifier)
        got = state.failure_reason.name if state is not None and state.failure_reason is not None else None
        if got != reason:
            problems.append(f"job {prefix}: its monitor reads the failure reason {got}, expected {reason}")

if problems:
    print("check-experimaestro: experimaestro does not show what was expected:", file=sys.stderr)
    for p in problems:
        print(f"  - {p}", file=sys.stderr)
    sys.exit(1)
print(f"check-experimaestro: {experiment}: {count} jobs listed by experimaestro as expected")
PY
