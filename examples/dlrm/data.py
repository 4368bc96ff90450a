"""Synthetic Criteo-shaped click data: 13 dense features, 26 categorical features, a 0/1 label.

Batches are a pure function of (seed, step), so every rank can cut its share out of the same global batch and a
job on N ranks sees the data a one-rank job sees. The label carries a learnable signal: a logistic model of a few
dense features plus a fixed random effect per (feature, id) pair, which the embedding tables can learn.
"""
import numpy as np

NUM_DENSE, NUM_SPARSE = 13, 26
EVAL_STEP = 2**31  # the held-out batch: a step training never reaches


def cardinalities(base):
    """Criteo's tables range from a handful of values to millions of ids; ours span ``base // 100 .. base``."""
    return [max(4, int(base * f)) for f in np.geomspace(0.01, 1.0, NUM_SPARSE)]


def _effect(feature, ids, seed):
    # a fixed pseudo-random effect of each id (a hash, so nothing of table size is stored)
    h = (ids.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) ^ np.uint64((seed * 131 + feature) & 0xFFFFFFFF)
    h ^= h >> np.uint64(29)
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(32)
    return (h >> np.uint64(11)).astype(np.float64) / 2.0**53 * 2.0 - 1.0


def batch(seed, step, size, cards):
    """The global batch ``step`` of the data set ``seed``: dense (size, 13) float32, sparse (size, 26) int64,
    labels (size,) float32."""
    rng = np.random.default_rng([seed, step])
    dense = np.log1p(rng.exponential(3.0, (size, NUM_DENSE))).astype(np.float32)
    # zipf-like ids: a few ids are common, most are rare (as in click logs)
    u = rng.random((size, NUM_SPARSE))
    sparse = np.empty((size, NUM_SPARSE), np.int64)
    logit = 1.5 * (dense[:, 0] - dense[:, 1]) + 0.8 * (dense[:, 2] - 1.0)
    for f, card in enumerate(cards):
        sparse[:, f] = np.minimum((card * u[:, f] ** 3).astype(np.int64), card - 1)
        if f < 8:  # the first features carry the categorical signal
            logit = logit + 1.2 * _effect(f, sparse[:, f], seed)
    labels = (rng.random(size) < 1.0 / (1.0 + np.exp(-logit))).astype(np.float32)
    return dense, sparse, labels


def auc(labels, scores):
    """Area under the ROC curve (the Mann-Whitney statistic, ties counted half)."""
    labels = np.asarray(labels) > 0.5
    pos, neg = int(labels.sum()), int((~labels).sum())
    if pos == 0 or neg == 0:
        return float("nan")
    _, inverse, counts = np.unique(np.asarray(scores), return_inverse=True, return_counts=True)
    first = np.cumsum(counts) - counts  # 0-based rank of each distinct score's first occurrence
    ranks = (first + (counts + 1) / 2.0)[inverse.reshape(-1)]  # ties share their average rank
    return float((ranks[labels].sum() - pos * (pos + 1) / 2.0) / (pos * neg))
