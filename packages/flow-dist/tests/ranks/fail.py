"""Rank 1 fails in the way argv[1] says while rank 0 waits in a collective that rank 1 never joins."""
import os
import signal
import sys
import time

import oneflow as flow

mode = sys.argv[1]
rank = flow.env.get_rank()
x = flow.ones(4)
flow.comm.all_reduce(x)  # the world is up on every rank
print(f"rank {rank} pid {os.getpid()} ready", flush=True)
if rank == 1:
    time.sleep(0.5)
    if mode == "raise":
        raise ValueError("rank one failed on purpose")
    if mode == "exit":
        os._exit(7)
    if mode == "sysexit":
        sys.exit(5)
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "hang":
        time.sleep(600)
flow.comm.all_reduce(x)  # rank 0 hangs here: rank 1 never comes
time.sleep(600)
