"""A word-level language model trainer written for PyTorch (LSTM, or a TransformerEncoder with a causal mask),
on a synthetic corpus from a small Markov chain: batchify/get_batch, repackage_hidden, clip_grad_norm_, manual
SGD through p.data, perplexity under no_grad. Prints the final validation loss as JSON.

    python word_lm.py [LSTM|Transformer]
"""
import json
import math
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.2, tie_weights=True):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            self.decoder.weight = self.encoder.weight
        self.nhid, self.nlayers = nhid, nlayers
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output).view(-1, self.decoder.out_features)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=512):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0).transpose(0, 1))

    def forward(self, x):
        return self.dropout(x + self.pe[:x.size(0), :])


class TransformerModel(nn.Transformer):
    def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.2):
        super().__init__(d_model=ninp, nhead=nhead, dim_feedforward=nhid, num_encoder_layers=nlayers)
        self.src_mask = None
        self.pos_encoder = PositionalEncoding(ninp, dropout)
        self.input_emb = nn.Embedding(ntoken, ninp)
        self.ninp = ninp
        self.decoder = nn.Linear(ninp, ntoken)

    def forward(self, src, has_mask=True):
        if has_mask and (self.src_mask is None or self.src_mask.size(0) != len(src)):
            self.src_mask = nn.Transformer.generate_square_subsequent_mask(len(src))
        src = self.pos_encoder(self.input_emb(src) * math.sqrt(self.ninp))
        output = self.encoder(src, mask=self.src_mask)
        return F.log_softmax(self.decoder(output), dim=-1)


def corpus(n, ntoken, seed):
    # each word is followed by one of two successors: an entropy of about log(2) per word once learnt
    rng = np.random.default_rng(seed)
    succ = np.random.default_rng(123).integers(0, ntoken, (ntoken, 2))
    ids = np.empty(n, np.int64)
    ids[0] = 0
    for i in range(1, n):
        ids[i] = succ[ids[i - 1], rng.integers(0, 2)]
    return torch.from_numpy(ids)


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].view(-1)


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def main():
    kind = sys.argv[1] if len(sys.argv) > 1 else "LSTM"
    torch.manual_seed(1111)
    ntoken, bptt, lr, clip = 12, 16, 10.0 if kind == "LSTM" else 1.0, 0.5
    train_data, val_data = batchify(corpus(3200, ntoken, 0), 10), batchify(corpus(800, ntoken, 1), 10)
    if kind == "LSTM":
        model = RNNModel(ntoken, 24, 24, 1, dropout=0.0)
    else:
        model = TransformerModel(ntoken, 24, 2, 48, 1, dropout=0.0)
    criterion = nn.NLLLoss()

    def evaluate(source):
        model.eval()
        total = 0.0
        hidden = model.init_hidden(10) if kind == "LSTM" else None
        with torch.no_grad():
            for i in range(0, source.size(0) - 1, bptt):
                data, targets = get_batch(source, i, bptt)
                if kind == "LSTM":
                    output, hidden = model(data, hidden)
                    hidden = repackage_hidden(hidden)
                else:
                    output = model(data).view(-1, ntoken)
                total += len(data) * criterion(output, targets).item()
        return total / (len(source) - 1)

    first = evaluate(val_data)
    for _epoch in range(6):
        model.train()
        hidden = model.init_hidden(10) if kind == "LSTM" else None
        for i in range(0, train_data.size(0) - 1, bptt):
            data, targets = get_batch(train_data, i, bptt)
            model.zero_grad()
            if kind == "LSTM":
                hidden = repackage_hidden(hidden)
                output, hidden = model(data, hidden)
            else:
                output = model(data).view(-1, ntoken)
            loss = criterion(output, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)
    val = evaluate(val_data)
    print(json.dumps({"first_loss": first, "loss": val, "ppl": math.exp(val)}))


if __name__ == "__main__":
    main()
