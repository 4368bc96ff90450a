"""Per-op overhead and elementwise bandwidth against PyTorch (issue targets: overhead <= PyTorch's;
16M-float add >= 1.2x PyTorch's GB/s)."""
import numpy as np

from common import best_time, flow, report, torch


def main():
    print(f"threads: {flow.get_num_threads()}")
    a, b = flow.ones(1), flow.ones(1)
    ta, tb = torch.ones(1), torch.ones(1)
    report("add, 1 element (per call)", best_time(lambda: a + b), best_time(lambda: ta + tb))

    ga, gb = flow.ones(1, requires_grad=True), flow.ones(1, requires_grad=True)
    tga, tgb = torch.ones(1, requires_grad=True), torch.ones(1, requires_grad=True)

    def f_step():
        (ga + gb).backward()

    def t_step():
        (tga + tgb).backward()

    report("add + backward, 1 element (per step)", best_time(f_step), best_time(t_step))

    n = 16 * 1024 * 1024
    x, y = flow.tensor(np.random.rand(n).astype(np.float32)), flow.tensor(np.random.rand(n).astype(np.float32))
    tx, ty = torch.from_numpy(x.numpy().copy()), torch.from_numpy(y.numpy().copy())
    gb_moved = 3 * n * 4 / 1e9
    report("add, 16M float32 (GB/s)", best_time(lambda: x + y, repeat=9), best_time(lambda: tx + ty, repeat=9),
           unit="GB/s", work=gb_moved)


if __name__ == "__main__":
    main()
