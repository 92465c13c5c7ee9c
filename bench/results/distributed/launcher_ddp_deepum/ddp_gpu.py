"""A small NCCL DDP job on CUDA for `torchrun -m deepum run`: a few steps, parameters digested on rank 0."""
import hashlib, os, sys
import torch
import torch.distributed as dist

local = int(os.environ["LOCAL_RANK"])
dist.init_process_group("nccl", device_id=torch.device("cuda", local))
torch.manual_seed(0)
model = torch.nn.Sequential(*[torch.nn.Linear(2048, 2048) for _ in range(16)]).cuda()
ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local])
opt = torch.optim.Adam(ddp.parameters())
g = torch.Generator().manual_seed(1 + dist.get_rank())
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 8):
    opt.zero_grad()
    ddp(torch.randn(4096, 2048, generator=g).cuda()).square().mean().backward()
    opt.step()
h = hashlib.sha256()
for p in model.parameters():
    h.update(p.detach().cpu().numpy().tobytes())
print(f"rank {dist.get_rank()} device {torch.cuda.current_device()} digest {h.hexdigest()[:16]}", flush=True)
dist.destroy_process_group()
