"""On a step timeline (.timeline.npz), the kernels made to wait for migrations: how far ahead the
launching thread was when each was launched, how long the GPU idled before it, and how soon after the
last host-to-GPU copy it started; and for the worker's prefetch and eviction calls, how long after
each call the next copy of its direction began.

Usage: python3 lead_at_waits.py ../step_timeline/call_b/gpt2_deepum.timeline.npz
"""
import numpy as np, sys
z = np.load(sys.argv[1])
s, e, v, k, d = (z[x] for x in ("start", "end", "value", "kind", "detail"))
K = k == 0; L = k == 4; H = k == 1; C = k == 3
ks, ke, kv = s[K], e[K], v[K]
o = np.argsort(ks); ks, ke, kv = ks[o], ke[o], kv[o]
launch_start = dict(zip(v[L].tolist(), s[L].tolist())); launch_bits = dict(zip(v[L].tolist(), d[L].tolist()))
prev_end = np.maximum.accumulate(np.concatenate([[ks[0]], ke[:-1]]))
gap = ks - prev_end
ahead = np.array([ks[i] - launch_start.get(int(kv[i]), ks[i]) for i in range(len(ks))])
bits = np.array([launch_bits.get(int(x), 0) for x in kv])
w = (bits & 1) > 0
print("kernels", len(ks), "waited", w.sum(), "gap sum waited %.3f s" % (gap[w].clip(0).sum()/1e9))
# CPU lead (kernel start - its launch) for waited kernels
print("CPU lead at waited kernels ms: median %.2f p10 %.2f p90 %.2f" % tuple(np.percentile(ahead[w]/1e6, [50, 10, 90])))
print("gap at waited kernels ms: median %.3f p90 %.3f" % tuple(np.percentile(gap[w]/1e6, [50, 90])))
# for waited kernels: last H2D copy end before kernel start, and its start
hs, he = s[H], e[H]; oh = np.argsort(he); hs, he = hs[oh], he[oh]
idx = np.searchsorted(he, ks[w], side="right") - 1
lag = (ks[w] - he[idx]) / 1e3
print("kernel start - last H2D end before it (us): median %.1f p90 %.1f" % tuple(np.percentile(lag, [50, 90])))
# prefetch calls (op 0) and evict (2): CPU issue -> first copy of that direction starting after issue
for op, T, name in ((0, H, "prefetch"), (2, k == 2, "evict")):
    cs = s[C & (d == op)]; ce = e[C & (d == op)]
    ts = np.sort(s[T])
    j = np.searchsorted(ts, cs)
    ok = j < len(ts)
    dl = (ts[j[ok]] - cs[ok]) / 1e3
    print(f"{name} calls {len(cs)} call dur us median %.0f; issue->next copy start us median %.0f p90 %.0f" % (np.median((ce-cs)/1e3), *np.percentile(dl, [50, 90])))
