"""Compares unified memory with what a user would try first to fit a model, at equal peak GPU memory:
per workload, plain PyTorch (mode none, the reference), then each peer of bench/modes.py without a
budget (checkpoint: activation checkpointing over the model's blocks; save_on_cpu; cpu_offload: a
CPU-offload optimizer, bench/peer_methods.py), each one's peak GPU memory measured, then um and deepum
with that peak as their capacity. One bench/train.py process per run (bench/run_all.py's run_train:
the guard DEEPUM_NO_OVERSUBSCRIBE=1, deepum's fuse at its default of half the free GPU memory, a
timeout); a workload whose in-memory peak is above the fuse gets no unified-memory runs.

Records: <out>/peer_<workload>_<mode>.json (none and the peers) and
<out>/peer_<workload>_<um mode>_at_<peer>.json, each a train.py record with peer (the peer it is
compared at; None for none), capacity_from (which record's peak became the capacity),
bitwise_equal_to_none (its parameter digest against none's; None where either run failed), command
and wall_s. bench/run_all.py's report leaves them out (they have "peer"); the peers' report
(bench/peer_report.py) is <out>/peers.json, peers.md and peers.png.

    python3 bench/peers.py --out bench/results/sweep                    # the sweep's workloads
    python3 bench/peers.py --out bench/results/sweep --report-only      # redraw from the records
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import peer_report  # noqa: E402
import run_all  # noqa: E402
import workloads  # noqa: E402
from modes import BUDGETED_MODES, PEER_MODES  # noqa: E402

PEAKS = {"reserved": "peak_resident_bytes", "allocated": "peak_allocated_bytes"}
"""--peak: the record field whose bytes become the capacity: torch.cuda.max_memory_reserved() (what
the caching allocator held from the GPU) or max_memory_allocated() (what tensors used)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "results" / "sweep", help="folder for records and report")
    parser.add_argument("--workloads", default=",".join(run_all.SWEEP_SIZES),
                        help=f"comma-separated, from {', '.join(sorted(workloads.WORKLOADS))} (default: %(default)s)")
    parser.add_argument("--peers", default=",".join(PEER_MODES),
                        help="plain-PyTorch ways to lower peak memory (default: %(default)s)")
    parser.add_argument("--modes", default="um,deepum",
                        help=f"unified-memory modes run at each peer's peak, from {', '.join(BUDGETED_MODES)} "
                             f"(default: %(default)s)")
    parser.add_argument("--peak", choices=list(PEAKS), default="reserved",
                        help="which peak of a peer becomes the capacity (default: %(default)s)")
    parser.add_argument("--size", action="append", default=[], metavar="WORKLOAD=FLAGS",
                        help='train.py sizing flags replacing a workload\'s sweep size, e.g. "gpt2=--layers 12"')
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=300, help="seconds one run may take (default 300)")
    parser.add_argument("--resume", action="store_true", help="keep successful records already in --out")
    parser.add_argument("--dry-run", action="store_true", help="print the runs without starting them")
    parser.add_argument("--report-only", action="store_true", help="only rewrite the report from the records")
    return parser


def parse_args(argv=None) -> argparse.Namespace:
    """The arguments, checked: unknown workloads, peers or modes, bad sizes and step counts exit with status 2."""
    parser = build_parser()
    args = parser.parse_args(argv)
    args.workloads, args.peers, args.modes = (run_all.split_list(text) for text in (args.workloads, args.peers, args.modes))
    for kind, given, known in (("workload", args.workloads, workloads.WORKLOADS), ("peer", args.peers, PEER_MODES),
                               ("mode", args.modes, BUDGETED_MODES)):
        unknown = [item for item in given if item not in known]
        if unknown or not given:
            parser.error(f"unknown or no {kind}(s) {unknown}; choose from {', '.join(known)}")
    if not 0 <= args.warmup < args.steps:
        parser.error(f"need 0 <= --warmup < --steps, got --warmup {args.warmup} --steps {args.steps}")
    args.sizes = run_all.workload_sizes(parser, args.workloads, args.size)
    return args


