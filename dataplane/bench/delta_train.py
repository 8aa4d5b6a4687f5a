#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A real training run, for the delta benchmark's checkpoint pairs.

Trains a 3-layer perceptron (64 -> H -> H -> 10, ReLU, softmax) with Adam
on scikit-learn's bundled handwritten digits (1,797 real 8x8 images, the
UCI optdigits test set), and saves the weights at the steps asked for as
safetensors, in float32 and in bfloat16: ckpt-<step>-f32.safetensors and
ckpt-<step>-bf16.safetensors in OUT. Deterministic for a seed. Prints one
line per checkpoint with its step, training loss and held-out accuracy, so
the run is seen to learn.

usage: delta_train.py OUT HIDDEN STEP [STEP ...]
"""
import sys

import ml_dtypes
import numpy as np
from safetensors.numpy import save_file
from sklearn.datasets import load_digits


def main():
    out, hidden, steps = sys.argv[1], int(sys.argv[2]), sorted(int(s) for s in sys.argv[3:])
    rng = np.random.default_rng(20261126)
    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    idx = rng.permutation(len(x))
    train, test = idx[:1500], idx[1500:]
    sizes = [64, hidden, hidden, 10]
    params = {}
    for i in range(3):
        scale = np.sqrt(2.0 / sizes[i])
        params[f"layers.{i}.weight"] = (rng.standard_normal((sizes[i], sizes[i + 1])) * scale).astype(np.float32)
        params[f"layers.{i}.bias"] = np.zeros(sizes[i + 1], np.float32)
    m = {k: np.zeros_like(v) for k, v in params.items()}
    v = {k: np.zeros_like(v) for k, v in params.items()}
    lr, b1, b2, eps, batch = 1e-3, 0.9, 0.999, 1e-8, 128

    def forward(xb):
        acts = [xb]
        h = xb
        for i in range(3):
            h = h @ params[f"layers.{i}.weight"] + params[f"layers.{i}.bias"]
            if i < 2:
                h = np.maximum(h, 0)
            acts.append(h)
        return acts

    for step in range(1, steps[-1] + 1):
        b = rng.choice(train, batch, replace=False)
        acts = forward(x[b])
        logits = acts[-1] - acts[-1].max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        loss = -np.log(p[np.arange(batch), y[b]] + 1e-12).mean()
        g = p
        g[np.arange(batch), y[b]] -= 1
        g /= batch
        grads = {}
        for i in (2, 1, 0):
            grads[f"layers.{i}.weight"] = acts[i].T @ g
            grads[f"layers.{i}.bias"] = g.sum(axis=0)
            if i:
                g = (g @ params[f"layers.{i}.weight"].T) * (acts[i] > 0)
        for k in params:
            m[k] = b1 * m[k] + (1 - b1) * grads[k]
            v[k] = b2 * v[k] + (1 - b2) * grads[k] ** 2
            mh = m[k] / (1 - b1 ** step)
            vh = v[k] / (1 - b2 ** step)
            params[k] = (params[k] - lr * mh / (np.sqrt(vh) + eps)).astype(np.float32)
        if step in steps:
            acc = (forward(x[test])[-1].argmax(axis=1) == y[test]).mean()
            save_file(params, f"{out}/ckpt-{step}-f32.safetensors")
            save_file({k: t.astype(ml_dtypes.bfloat16) for k, t in params.items()},
                      f"{out}/ckpt-{step}-bf16.safetensors")
            print(f"step {step}: loss {loss:.4f}, held-out accuracy {acc:.3f}")


if __name__ == "__main__":
    main()
