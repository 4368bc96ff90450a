"""Optimizer step time on ResNet-18-sized parameter lists (about 11.2M float32 parameters in 62 tensors):
our fused per-group ops against PyTorch's default (single-tensor) and foreach implementations."""
import numpy as np

from common import best_time, flow, report, torch


def resnet18_shapes():
    """The parameter shapes of torchvision's ResNet-18 (conv weights, BN weights/biases, fc)."""
    shapes = [(64, 3, 7, 7), (64,), (64,)]
    cin = 64
    for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
        for block in range(2):
            c_in = cin if block == 0 else cout
            shapes += [(cout, c_in, 3, 3), (cout,), (cout,), (cout, cout, 3, 3), (cout,), (cout,)]
            if block == 0 and (stride != 1 or c_in != cout):
                shapes += [(cout, c_in, 1, 1), (cout,), (cout,)]
        cin = cout
    shapes += [(1000, 512), (1000,)]
    return shapes


def make(shapes):
    rng = np.random.RandomState(0)
    arrays = [rng.randn(*s).astype(np.float32) * 0.01 for s in shapes]
    grads = [rng.randn(*s).astype(np.float32) * 0.01 for s in shapes]
    fp = [flow.nn.Parameter(flow.tensor(a)) for a in arrays]
    tp = [torch.nn.Parameter(torch.tensor(a)) for a in arrays]
    for p, g in zip(fp, grads):
        p.grad = flow.tensor(g)
    for p, g in zip(tp, grads):
        p.grad = torch.tensor(g)
    return fp, tp


def main():
    shapes = resnet18_shapes()
    n = sum(int(np.prod(s)) for s in shapes)
    print(f"threads: {flow.get_num_threads()}; {len(shapes)} tensors, {n / 1e6:.2f}M parameters")
    cases = [
        ("Adam", dict(lr=1e-3)),
        ("AdamW", dict(lr=1e-3, weight_decay=0.01)),
        ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=1e-4)),
    ]
    for name, kw in cases:
        fp, tp = make(shapes)
        fo = getattr(flow.optim, name)(fp, **kw)
        t_default = getattr(torch.optim, name)(tp, foreach=False, **kw)
        fp2, tp2 = make(shapes)
        t_foreach = getattr(torch.optim, name)(tp2, foreach=True, **kw)
        f_s = best_time(fo.step, repeat=5)
        report(f"{name} step (torch default, single-tensor)", f_s, best_time(t_default.step, repeat=5), unit="ms",
               scale=1e3)
        report(f"{name} step (torch foreach)", f_s, best_time(t_foreach.step, repeat=5), unit="ms", scale=1e3)


if __name__ == "__main__":
    main()
