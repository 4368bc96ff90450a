"""``python -m oneflow.distributed.launch --nproc_per_node N [--nnodes M --node_rank R --master_addr A
--master_port P] script.py args...``: OneFlow's launcher command line, the same launcher as ``flowrun``."""
import sys

from ..launcher import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m oneflow.distributed.launch"))
