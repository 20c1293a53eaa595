#!/usr/bin/env bash
# Installs SLURM (slurm-wlm) and munge for the SLURM tests when they are missing and we are root.
# Quiet: prints one line saying what it did, or why it did nothing. Exits 1 only if apt-get failed.
set -uo pipefail

missing=()
for cmd in slurmctld slurmd sbatch srun squeue scancel scontrol sinfo munged munge; do
  if ! command -v "$cmd" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$cmd" ] && [ ! -x "/sbin/$cmd" ]; then
    missing+=("$cmd")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "provision-slurm: slurm-wlm and munge are already installed; nothing to do"
  exit 0
fi
if [ "${EUID:-$(id -u)}" != 0 ]; then
  echo "provision-slurm: ${missing[*]} missing, but not root: nothing installed (the real-cluster SLURM tests will be skipped)"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "provision-slurm: ${missing[*]} missing and no apt-get here: install slurm-wlm and munge with the system's package manager"
  exit 0
fi

log=$(mktemp)
export DEBIAN_FRONTEND=noninteractive
start=$(date +%s)
if apt-get update -qq >"$log" 2>&1 && apt-get install -y -qq slurm-wlm munge >>"$log" 2>&1; then
  echo "provision-slurm: installed slurm-wlm and munge with apt-get in $(($(date +%s) - start)) s (were missing: ${missing[*]})"
  rm -f "$log"
  exit 0
fi
echo "provision-slurm: apt-get install slurm-wlm munge failed; its last lines:" >&2
tail -n 20 "$log" >&2
rm -f "$log"
exit 1
