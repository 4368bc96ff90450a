"""A short tour of tensors and autograd: the first part of the main job (`bash ci/demo.sh` runs it, then trains
the MNIST example, examples/mnist/train.py).

    python examples/demo.py

It prints how many ops the registry holds; builds a polynomial basis with slicing, stacking and broadcasting,
checking that a slice is a view of its tensor's storage; fits y = 3x^2 - 2x + 1 by gradient descent through
autograd and checks that the learnt coefficients are (1, -2, 3); and shows the version counter that in-place
ops bump. It ends with "ok", and raises AssertionError if a check fails.
"""
import time

import numpy as np

import oneflow as flow


def main():
    flow.set_num_threads(2)
    print(f"oneflow {flow.__version__}: {len(flow.list_ops())} registered ops")

    # tensors, views, indexing and broadcasting
    x = flow.linspace(-1, 1, 64)
    basis = flow.stack([flow.ones(64), x, x * x], 1)
    column = basis[:, 1]
    assert column._storage_ptr() == basis._storage_ptr(), "indexing with slices gives a view"
    y = 1 - 2 * x + 3 * x * x
    print("basis", tuple(basis.shape), "view of its transpose contiguous?", basis.t().is_contiguous())

    # autograd: least squares by gradient descent
    w = flow.zeros(3, requires_grad=True)
    lr = 0.5
    t0 = time.perf_counter()
    for step in range(500):
        pred = (basis * w).sum(1)
        loss = ((pred - y) * (pred - y)).sum() / 64
        loss.backward()
        with flow.no_grad():
            w -= lr * w.grad
            w.grad = None
    dt = time.perf_counter() - t0
    print(f"after 500 steps ({dt * 1e3:.1f} ms): loss={loss.item():.2e} w={np.round(w.detach().numpy(), 3).tolist()}")
    assert np.allclose(w.detach().numpy(), [1, -2, 3], atol=0.05), "did not converge"

    # in-place ops bump the version counter autograd checks
    v = flow.ones(3)
    before = v._version
    v.mul_(2)
    print("version", before, "->", v._version, "values", v.tolist())
    print("ok")


if __name__ == "__main__":
    main()
