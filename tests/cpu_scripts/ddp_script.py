"""A tiny torch.distributed job on the CPU for `torchrun ... -m deepum run`: a gloo process group,
an all_reduce, a few optimizer steps of a small DistributedDataParallel model, the group destroyed.
Argument: the number of optimizer steps (default 3)."""
import sys

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
total = torch.tensor([float(rank + 1)])
dist.all_reduce(total)
assert total.item() == world * (world + 1) / 2, total
torch.manual_seed(0)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
    optimizer.zero_grad()
    model(torch.randn(4, 8)).square().mean().backward()
    optimizer.step()
dist.destroy_process_group()
