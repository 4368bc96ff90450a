"""PyTorch modules of the kinds compile_from_torch meets, defined at module level against the real torch."""
import torch
import torch.nn as nn
import torch.nn.functional as F

SCALE = 0.5


class Residual(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        return x + self.branch(x)

    def branch(self, x):
        return F.gelu(self.fc(self.norm(x))) * SCALE


class ScaledResidual(Residual):  # super() in a subclass of a user class
    def __init__(self, dim, factor=2.0):
        super().__init__(dim)
        self.factor = factor

    def forward(self, x):
        return super().forward(x) * self.factor


class TinyLM(nn.Module):
    """Embedding + LSTM + tied decoder, with a ModuleList and a ModuleDict of heads."""

    def __init__(self, ntoken=20, dim=8):
        super().__init__()
        self.emb = nn.Embedding(ntoken, dim)
        self.rnn = nn.LSTM(dim, dim, num_layers=1, batch_first=True)
        self.blocks = nn.ModuleList([ScaledResidual(dim), Residual(dim)])
        self.heads = nn.ModuleDict({"act": nn.Tanh(), "drop": nn.Dropout(0.1)})
        self.decoder = nn.Linear(dim, ntoken)
        self.decoder.weight = self.emb.weight
        self.register_buffer("offset", torch.full((ntoken,), 0.25))

    def forward(self, idx):
        x, _ = self.rnn(self.emb(idx))
        for block in self.blocks:
            x = block(x)
        x = self.heads["drop"](self.heads["act"](x))
        return F.log_softmax(self.decoder(x) + self.offset, dim=-1)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                                      nn.MaxPool2d(2), nn.Conv2d(4, 6, 3, stride=2, bias=False), nn.LeakyReLU(0.1))
        self.head = nn.Linear(6 * 2 * 2, 5)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))
