"""flow-dist in a process started without a launcher: a world of one, and the plugin wiring."""
import pytest

import oneflow as flow


def test_names_are_attached():
    import oneflow_dist

    assert flow.env.__name__ == "oneflow_dist.env" and flow.comm.__name__ == "oneflow_dist.comm"
    import oneflow.distributed as dist

    assert dist.is_available() and dist.__name__ == "oneflow_dist.distributed"
    assert flow.nn.parallel.DistributedDataParallel.__module__ == "oneflow_dist.ddp"
    assert flow.placement is oneflow_dist.placement.placement
    import oneflow.distributed.launch as launch

    assert launch.main is oneflow_dist.launcher.main


def test_world_of_one():
    assert (flow.env.get_rank(), flow.env.get_world_size(), flow.env.get_local_rank(), flow.env.get_node_size()) == \
        (0, 1, 0, 1)
    flow.env.init_rdma()
    assert flow.env.rdma_is_initialized()
    x = flow.tensor([1.0, 2.0])
    flow.comm.all_reduce(x)
    assert x.tolist() == [1.0, 2.0]
    out = [flow.empty(2)]
    flow.comm.all_gather(out, x)
    assert out[0].tolist() == [1.0, 2.0]
    flow.env.barrier()


def test_distributed_needs_init_then_works():
    import oneflow.distributed as dist

    assert not dist.is_initialized()
    with pytest.raises(ValueError, match="init_process_group"):
        dist.get_world_size()
    with pytest.raises(RuntimeError, match="only supported with GPUs"):
        dist.init_process_group("nccl")
    with pytest.raises(ValueError, match="world_size=2"):
        dist.init_process_group(world_size=2)
    with pytest.raises(ValueError, match="Invalid backend"):
        dist.init_process_group("tcp")
    dist.init_process_group()
    try:
        t = flow.tensor([3.0])
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        assert t.item() == 3.0 and dist.get_world_size() == 1 and dist.get_rank() == 0
    finally:
        dist.destroy_process_group()
    assert not dist.is_initialized()


def test_placement_values():
    p = flow.placement("cpu", ranks=[0])
    assert p == flow.placement("cpu", [0]) and hash(p) == hash(flow.placement("cpu", range(1)))
    assert p.type == "cpu" and p.ranks.tolist() == [0] and p.hierarchy == flow.Size([1])
    assert repr(p) == 'oneflow.placement(type="cpu", ranks=[0])'
    assert flow.placement("cpu", [[0]]).hierarchy == flow.Size([1, 1]) and flow.placement("cpu", [[0]]) != p
    assert flow.env.all_device_placement("cpu") == p
    with pytest.raises(ValueError, match="outside the world"):
        flow.placement("cpu", ranks=[0, 1])
    with pytest.raises(ValueError, match="unknown device type"):
        flow.placement("tpu", ranks=[0])
    with pytest.raises(ValueError, match="rectangular"):
        flow.placement("cpu", ranks=[[0], [1, 2]])
    with pytest.raises(TypeError, match="integers"):
        flow.placement("cpu", ranks=[0.5])


def test_ddp_in_a_world_of_one_is_the_module():
    flow.manual_seed(0)
    net = flow.nn.Linear(3, 2)
    ddp = flow.nn.parallel.DistributedDataParallel(net)
    x = flow.randn(4, 3)
    ddp(x).sum().backward()
    w = net.weight.grad.numpy().copy()
    net.weight.grad = None
    net.bias.grad = None
    net(x).sum().backward()
    assert (net.weight.grad.numpy() == w).all()
    assert list(ddp.state_dict()) == ["module.weight", "module.bias"]
    with pytest.raises(TypeError, match="nn.Module"):
        flow.nn.parallel.DistributedDataParallel(lambda x: x)
    with pytest.raises(ValueError, match="bucket_size"):
        flow.nn.parallel.DistributedDataParallel(net, bucket_size=0)


def test_sbp_values():
    import pickle

    s = flow.sbp
    assert s.split(0) == s.split(0) and s.split(0) != s.split(1) and hash(s.split(1)) == hash(s.split(1))
    assert s.broadcast != s.partial_sum and s.partial_sum != s.partial_max and s.split(0) != s.broadcast
    assert repr(s.split(1)) == "oneflow.sbp.split(dim=1)" and repr(s.broadcast) == "oneflow.sbp.broadcast"
    assert repr(s.partial_sum) == "oneflow.sbp.partial_sum" and repr(s.partial_max) == "oneflow.sbp.partial_max"
    assert s.split(2).dim == 2 and s.split(2).is_split() and s.broadcast.is_broadcast() and s.partial_max.is_partial()
    assert isinstance(s.broadcast, s.sbp) and pickle.loads(pickle.dumps(s.split(3))) == s.split(3)
    assert len({(s.broadcast, s.split(0)), (s.broadcast, s.split(0)), (s.split(0), s.broadcast)}) == 2  # nd-sbp
    with pytest.raises(ValueError, match="non-negative"):
        s.split(-1)
    with pytest.raises(TypeError, match="must be an int"):
        s.split(1.0)
    with pytest.raises(TypeError, match="must be an int"):
        s.split(True)
    import oneflow.sbp as sbp_module

    assert sbp_module is s


def test_placement_all_and_pickle():
    import pickle

    p = flow.placement.all("cpu")
    assert p == flow.placement("cpu", [0]) and pickle.loads(pickle.dumps(p)) == p
    assert {p: 1}[flow.placement("cpu", ranks=[0])] == 1
    with pytest.raises(TypeError, match="must be a str"):
        flow.placement(0, ranks=[0])
    with pytest.raises(ValueError, match="not be empty"):
        flow.placement("cpu", ranks=[])


def test_flowrun_without_mpiexec_says_what_to_install(tmp_path, monkeypatch, capsys):
    from oneflow_dist import launcher

    script = tmp_path / "s.py"
    script.write_text("")
    monkeypatch.setenv("FLOWRUN_MPIEXEC", str(tmp_path / "missing"))
    assert launcher.main(["--nproc", "2", str(script)]) == 1
    assert "FLOWRUN_MPIEXEC" in capsys.readouterr().err


def test_the_mpi_engine_implements_the_interface():
    from oneflow_dist import _world
    from oneflow_dist._comm import Communicator

    assert isinstance(_world.world(), Communicator)
    assert not getattr(type(_world.world()), "__abstractmethods__", None)
