"""A plain PyTorch training script with no deepum in it: what `deepum record` wraps in the GPU tests.
Usage: plain_train.py STEPS OUT_JSON (writes the losses and a digest of the parameters)."""
import hashlib
import json
import sys

import torch

steps, out = int(sys.argv[1]), sys.argv[2]
torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU()) for _ in range(8)]).cuda()
optimizer = torch.optim.Adam(model.parameters())
x = torch.randn(256, 1024, device="cuda")
losses = []
for _ in range(steps):
    loss = model(x).square().mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    losses.append(float(loss.detach()))
digest = hashlib.sha256(b"".join(p.detach().cpu().numpy().tobytes() for p in model.parameters())).hexdigest()
with open(out, "w") as f:
    json.dump({"losses": losses, "digest": digest}, f)
