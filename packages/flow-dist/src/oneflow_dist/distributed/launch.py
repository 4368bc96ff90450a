"""``python -m oneflow.distributed.launch --nproc_per_node N [--nnodes M --node_rank R --master_addr A
--master_port P] script.py args...``: OneFlow's launcher command line, the same launcher as ``flowrun``."""
import sys

from oneflow_dist.launcher import main  # absolute: run as oneflow.distributed.launch, the package differs

if __name__ == "__main__":
    sys.exit(main(prog="python -m oneflow.distributed.launch"))
