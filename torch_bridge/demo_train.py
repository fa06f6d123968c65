"""Train a small MLP with the lab's Numba kernels as torch ops, next to the same model in plain torch.

    python -m torch_bridge.demo_train [--steps 20] [--no-compile]

The model (a residual MLP classifier on synthetic data) uses ``torch.ops.lab.matmul``,
``lab.vecadd`` (the residual) and ``lab.softmax`` (with its Numba backward) where the reference uses
``torch.matmul``, ``+`` and ``torch.softmax``; everything else (ReLU, the loss, SGD) is shared. Both
start from the same weights and see the same batches, so their losses may differ only by float32
rounding: the script prints them step by step, eager and under ``torch.compile(fullgraph=True)``
(Inductor on a GPU; ``aot_eager`` in the simulator, which has no GPU to generate code for), and exits
1 if any loss differs from torch's by more than ``--rtol``. Whether the loss fell is printed on a line
of its own: it is the model's and the learning rate's doing, the same in both, not the verdict.

On a GPU it runs CUDA tensors; in Numba's CUDA simulator it runs CPU tensors at a tiny size.
"""
from __future__ import annotations

import argparse
import sys

import torch

import torch_bridge.lab_ops as L

lab = torch.ops.lab


def forward(params, x, labels, use_lab: bool):
    """Mean cross-entropy of a residual MLP: relu(x W1); h + h W2; softmax(h W3)."""
    W1, W2, W3 = params
    mm = lab.matmul if use_lab else torch.matmul
    h = torch.relu(mm(x, W1))
    h = lab.vecadd(h, mm(h, W2)) if use_lab else h + mm(h, W2)
    p = lab.softmax(mm(h, W3)) if use_lab else torch.softmax(mm(h, W3), 1)
    return -torch.log(p.gather(1, labels[:, None]) + 1e-12).mean()


def train(steps, use_lab, compiled, data, init, lr, backend):
    params = [w.clone().requires_grad_() for w in init]
    step_fn = forward
    if compiled:
        torch._dynamo.reset()
        step_fn = torch.compile(forward, fullgraph=True, backend=backend)
    losses = []
    for i in range(steps):
        x, labels = data[i % len(data)]
        loss = step_fn(params, x, labels, use_lab)
        loss.backward()
        with torch.no_grad():
            for w in params:
                w -= lr * w.grad
                w.grad = None
        losses.append(loss.item())
    return losses


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--rtol", type=float, default=1e-4)
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    device = "cpu" if L.SIMULATOR else "cuda"
    batch, d_in, hidden, classes = (8, 12, 16, 5) if L.SIMULATOR else (256, 128, 512, 10)
    steps = args.steps or (3 if L.SIMULATOR else 20)
    backend = "aot_eager" if L.SIMULATOR else "inductor"
    torch.backends.cuda.matmul.allow_tf32 = False  # float32 FMAs like the Numba kernels
    g = torch.Generator().manual_seed(args.seed)
    teacher = torch.randn(d_in, classes, generator=g)
    data = []
    for _ in range(4):
        x = torch.randn(batch, d_in, generator=g)
        data.append((x.to(device), (x @ teacher).argmax(1).to(device)))
    init = [torch.randn(d_in, hidden, generator=g) / d_in ** 0.5,
            torch.randn(hidden, hidden, generator=g) / hidden ** 0.5 * 0.5,
            torch.randn(hidden, classes, generator=g) / hidden ** 0.5]
    init = [w.to(device) for w in init]
    lr = 0.1  # 0.5 diverged (loss 2.5 -> 25, on the H100 and the CPU alike); 0.1: 2.55 -> 1.31 in 20 steps

    runs = {"torch": train(steps, False, False, data, init, lr, backend),
            "lab eager": train(steps, True, False, data, init, lr, backend)}
    if not args.no_compile:
        runs["torch compiled"] = train(steps, False, True, data, init, lr, backend)
        runs["lab compiled"] = train(steps, True, True, data, init, lr, backend)
    ref = runs["torch"]
    print(f"device {device} ({'Numba CUDA simulator' if L.SIMULATOR else torch.cuda.get_device_name()}), "
          f"batch {batch}, {d_in}->{hidden}->{classes}, compile backend {backend}")
    print("step  " + "  ".join(f"{k:>15}" for k in runs))
    for i in range(steps):
        print(f"{i:4d}  " + "  ".join(f"{runs[k][i]:15.7f}" for k in runs))
    worst = max(abs(v - r) / max(abs(r), 1e-12) for k in runs for v, r in zip(runs[k], ref))
    ok = worst <= args.rtol  # the verdict: the lab's ops give torch's losses, step by step
    print(f"max relative loss difference vs torch eager: {worst:.2e} (rtol {args.rtol:g}): "
          f"{'OK, the lab ops match torch' if ok else 'MISMATCH'}")
    # the loss trend is the model's and the learning rate's, the same for both: said, not judged
    trend = "fell" if ref[-1] < ref[0] else "did not fall"
    print(f"loss {ref[0]:.4f} -> {ref[-1]:.4f} over {steps} step{'s' if steps != 1 else ''}: {trend}"
          + ("" if ref[-1] < ref[0] else " (a few SGD steps on a tiny batch need not lower it)"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
