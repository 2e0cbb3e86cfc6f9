"""The paper's PyTorch MLP (64-256-256-1, 40 epochs, batch 64) on a fixed embedding."""

from __future__ import annotations

import time

import numpy as np

EPOCHS = 40
BATCH = 64
HIDDEN = 256
SEED_NAMES = ("init", "shuffle")


def _device(torch, name):
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device cuda requested but torch sees no CUDA device")
    if name == "mps" and not (
        getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()
    ):
        raise RuntimeError(
            "device mps requested but torch.backends.mps is not available "
            "(needs Apple silicon and macOS 12.3 or later)"
        )
    return torch.device(name)


def run_torch(E, labels, n_train, seeds, device="cpu", deterministic=False, threads=1):
    """Train on E[:n_train], return ({stage: array}, {stage: (wall, cpu)}, torch facts)."""
    import torch
    from torch import nn

    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(bool(deterministic))
    dev = _device(torch, device)
    X = torch.as_tensor(np.ascontiguousarray(E, dtype=np.float32))
    y = torch.as_tensor(np.asarray(labels, dtype=np.float32))
    Xtr, ytr = X[:n_train].to(dev), y[:n_train].to(dev)
    Xte = X[n_train:].to(dev)
    w, c = time.perf_counter(), time.process_time()
    torch.manual_seed(seeds["init"])  # the initial weights: the init seed and nothing else
    model = nn.Sequential(
        nn.Linear(X.shape[1], HIDDEN),
        nn.ReLU(),
        nn.Linear(HIDDEN, HIDDEN),
        nn.ReLU(),
        nn.Linear(HIDDEN, 1),
    ).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.BCEWithLogitsLoss()
    order = torch.Generator().manual_seed(seeds["shuffle"])  # batch order: the shuffle seed
    first_loss = None
    for _ in range(EPOCHS):
        perm = torch.randperm(n_train, generator=order).to(dev)
        for i in range(0, n_train, BATCH):
            idx = perm[i : i + BATCH]
            opt.zero_grad()
            loss = loss_fn(model(Xtr[idx]).squeeze(1), ytr[idx])
            loss.backward()
            opt.step()
            if first_loss is None:
                first_loss = float(loss.detach().cpu())
    with torch.no_grad():
        p = torch.sigmoid(model(Xte).squeeze(1)).cpu().numpy().astype(np.float64)
    timings = {"torch_mlp": (time.perf_counter() - w, time.process_time() - c)}
    facts = {
        "device": device,
        "device_name": _device_name(torch, device),
        "deterministic": bool(torch.are_deterministic_algorithms_enabled()),
        "num_threads": torch.get_num_threads(),
        "first_batch_loss": first_loss,
    }
    return {"torch_mlp": p, "y_test": np.asarray(labels, dtype=np.int64)[n_train:]}, timings, facts


def _device_name(torch, device):
    if device == "cuda":
        return torch.cuda.get_device_name(0)
    if device == "mps":
        return "Apple GPU (MPS)"
    return "cpu"


def torch_facts():
    """What this torch build is and which backends it reports."""
    import torch

    b = torch.backends
    return {
        "version": torch.__version__,
        "cuda": torch.version.cuda,
        "cuda_available": torch.cuda.is_available(),
        "cudnn": b.cudnn.version() if b.cudnn.is_available() else None,
        "mps_available": bool(getattr(b, "mps", None) and b.mps.is_available()),
        "mkldnn": b.mkldnn.is_available(),
        "mkl": b.mkl.is_available(),
        "openmp": b.openmp.is_available(),
    }
