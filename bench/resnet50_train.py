"""An ordinary ResNet-50 training script, as users write them, for `bench/probe_speed.sh script`:
the model built on the CPU and moved, random ImageNet-sized batches moved with .to(device), Adam,
the loss logged with .item() every step."""
import argparse

import torch
import torch.nn as nn
import torchvision

ap = argparse.ArgumentParser()
ap.add_argument("--batch-size", type=int, default=128)
args = ap.parse_args()
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torchvision.models.resnet50().to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()
for step in range(1000):
    x = torch.randn(args.batch_size, 3, 224, 224).to(device, non_blocking=True)
    y = torch.randint(0, 1000, (args.batch_size,)).to(device)
    opt.zero_grad(set_to_none=True)
    loss = criterion(model(x), y)
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.4f}")
