#!/usr/bin/env python3
"""A PyTorch training loop that takes part in colod's time slots (docs/DAEMON.md "Time slots").

Submit it with `colo submit --checkpoint -- python3 train_with_checkpoints.py --checkpoint ckpt.pt`.
When its slot ends while others wait, colod asks it to checkpoint: the signal named in
$COLO_CHECKPOINT_SIGNAL arrives and the file $COLO_CHECKPOINT_FILE appears. It then finishes the
step it is in, saves model, optimizer and step (written whole, then renamed), and exits with
$COLO_CHECKPOINT_EXIT (75); colod queues it again and the next launch resumes from the file.
Works on PyTorch 1.13 and 2.x, on a GPU when there is one, else on the CPU.
"""
import argparse
import os
import signal
import sys

import torch

requested = False


def on_request(signum, frame):
    # Only a flag: the step in progress finishes, then the loop saves.
    global requested
    requested = True


def checkpoint_requested():
    path = os.environ.get("COLO_CHECKPOINT_FILE")
    return requested or bool(path and os.path.exists(path))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkpoint", required=True, help="where the state is saved and resumed from")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=64)
    a = ap.parse_args()
    if a.steps < 1 or a.batch < 1:
        ap.error("--steps and --batch must be at least 1")
    name = os.environ.get("COLO_CHECKPOINT_SIGNAL")
    if name:
        signal.signal(getattr(signal, "SIG" + name), on_request)

    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    start = 0
    if os.path.exists(a.checkpoint):
        state = torch.load(a.checkpoint, map_location=device)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        start = state["step"]
        print(f"resumed at step {start}", flush=True)

    loss = None
    for step in range(start, a.steps):
        x = torch.randn(a.batch, 256, device=device)
        y = torch.randint(0, 10, (a.batch,), device=device)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step == start:
            print(f"training from step {start}", flush=True)
        if checkpoint_requested() and step + 1 < a.steps:
            tmp = a.checkpoint + ".tmp"
            torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step + 1}, tmp)
            os.replace(tmp, a.checkpoint)
            print(f"checkpointed at step {step + 1}", flush=True)
            sys.exit(int(os.environ.get("COLO_CHECKPOINT_EXIT", "75")))
    if loss is None:  # the checkpoint was already at (or past) --steps: nothing left to train
        print(f"done: the checkpoint is at step {start}, --steps is {a.steps}", flush=True)
    else:
        print(f"done after {a.steps} steps, loss {loss.item():.3f}", flush=True)


if __name__ == "__main__":
    main()
