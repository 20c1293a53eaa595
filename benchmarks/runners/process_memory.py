"""The memory of this process as the benchmark runners report it, in MiB, from
/proc/self/status (Linux): VmHWM, the peak resident memory so far, and VmRSS, the resident."""


def process_status_mib(key):
    """One `kB` field of /proc/self/status, in MiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(f"{key}:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def peak_mib():
    return process_status_mib("VmHWM")


def resident_mib():
    return process_status_mib("VmRSS")


def inference_measures(before_open_mib, open_peak_mib, open_mib):
    """The memory fields of embed-measure.mjs's line: `nodeMiB` (named as there: here the
    interpreter with its packages imported, before opening the model), after opening, and now."""
    return {
        "nodeMiB": before_open_mib, "openPeakMiB": open_peak_mib, "openMiB": open_mib,
        "peakMiB": peak_mib(), "afterMiB": resident_mib(),
    }
