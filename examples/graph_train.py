"""Train a small CNN with flow.nn.Graph (needs flow-graph: pip install packages/flow-graph).

The graph traces forward, backward and the optimizer step once, then runs them as one compiled plan per call;
the model it trains is the eager module, so eager evaluation sees the trained parameters.

    python examples/graph_train.py [--steps 50]
"""
import argparse

import numpy as np

import oneflow as flow
from oneflow import nn


class TrainGraph(flow.nn.Graph):
    def __init__(self, model, optimizer, scheduler):
        super().__init__()
        self.model = model
        self.add_optimizer(optimizer, lr_sch=scheduler)

    def build(self, x, y):
        loss = nn.functional.cross_entropy(self.model(x), y)
        loss.backward()
        return loss


class EvalGraph(flow.nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x):
        return self.model(x).argmax(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    flow.manual_seed(0)
    rng = np.random.default_rng(0)
    # a toy task: which quadrant of the 8x8 image holds the bright patch
    def batch(n=32):
        x = rng.standard_normal((n, 1, 8, 8)).astype(np.float32)
        y = rng.integers(0, 4, n)
        for i, q in enumerate(y):
            r, c = divmod(int(q), 2)
            x[i, 0, r * 4:r * 4 + 4, c * 4:c * 4 + 4] += 0.5
        return flow.tensor(x), flow.tensor(y)

    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(8 * 4 * 4, 4))
    optimizer = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = flow.optim.lr_scheduler.StepLR(optimizer, step_size=20, gamma=0.5)
    train = TrainGraph(model, optimizer, scheduler)
    for step in range(args.steps):
        loss = train(*batch())
        if step % 10 == 0 or step == args.steps - 1:
            print(f"step {step:3d}  loss {loss.item():.4f}  lr {optimizer.param_groups[0]['lr']:.4f}")
    model.eval()
    x, y = batch(256)
    accuracy = (EvalGraph(model)(x) == y).float().mean().item()
    print(f"accuracy {accuracy:.3f}")
    return accuracy


if __name__ == "__main__":
    main()
