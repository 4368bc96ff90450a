"""A polynomial fit written for PyTorch: a Linear layer on x, x^2, x^3, manual SGD through p.grad.
Prints the final loss as JSON on the last line."""
import json

import numpy as np
import torch
import torch.nn.functional as F

POLY_DEGREE = 3
rng = np.random.default_rng(0)
W_TARGET = torch.from_numpy(rng.standard_normal((POLY_DEGREE, 1)).astype(np.float32) * 3)
B_TARGET = torch.tensor([1.5])


def make_features(x):
    x = x.unsqueeze(1)
    return torch.cat([x ** i for i in range(1, POLY_DEGREE + 1)], 1)


def f(x):
    return x.mm(W_TARGET) + B_TARGET.item()


def get_batch(batch_size=64):
    random = torch.from_numpy(rng.standard_normal(batch_size).astype(np.float32))
    x = make_features(random)
    return x, f(x)


torch.manual_seed(0)
fc = torch.nn.Linear(W_TARGET.size(0), 1)
for batch_idx in range(1, 400):
    batch_x, batch_y = get_batch()
    fc.zero_grad()
    output = F.smooth_l1_loss(fc(batch_x), batch_y)
    loss = output.item()
    output.backward()
    for param in fc.parameters():
        param.data.add_(-0.05 * param.grad)
    if loss < 1e-3:
        break
x, y = get_batch(1000)
with torch.no_grad():
    final = F.mse_loss(fc(x), y).item()
print(json.dumps({"loss": final, "weights": fc.weight.view(-1).tolist(), "bias": fc.bias.item()}))
