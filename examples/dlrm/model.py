"""DLRM (Naumov et al., 2019): a bottom MLP over the dense features, one embedding row per categorical
feature, pairwise dot products of all those vectors, and a top MLP over them to a click logit.

The dense part (:class:`DenseArch`) is what data parallelism replicates; the embedding is a
``flow.one_embedding.MultiTableEmbedding`` with one table per feature, which shards itself over the ranks.
"""
import numpy as np

import oneflow as flow
from oneflow import nn


def mlp(sizes, last_relu):
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b))
        if last_relu or i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class DenseArch(nn.Module):
    """Bottom MLP, dot interaction, top MLP: ``forward(dense (B, 13), emb (B, 26, D)) -> logits (B,)``."""

    def __init__(self, num_dense, num_sparse, dim, bottom=(64, 32), top=(64, 32)):
        super().__init__()
        self.bottom = mlp([num_dense, *bottom, dim], last_relu=True)
        n = num_sparse + 1
        i, j = np.triu_indices(n, k=1)  # each pair of vectors once, no self products
        self.register_buffer("pairs", flow.tensor((i * n + j).astype(np.int64)), persistent=False)
        self.top = mlp([dim + len(i), *top, 1], last_relu=False)

    def forward(self, dense, emb):
        x = self.bottom(dense)
        t = flow.cat([x.unsqueeze(1), emb], dim=1)  # (B, 27, D)
        z = flow.bmm(t, t.transpose(1, 2)).flatten(1)
        inter = flow.index_select(z, 1, self.pairs)
        return self.top(flow.cat([x, inter], dim=1)).squeeze(1)


def make_embedding(dim, num_sparse, store_options, seed):
    tables = [flow.one_embedding.make_table_options(flow.one_embedding.make_uniform_initializer(-0.05, 0.05))
              for _ in range(num_sparse)]
    return flow.one_embedding.MultiTableEmbedding("sparse", dim, flow.float32, flow.int64, tables, store_options,
                                                  seed=seed)
