"""Checks that a TensorBoard run directory holds the expected number of scalars for a tag.

    python scripts/check_tfevents.py <logdir> <tag> <expected_count>

<logdir> is the directory that holds the event files (one run). Needs the `tensorboard` package
(`pip install tensorboard`); it reads the files with TensorBoard's own EventAccumulator, keeping
every scalar (size_guidance={'scalars': 0}) and applying its purge rules as TensorBoard would.
Exits with status 0 when the count matches, 1 with a message otherwise, 2 on bad arguments.
"""

import sys
from pathlib import Path


def main(argv):
    if len(argv) != 4:
        print(f"usage: {argv[0]} <logdir> <tag> <expected_count>", file=sys.stderr)
        return 2
    logdir, tag = Path(argv[1]), argv[2]
    try:
        expected = int(argv[3])
    except ValueError:
        print(f"expected_count must be an integer, got {argv[3]!r}", file=sys.stderr)
        return 2
    if not logdir.is_dir():
        print(f"{logdir}: not a directory", file=sys.stderr)
        return 1
    files = sorted(p.name for p in logdir.iterdir() if "tfevents" in p.name)
    if not files:
        print(f"{logdir}: no event file (*tfevents*) directly in this directory", file=sys.stderr)
        return 1

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(logdir), size_guidance={"scalars": 0})
    accumulator.Reload()
    tags = accumulator.Tags()["scalars"]
    if tag not in tags:
        print(f"{logdir}: no scalar tagged {tag!r}; scalar tags: {sorted(tags)}", file=sys.stderr)
        return 1
    events = accumulator.Scalars(tag)
    if len(events) != expected:
        print(
            f"{logdir}: {tag!r} has {len(events)} scalars, expected {expected}"
            f" (steps {events[0].step}..{events[-1].step})",
            file=sys.stderr,
        )
        return 1
    print(f"{logdir}: {tag!r} has {expected} scalars ({len(files)} event file(s))")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