def run_name(workload: str, mode: str, peer: str | None = None) -> str:
    """File stem of one run: peer_gpt2_checkpoint, or peer_gpt2_deepum_at_checkpoint for a
    unified-memory mode at a peer's peak."""
    return f"peer_{workload}_{mode}" + (f"_at_{peer}" if peer and mode != peer else "")


def capacity_at(peer_record: dict, peak: str) -> int | None:
    """The capacity for the unified-memory runs at a peer: its successful record's peak bytes
    (PEAKS[peak]), or None."""
    value = peer_record.get(PEAKS[peak]) if peer_record.get("status") == "ok" else None
    return int(value) if value else None


def mark_bitwise(records: list[dict], reference: dict) -> list[dict]:
    """The records with bitwise_equal_to_none: parameter_sha256 equal to the reference's (None where
    either run did not succeed)."""
    digest = reference.get("parameter_sha256") if reference.get("status") == "ok" else None
    return [dict(r, bitwise_equal_to_none=(r["parameter_sha256"] == digest)
                 if digest and r.get("status") == "ok" else None) for r in records]


def _run(args, workload: str, mode: str, peer: str | None, capacity, reference: Path | None, fields: dict) -> dict:
    name = run_name(workload, mode, peer)
    command = run_all.train_command(args, workload, mode, args.out / f"{name}.json", capacity, reference)
    return run_all.run_train(args, name, command, workload, mode, {"peer": peer, **fields})


def peers_of_workload(args, workload: str) -> list[dict]:
    """All runs of one workload, in order: none, the peers, then the unified-memory modes at each
    peer's peak; the records are written back with bitwise_equal_to_none."""
    none = _run(args, workload, "none", None, None, None, {})
    reference = args.out / f"{run_name(workload, 'none')}.json" if none.get("status") == "ok" else None
    records = [none]
    unsafe = run_all.unsafe_reason(none)
    for peer in args.peers:
        own = _run(args, workload, peer, peer, None, reference, {})
        records.append(own)
        capacity = f"<{args.peak} peak of {peer}>" if args.dry_run else capacity_at(own, args.peak)
        fields = {"capacity_from": f"{PEAKS[args.peak]} of {run_name(workload, peer)}"}
        for mode in args.modes:
            reason = unsafe or (None if capacity else f"no peak: the {peer} run did not succeed")
            if reason:
                records.append(run_all.skipped(args, run_name(workload, mode, peer), workload, mode, reason,
                                               {"peer": peer, **fields}))
            else:
                records.append(_run(args, workload, mode, peer, capacity, reference, fields))
    if args.dry_run:
        return records
    marked = mark_bitwise(records, none)
    for record in marked:
        (args.out / f"{record['run']}.json").write_text(json.dumps(record, indent=1, default=str))
    return marked


def load_records(folder: Path) -> list[dict]:
    """The records this script wrote into the folder (peer_*.json with "run", "status" and "peer")."""
    return run_all.json_records(folder, "peer_*.json", lambda data: {"run", "status", "peer"} <= set(data))


def main(argv=None) -> int:
    args = parse_args(argv)
    if not args.dry_run:
        args.out.mkdir(parents=True, exist_ok=True)
    command = shlex.join(["python3", "bench/peers.py", *(sys.argv[1:] if argv is None else argv)])
    if not args.report_only:
        if not args.dry_run and not run_all.prebuilt():
            return 1
        for workload in args.workloads:
            peers_of_workload(args, workload)
    if args.dry_run:
        return 0
    records = load_records(args.out)
    if not records:
        print(f"no peer records in {args.out}", file=sys.stderr)
        return 1
    paths = peer_report.write_report(records, args.out, command)
    print(peer_report.markdown_table(peer_report.comparisons(records)))
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
