"""Reads a job's progress with experimaestro's own code, as its monitors do: from the job's
status.json (MockJob.from_disk) and by replaying its event files (JobProgressEvent), the live
ones under WS/.events/jobs and the archive in the job's .experimaestro/events.

    python experimaestro-progress.py JOB_DIR     (prints a JSON object)
"""
import json
import sys
from pathlib import Path

from experimaestro.scheduler.state_provider import MockJob
from experimaestro.scheduler.state_status import EventBase, task_id_hash

job_dir = Path(sys.argv[1]).resolve()
job_id, task_id = job_dir.name, job_dir.parent.name
workspace = job_dir.parent.parent.parent

from_status = MockJob.from_disk(job_dir, task_id, job_id)

replayed = MockJob(identifier=job_id, task_id=task_id, path=job_dir, state="unscheduled",
                   starttime=None, endtime=None, progress=[], updated_at="")
archive = sorted((job_dir / ".experimaestro" / "events").glob("event-*.jsonl"), key=lambda p: int(p.stem.split("-")[1]))
live = sorted((workspace / ".events" / "jobs").glob(f"{task_id_hash(task_id)}-{job_id}-*.jsonl"))
kinds = []
for file in archive:
    for line in file.read_text().splitlines():
        if line.strip():
            event = EventBase.from_dict(json.loads(line))
            kinds.append(type(event).__name__)
            replayed.apply_event(event)


def levels(job):
    return [{"level": p.level, "desc": p.desc, "progress": p.progress} for p in job.progress]


print(json.dumps({
    "state": str(from_status.state),
    "status_progress": levels(from_status),
    "events_progress": levels(replayed),
    "event_kinds": kinds,
    "live_files": [p.name for p in live],
}))
