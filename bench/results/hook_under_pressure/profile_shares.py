"""Shares of the samples of a py-spy raw profile (native frames) inside the training steps that fall in
the engine's launch hook, split by the frame below Engine::on_launch and by leaf function.

Usage: python3 profile_shares.py call_a/profile_gpt2.txt.gz"""
import gzip, sys, collections, re
f = sys.argv[1]
total = 0; step = 0
below = collections.Counter(); leaf = collections.Counter(); hook = 0; top = collections.Counter()
def clean(fr): return re.sub(r" \(.*\)$", "", fr)
for line in gzip.open(f, "rt"):
    stack, _, n = line.rstrip().rpartition(" ")
    n = int(n); total += n
    frames = stack.split(";")
    if not any("timed_steps" in x for x in frames): continue
    step += n
    idx = [i for i, x in enumerate(frames) if "Engine::on_launch" in x or "deepum::Engine::on_launch" in x]
    # top-level native frame after last python frame
    py = [i for i, x in enumerate(frames) if ".py:" in x]
    nxt = frames[py[-1]+1] if py and py[-1]+1 < len(frames) else "<python>"
    top[clean(nxt)[:90]] += n
    if idx:
        hook += n
        i = idx[0]
        b = clean(frames[i+1]) if i+1 < len(frames) else "<self>"
        b2 = clean(frames[i+2]) if i+2 < len(frames) else ""
        below[(b[:80], b2[:70])] += n
        leaf[clean(frames[-1])[:100]] += n
print("samples", total, "in steps", step, "in Engine::on_launch", hook, f"{hook/step:.1%}")
print("--- below on_launch")
for k, v in below.most_common(40): print(f"{v/hook:6.1%}", k)
print("--- leaves in on_launch")
for k, v in leaf.most_common(30): print(f"{v/hook:6.1%}", k)
