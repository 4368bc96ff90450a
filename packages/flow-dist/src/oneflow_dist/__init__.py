"""flow-dist: the distributed layer of oneflow (``import oneflow_dist``; its names appear in ``oneflow``).

- ``flowrun`` / ``python -m oneflow.distributed.launch``: the launcher (:mod:`oneflow_dist.launcher`);
- ``oneflow.env``: rank, world size, barrier (:mod:`oneflow_dist.env`);
- ``oneflow.comm``: OneFlow's collectives on local tensors (:mod:`oneflow_dist.comm`);
- ``oneflow.distributed``: the ``torch.distributed``-shaped API (:mod:`oneflow_dist.distributed`);
- ``oneflow.nn.parallel.DistributedDataParallel`` (:mod:`oneflow_dist.ddp`).

Collectives run on communicators (:mod:`oneflow_dist._comm`): MPI (mpi4py over MPICH) for CPU tensors.
"""
__version__ = "0.1.0"
