"""Recurrent layers against PyTorch: training steps (forward, backward, SGD) and inference of LSTM/GRU models,
timed in one process in alternating rounds (each figure is the best round; the ratio is what means much on a
shared machine).

    python bench/bench_rnn.py [name ...]      # all cases, or the named ones
"""
import sys

import numpy as np

from common import best_time, flow, report, torch

ROUNDS = 5


def build(L, case):
    """A zero-argument step for framework L, built on the same weights and data for either framework."""
    kind, layers, in_size, hidden, seq, batch, train, bidir, packed = CASES[case]
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((batch, seq, in_size)).astype(np.float32)
    L.manual_seed(0)
    model = getattr(L.nn, kind)(in_size, hidden, num_layers=layers, batch_first=True, bidirectional=bidir)
    x = L.tensor(x_np)
    lengths = L.tensor(np.sort(rng.integers(seq // 2, seq + 1, batch))[::-1].copy())
    pack = L.nn.utils.rnn.pack_padded_sequence

    def forward():
        out = model(pack(x, lengths, batch_first=True) if packed else x)[0]
        return out.data if packed else out

    if not train:
        model.eval()

        def infer():
            with L.no_grad():
                forward()
        return infer
    opt = L.optim.SGD(model.parameters(), lr=0.01)

    def step():
        loss = forward().pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


# name -> (cell, layers, input size, hidden size, sequence length, batch, train?, bidirectional?, packed?)
CASES = {
    "lstm_train": ("LSTM", 2, 128, 256, 64, 32, True, False, False),
    "gru_train": ("GRU", 2, 128, 256, 64, 32, True, False, False),
    "bilstm_packed_train": ("LSTM", 1, 128, 256, 48, 32, True, True, True),
    "lstm_infer": ("LSTM", 1, 256, 512, 32, 16, False, False, False),
    "gru_infer_b1": ("GRU", 2, 64, 128, 100, 1, False, False, False),
}


def main(names):
    for name in names:
        steps = {"oneflow": build(flow, name), "torch": build(torch, name)}
        best = {fw: float("inf") for fw in steps}
        for _ in range(ROUNDS):
            for fw, fn in steps.items():
                best[fw] = min(best[fw], best_time(fn, repeat=1))
        kind, layers, _, hidden, seq, batch, train, bidir, packed = CASES[name]
        label = (f"{'bi' if bidir else ''}{kind} {layers}x{hidden} seq{seq} b{batch} {'train' if train else 'infer'}"
                 f"{' packed' if packed else ''}")
        report(label, best["oneflow"], best["torch"], unit="ms", scale=1e3)


if __name__ == "__main__":
    chosen = sys.argv[1:] or list(CASES)
    unknown = [n for n in chosen if n not in CASES]
    if unknown:
        sys.exit(f"unknown case(s) {unknown}; choose from {list(CASES)}")
    main(chosen)
