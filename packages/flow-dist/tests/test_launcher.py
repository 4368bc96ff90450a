"""flowrun and python -m oneflow.distributed.launch: environment, arguments, failure modes, bad input."""
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from helpers import RANKS, flowrun_cmd, run


def _reports(d):
    return [json.loads((d / f"{r}.json").read_text()) for r in range(len(list(d.iterdir())))]


def test_ranks_get_their_environment_and_arguments(tmp_path):
    rc, out, err, _ = run(["--nproc", 3, RANKS / "report.py", "a", "--flag"], env={"REPORT_DIR": str(tmp_path)})
    assert rc == 0, err
    reps = _reports(tmp_path)
    assert len(reps) == 3
    assert [d["env"]["RANK"] for d in reps] == ["0", "1", "2"]
    assert [d["env"]["LOCAL_RANK"] for d in reps] == ["0", "1", "2"]
    for d in reps:
        assert d["env"]["WORLD_SIZE"] == "3" and d["env"]["LOCAL_WORLD_SIZE"] == "3"
        assert d["env"]["MASTER_ADDR"] == "127.0.0.1" and int(d["env"]["MASTER_PORT"]) > 0
        assert d["argv"] == ["a", "--flag"]


def test_oneflow_launch_module_takes_oneflows_flags(tmp_path):
    cmd = [sys.executable, "-m", "oneflow.distributed.launch"]
    port = _free_port()
    rc, out, err, _ = run(["--nproc_per_node", 2, "--master_port", port, RANKS / "report.py"], cmd=cmd,
                          env={"REPORT_DIR": str(tmp_path)})
    assert rc == 0, err
    assert [(d["env"]["WORLD_SIZE"], d["env"]["MASTER_PORT"]) for d in _reports(tmp_path)] == [("2", str(port))] * 2


def test_module_and_executable_targets(tmp_path):
    rc, out, err, _ = run(["--nproc", 2, "-m", "report", "x"],
                          env={"REPORT_DIR": str(tmp_path), "PYTHONPATH": os.pathsep.join([str(RANKS),
                                                                                            os.environ.get("PYTHONPATH", "")])})
    assert rc == 0, err
    assert [d["argv"] for d in _reports(tmp_path)] == [["x"], ["x"]]
    rc, out, err, _ = run(["--nproc", 2, "--no-python", "sh", "-c", "exit $((RANK * 3))"])
    assert rc == 3 and "rank 1 exited with code 3" in err


@pytest.mark.parametrize("mode,code,words", [
    ("raise", 1, "[rank 1]: ValueError: rank one failed on purpose"),
    ("exit", 7, "rank 1 exited with code 7"),
    ("sysexit", 5, "rank 1 exited with code 5"),
    ("kill", 128 + signal.SIGKILL, "[rank 1]: killed by signal 9 (SIGKILL)"),
])
def test_a_failing_rank_stops_the_job_with_its_code(mode, code, words):
    # rank 0 waits in a collective that rank 1 never joins: the launcher must not hang on it
    rc, out, err, secs = run(["--nproc", 2, RANKS / "fail.py", mode], timeout=60)
    assert rc == code, err
    assert words in err
    assert secs < 30
    if mode == "raise":
        assert "[rank 1]: Traceback (most recent call last):" in err and "_bootstrap" not in err
    assert err.rstrip().endswith("the other ranks were stopped"), err  # the launcher's verdict comes last


@pytest.mark.parametrize("signum,code,words", [(signal.SIGINT, 130, "KeyboardInterrupt"),
                                               (signal.SIGTERM, 143, "stopped by SIGTERM")])
def test_ctrl_c_or_sigterm_stops_every_rank(signum, code, words):
    p = subprocess.Popen(flowrun_cmd() + ["--nproc", "2", str(RANKS / "fail.py"), "hang"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        pids, deadline = [], time.monotonic() + 60
        while len(pids) < 2 and time.monotonic() < deadline:
            line = p.stdout.readline()
            if "ready" in line:
                pids.append(int(line.split()[3]))
        assert len(pids) == 2
        t0 = time.monotonic()
        p.send_signal(signum)
        rc = p.wait(timeout=30)
        assert rc == code and time.monotonic() - t0 < 30
        assert words in p.stderr.read()
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(pid) for pid in pids)
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended, only not reaped yet
    except FileNotFoundError:
        return False


def test_missing_script():
    rc, out, err, _ = run(["--nproc", 2, "no_such_script.py"])
    assert rc == 2 and "can't open file" in err and "no_such_script.py" in err


def test_port_in_use(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        rc, out, err, _ = run(["--nproc", 2, "--master-port", port, RANKS / "report.py"],
                              env={"REPORT_DIR": str(tmp_path)})
    assert rc == 1 and f"--master-port {port} is in use" in err


@pytest.mark.parametrize("args,words", [
    (["--nproc", 0], "--nproc must be at least 1"),
    (["--nnodes", 2, "--node-rank", 2], "--node-rank must be in [0, 2)"),
    (["--master-port", 70000], "--master-port must be in [1, 65535]"),
])
def test_bad_arguments(args, words):
    rc, out, err, _ = run([*args, RANKS / "report.py"])
    assert rc == 1 and words in err


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _two_nodes(script, *args, timeout=90):
    port = _free_port()
    common = ["--nnodes", 2, "--nproc", 2, "--master-port", port]
    node1 = subprocess.Popen(flowrun_cmd() + [str(a) for a in [*common, "--node-rank", 1, script, *args]],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        rc0, out0, err0, _ = run([*common, "--node-rank", 0, script, *args], timeout=timeout)
        out1, err1 = node1.communicate(timeout=timeout)
        return (rc0, out0, err0), (node1.returncode, out1, err1)
    finally:
        try:
            os.killpg(node1.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_two_nodes_on_one_machine_form_one_world():
    (rc0, out0, err0), (rc1, out1, err1) = _two_nodes(RANKS / "collectives.py")
    assert rc0 == 0 and rc1 == 0, err0 + err1
    assert out0.count("collectives ok") == 2 and "rank 2: collectives ok" in out1 and "rank 3" in out1


def test_a_failure_on_one_node_stops_the_other():
    (rc0, _, err0), (rc1, _, err1) = _two_nodes(RANKS / "fail.py", "raise")
    assert rc0 == 1 and "[rank 1]: ValueError" in err0
    assert rc1 == 1 and "failed on another node" in err1
