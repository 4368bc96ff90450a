"""Trains DLRM on synthetic Criteo-shaped data with a sharded OneEmbedding; prints AUC and lookups/s.

    flowrun --nproc 1 examples/dlrm/train.py
    flowrun --nproc 2 examples/dlrm/train.py

On N ranks each rank trains on its 1/N of every global batch: the dense part under DistributedDataParallel,
the 26 embedding tables sharded over the ranks (an id lives on one rank). A job on N ranks trains the same
model as one on 1 rank, up to rounding.
"""
import argparse
import os
import tempfile
import time

import numpy as np

import oneflow as flow

import data
from model import DenseArch, make_embedding


def parse():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch-size", type=int, default=2048, help="global batch (split over the ranks)")
    p.add_argument("--embedding-dim", type=int, default=16)
    p.add_argument("--cardinality", type=int, default=100_000, help="ids of the largest table")
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--eval-size", type=int, default=16384)
    p.add_argument("--store", choices=["mem", "ssd"], default="mem")
    p.add_argument("--cache-mb", type=float, default=64, help="RAM cache of the ssd store, per rank")
    p.add_argument("--persistent-path", default=None, help="folder of the tables (default: a temporary one)")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


def store_options(args, path):
    cards = sum(data.cardinalities(args.cardinality))
    if args.store == "mem":
        return flow.one_embedding.make_device_mem_store_options(path, capacity=cards, size_factor=3)
    return flow.one_embedding.make_cached_ssd_store_options(args.cache_mb, path, capacity=cards, size_factor=3)


def shard(a, rank, world):
    per = a.shape[0] // world
    return a[rank * per:(rank + 1) * per]


def evaluate(dense_arch, emb, args, cards, rank, world):
    """AUC and mean log-loss over a held-out set (each rank scores its share; rank 0 gets every score)."""
    d, s, y = data.batch(args.seed, data.EVAL_STEP, args.eval_size - args.eval_size % world, cards)
    d, s, y = (shard(a, rank, world) for a in (d, s, y))
    with flow.no_grad():
        logits = dense_arch(flow.tensor(d), emb(flow.tensor(s)))
    both = flow.tensor(np.stack([logits.numpy(), y]).astype(np.float32))
    if world > 1:
        parts = [flow.empty_like(both) for _ in range(world)]
        flow.comm.all_gather(parts, both)
        both = flow.cat(parts, dim=1)
    z, y = both.numpy()
    p = 1.0 / (1.0 + np.exp(-z))
    logloss = float(-np.mean(y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12)))
    return data.auc(y, z), logloss


def main():
    args = parse()
    rank, world = flow.env.get_rank(), flow.env.get_world_size()
    if args.batch_size % world:
        raise SystemExit(f"--batch-size {args.batch_size} must be divisible by the {world} ranks")
    cards = data.cardinalities(args.cardinality)
    flow.manual_seed(args.seed)  # the same dense weights on every rank (DDP also broadcasts rank 0's)
    dense_arch = DenseArch(data.NUM_DENSE, data.NUM_SPARSE, args.embedding_dim)
    model = flow.nn.parallel.DistributedDataParallel(dense_arch)
    with tempfile.TemporaryDirectory() as tmp:
        emb = make_embedding(args.embedding_dim, data.NUM_SPARSE, store_options(args, args.persistent_path or tmp),
                             args.seed)
        opt = flow.optim.Adam([*model.parameters(), *emb.parameters()], lr=args.lr)
        loss_fn = flow.nn.BCEWithLogitsLoss()
        train_time, lookups = 0.0, 0
        for step in range(1, args.steps + 1):
            d, s, y = (shard(a, rank, world) for a in data.batch(args.seed, step, args.batch_size, cards))
            t0 = time.perf_counter()
            opt.zero_grad()
            loss = loss_fn(model(flow.tensor(d), emb(flow.tensor(s))), flow.tensor(y))
            loss.backward()
            opt.step()
            train_time += time.perf_counter() - t0
            lookups += args.batch_size * data.NUM_SPARSE  # every rank's ids
            if step % args.eval_every == 0 or step == args.steps:
                auc, logloss = evaluate(dense_arch, emb, args, cards, rank, world)
                train_loss = loss.detach().reshape(1).clone()
                if world > 1:  # the global batch's mean loss
                    flow.comm.all_reduce(train_loss)
                    train_loss /= world
                if rank == 0:
                    print(f"step {step:5d}  train loss {train_loss.item():.5f}  eval AUC {auc:.4f}  eval logloss "
                          f"{logloss:.5f}  lookups/s {lookups / train_time:,.0f}", flush=True)
        if rank == 0:
            print(f"done: {world} rank(s), {args.steps} steps of {args.batch_size}, {emb.num_rows()} rows on rank 0, "
                  f"{lookups / train_time:,.0f} lookups/s (OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '-')})",
                  flush=True)


if __name__ == "__main__":
    main()
