import json, sys
sys.path.insert(0, ".")
import deepum
with deepum.enable("um"):
    import torch
    xs = [torch.empty(n << 20, dtype=torch.uint8, device="cuda") for n in (1, 3, 30, 200, 5, 700)]
    lin = torch.nn.Linear(1024, 1024).cuda(); y = lin(torch.randn(64, 1024, device="cuda"))
    segs = sorted(s["address"] for s in torch.cuda.memory_snapshot())
    print(json.dumps({"segments": [hex(a) for a in segs], "offsets": [a - segs[0] for a in segs]}))
