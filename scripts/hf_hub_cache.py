"""Python's huggingface_hub on a Hugging Face cache (HF_HUB_CACHE): fill it, list it, read it.

Run through scripts/hf-hub-python.sh, which provides the environment.
"""
import json
import sys

from huggingface_hub import hf_hub_download, scan_cache_dir


def fill(repo_id, *files):
    """Downloads each file from HF_ENDPOINT into the cache, by huggingface_hub's own code."""
    for name in files:
        print(hf_hub_download(repo_id, name))


def scan():
    """What scan_cache_dir() finds, as JSON: repos, their revisions, refs and files."""
    info = scan_cache_dir()
    repos = []
    for repo in sorted(info.repos, key=lambda r: r.repo_id):
        revisions = []
        for revision in sorted(repo.revisions, key=lambda r: r.commit_hash):
            files = sorted(str(f.file_path.relative_to(revision.snapshot_path)) for f in revision.files)
            revisions.append({"commit": revision.commit_hash, "refs": sorted(revision.refs), "files": files})
        repos.append({"id": repo.repo_id, "type": repo.repo_type, "size": repo.size_on_disk, "revisions": revisions})
    warnings = [str(w) for w in info.warnings]
    print(json.dumps({"repos": repos, "warnings": warnings}))


def read(repo_id, name, revision="main"):
    """The file's path as hf_hub_download finds it in the cache, without a request."""
    print(hf_hub_download(repo_id, name, revision=revision, local_files_only=True))


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    {"fill": fill, "scan": scan, "read": read}[command](*args)
