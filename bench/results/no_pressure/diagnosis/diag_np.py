"""Where deepum's cost without a budget goes: per step CPU launch time, wall time, GPU event time,
and the profiler's kernel-time totals, for one variant (argv[1]) of one workload (train.py flags)."""
import json, sys, time
sys.path.insert(0, "bench"); sys.path.insert(0, ".")
import train, workloads, peer_methods
import deepum

variant, out = sys.argv[1], sys.argv[2]
args = train.parse_args(sys.argv[3:] + ["-o", "/dev/null"])
mode = "none" if variant == "none" else ("um" if variant == "um" else "deepum")
with deepum.enable(mode):
    import torch
    from torch.profiler import profile, ProfilerActivity
    torch.use_deterministic_algorithms(True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    wl = workloads.build(torch, args, device="cuda", seed=0)
    tr = peer_methods.prepare(torch, "none", wl, "cuda")
    model, opt = tr.model, tr.optimizer
    from deepum.runtime import session
    if variant == "deepum_nohook" and session._session.step_hook is not None:
        session._session.step_hook.remove()
    def step(batch):
        opt.zero_grad(set_to_none=False)
        loss = wl.loss_fn(model, batch); loss.backward(); opt.step(); return loss
    rows = []
    prof_tables = {}
    for i in range(16):
        batch = tuple(t.to("cuda") for t in wl.make_batch(i))
        if variant == "deepum_prefetched" and i == 3:
            from cuda.bindings import runtime as rt
            loc = rt.cudaMemLocation(); loc.type = rt.cudaMemLocationType.cudaMemLocationTypeDevice; loc.id = 0
            n = 0
            for seg in torch.cuda.memory_snapshot():
                r = rt.cudaMemPrefetchAsync(seg["address"], seg["total_size"], loc, 0, 0)
                n += int(r[0]) == 0
            torch.cuda.synchronize(); print("prefetched segments", n, flush=True)
        torch.cuda.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        prof = profile(activities=[ProfilerActivity.CUDA]) if i == 12 else None
        if prof: prof.__enter__()
        t0 = time.perf_counter(); e0.record()
        loss = step(batch)
        t1 = time.perf_counter(); e1.record()
        torch.cuda.synchronize(); t2 = time.perf_counter()
        if prof:
            prof.__exit__(None, None, None)
            ka = prof.key_averages()
            prof_tables = sorted(((e.key, e.device_time_total, e.count) for e in ka), key=lambda x: -x[1])[:25]
            prof_total = sum(e.self_device_time_total for e in ka)
        rows.append({"cpu_s": t1 - t0, "wall_s": t2 - t0, "gpu_s": e0.elapsed_time(e1) / 1e3})
        deepum.mark_iteration()
    st = deepum.stats()
res = {"variant": variant, "argv": sys.argv[3:], "rows": rows, "profile_top": prof_tables,
       "profile_device_total_us": prof_total, "asleep": st.get("asleep"), "launches": st.get("launches"),
       "segments_allocated": st.get("segments_allocated"), "gpu_page_faults": st.get("gpu_page_faults")}
json.dump(res, open(out, "w"), indent=1)
med = lambda k: sorted(r[k] for r in rows[4:])[len(rows[4:]) // 2]
print(variant, "cpu", round(med("cpu_s") * 1e3, 2), "wall", round(med("wall_s") * 1e3, 2), "gpu", round(med("gpu_s") * 1e3, 2),
      "prof_total_ms", round(prof_total / 1e3, 2), flush=True)
