"""Diagnosis: the host-map toy (tests/test_runtime_gpu.py case_host_map) recorded; where Adam's state
and the grads lie; each managed block's preferred location by the legacy and typed attributes."""
import json, os, sys
sys.path.insert(0, os.getcwd())
import torch
from deepum.config import DeepUMConfig
from deepum.runtime import session as runtime
from cuda.bindings import runtime as rt
MiB = 1 << 20
out = os.environ["OUT"]
runtime.enable(mode="deepum", capacity="48MiB", config=DeepUMConfig(host_map_uses=4, host_map_span_percent=25),
               max_managed_bytes="1GiB", record=f"{out}/toy.npz")
torch.manual_seed(0)
layers = []
for _ in range(4):
    layers += [torch.nn.Linear(1024, 1024), torch.nn.ReLU()]
model = torch.nn.Sequential(*layers).cuda()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(1)
for _ in range(5):
    x = torch.randn(128, 1024, generator=g).cuda(); t = torch.randn(128, 1024, generator=g).cuda()
    loss = torch.nn.functional.mse_loss(model(x), t)
    opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
torch.cuda.synchronize()
ranges = {}
for i, p in enumerate(model.parameters()):
    ranges[f"param{i}"] = (p.data_ptr(), p.untyped_storage().nbytes())
    if p.grad is not None: ranges[f"grad{i}"] = (p.grad.data_ptr(), p.grad.untyped_storage().nbytes())
    for k, s in opt.state[p].items():
        if torch.is_tensor(s) and s.is_cuda: ranges[f"{k}{i}"] = (s.data_ptr(), s.untyped_storage().nbytes())
lo = min(a for a, _ in ranges.values()) // (2 * MiB); hi = max(a + n for a, n in ranges.values()) // (2 * MiB)
blocks = {}
A = rt.cudaMemRangeAttribute
for b in range(lo - 8, hi + 8):
    row = {}
    for name in ("cudaMemRangeAttributePreferredLocation", "cudaMemRangeAttributePreferredLocationType",
                 "cudaMemRangeAttributePreferredLocationId", "cudaMemRangeAttributeLastPrefetchLocation"):
        try:
            r = rt.cudaMemRangeGetAttribute(4, getattr(A, name), b * 2 * MiB, 2 * MiB)
            row[name[len("cudaMemRangeAttribute"):]] = [str(r[0]), int(r[1]) if len(r) > 1 else None]
        except Exception as e:
            row[name] = repr(e)[:80]
    blocks[b] = row
stats = runtime.stats()
runtime.disable()
json.dump({"ranges": ranges, "blocks": blocks, "stats": {k: v for k, v in stats.items() if k != "per_iteration"},
           "per_iteration": stats["per_iteration"]}, open(f"{out}/diag_hm.json", "w"), indent=1, default=str)
print("diag done", stats["host_map_calls"], stats["host_map_bytes"])
