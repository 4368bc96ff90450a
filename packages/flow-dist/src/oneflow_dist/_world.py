"""The process's place in the job: rank and sizes (from the launcher's environment), and the world
communicator, created at first use.

Under ``flowrun`` on one node the world is MPI's COMM_WORLD of the hydra job. With several nodes each node's
launcher runs its own hydra job, and the node worlds are joined here into one, in node order, by MPI's
connect/accept: the port names travel through the launcher's rendezvous at MASTER_ADDR:MASTER_PORT
(``_store``). A process not started by a launcher is a world of one.
"""
import os
import threading

_lock = threading.Lock()
_JOIN_TIMEOUT_S = float(os.environ.get("FLOWRUN_JOIN_TIMEOUT", "300"))
_world = None


def _env_int(*names, default):
    for n in names:
        v = os.environ.get(n)
        if v is not None and v != "":
            return int(v)
    return default


def rank():
    return _env_int("RANK", "PMI_RANK", default=0)


def world_size():
    return _env_int("WORLD_SIZE", "PMI_SIZE", default=1)


def local_rank():
    return _env_int("LOCAL_RANK", "MPI_LOCALRANKID", default=0)


def local_world_size():
    return _env_int("LOCAL_WORLD_SIZE", "MPI_LOCALNRANKS", default=world_size())


def node_size():
    """The number of nodes of the job."""
    return _env_int("FLOWRUN_NNODES", default=max(1, world_size() // max(1, local_world_size())))


def world():
    """The world communicator (created on first call; every rank must call it, as any collective)."""
    global _world
    if _world is None:
        with _lock:
            if _world is None:
                _world = _create()
    return _world


def initialized():
    return _world is not None


def _create():
    from mpi4py import MPI

    from ._comm.mpi import MPICommunicator

    comm = MPI.COMM_WORLD
    nnodes = _env_int("FLOWRUN_NNODES", default=1)
    if nnodes > 1:
        comm = _join_nodes(comm, nnodes)
    if comm.Get_size() != world_size() or comm.Get_rank() != rank():
        raise RuntimeError(f"the MPI world (rank {comm.Get_rank()} of {comm.Get_size()}) does not match the "
                           f"environment (RANK={rank()}, WORLD_SIZE={world_size()}): was this process started by "
                           f"another launcher?")
    return MPICommunicator(comm, range(comm.Get_size()))


def _join_nodes(local, nnodes):
    from mpi4py import MPI

    from ._store import StoreClient

    node = _env_int("FLOWRUN_NODE_RANK", default=0)
    store = StoreClient(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]))
    try:
        comm = local
        if node > 0:  # node k joins the world of nodes 0..k-1
            port = None
            if local.Get_rank() == 0:
                try:
                    port = store.get(f"mpi-port-{node}", timeout=_JOIN_TIMEOUT_S)
                except TimeoutError:
                    raise RuntimeError(f"node {node} could not join the job: the nodes before it did not get "
                                       f"ready within {_JOIN_TIMEOUT_S:.0f} s (is every node's flowrun running, "
                                       f"with the same --nnodes?)") from None
            comm = comm.Connect(port, root=0).Merge(high=True)
        for k in range(node + 1, nnodes):  # then admits each node after it
            port = None
            if comm.Get_rank() == 0:
                port = MPI.Open_port()
                store.set(f"mpi-port-{k}", port)
            comm = comm.Accept(port, root=0).Merge(high=False)
            if comm.Get_rank() == 0:
                MPI.Close_port(port)
    finally:
        store.close()
    return comm


def reset():
    """Forgets the world communicator (``destroy_process_group``)."""
    global _world
    _world = None
