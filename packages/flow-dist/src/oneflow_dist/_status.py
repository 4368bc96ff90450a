"""How the launcher learns which rank failed first and how: each rank's keeper (``_worker``) writes one small
JSON file into the job's status directory when its rank ends badly."""
import json
import os
import time


def write(status_dir, rank, code, signum, stopped):
    """Records that ``rank`` ended with exit ``code`` (``signum``: killed by that signal; ``stopped``: because
    the launcher or hydra told it to stop, so it is not the cause of the failure)."""
    path = os.path.join(status_dir, f"rank{rank}.json")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"rank": rank, "code": code, "signal": signum, "stopped": stopped, "time": time.time()}, f)
    os.replace(tmp, path)  # atomic: the launcher never reads half a file


def write_pid(status_dir, rank, pid):
    """Records the pid of ``rank``'s process, which the launcher signals to stop the job."""
    path = os.path.join(status_dir, f"rank{rank}.pid")
    with open(path + ".tmp", "w") as f:
        f.write(str(pid))
    os.replace(path + ".tmp", path)


def rank_pids(status_dir):
    """The pids of the ranks started so far."""
    pids = []
    for name in os.listdir(status_dir):
        if name.endswith(".pid"):
            try:
                with open(os.path.join(status_dir, name)) as f:
                    pids.append(int(f.read()))
            except (OSError, ValueError):
                continue
    return pids


def mark_stopping(status_dir):
    """Notes that the launcher is stopping the job: ranks that end from now on were stopped, not failing."""
    open(os.path.join(status_dir, "stopping"), "w").close()


def stopping(status_dir):
    return os.path.exists(os.path.join(status_dir, "stopping"))


def read_all(status_dir):
    """The records written so far, earliest first."""
    out = []
    try:
        names = os.listdir(status_dir)
    except FileNotFoundError:
        return out
    for name in names:
        if name.endswith(".json"):
            try:
                with open(os.path.join(status_dir, name)) as f:
                    out.append(json.load(f))
            except (OSError, ValueError):
                continue
    return sorted(out, key=lambda r: r["time"])


def first_failure(status_dir):
    """The earliest record of a rank that failed by itself (not one that was stopped), or None."""
    for r in read_all(status_dir):
        if not r["stopped"]:
            return r
    return None
