"""Takes turns between deepum trees a lockstep pair at a time against the in-memory step
(bench/no_pressure.py --lockstep), so that a drift of the shared machine's speed falls on every tree:
this checkout, and each --tree NAME=SOURCE: a copy of it built with SOURCE, a patch over this checkout
(.patch, applied with `git apply`; several joined by `+` are applied in that order) or an archive of
another revision's files (.tgz, e.g. `git archive REV driver_hooks deepum/runtime/native_build.py | gzip
> FILE`; its files overwrite the copy's, the copy's other files stay); or this checkout itself with
SOURCE a DeepUMConfig JSON file (.json) for its deepum runs in place of --deepum-config, so that
settings take turns too. Each round runs one pair per model and tree, the trees in the order given;
rounds stop after --rounds, or before a round that, as long as the longest so far, would end past
--stop-after seconds. The models are the 24-layer GPT-2 and BERT-Large in bf16 with fused AdamW
(gpt2, bert-large; the default) or in fp32 with foreach Adam (gpt2-fp32, bert-large-fp32) at half
their footprints (deepum's capacity), --steps steps (default 14) of which --warmup (default 4) warm-up: more steps a pair narrow its ratio where the
in-memory step drifts from step to step, and a longer warm-up measures the steps after deepum starts
repeating remembered plans (BERT-Large's from its sixteenth iteration). Records: OUT/<model>_<tree>/
as no_pressure.py writes them (its --resume adds a pair a round), and OUT/lockstep_ab.json: per model
and tree the pairs, deepum's and `none`'s medians of their runs' median steps and the hook's parts, and
for each tree after the first its pairs, deepum's run medians and none's against the first tree's of
the same round (ratios, their median, the rounds it came lower), rewritten after every round so that a
call cut short keeps the rounds it finished, and printed as a table at the end. Where `none`'s steps
drift, the pairs of two trees can differ while deepum's own steps do not: the three comparisons side
by side tell which.

    python3 bench/lockstep_ab.py --out $OUT/records --tree before=out/old_engine.tgz --rounds 3
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from deepum.config import DeepUMConfig  # noqa: E402
from no_pressure import MAX_REPEATS, MIN_MEASURED_STEPS  # noqa: E402
from run_all import PREBUILD  # noqa: E402

THIS_TREE = "this_tree"


class Model(NamedTuple):
    """A model the pairs train: bench/train.py's workload and sizes, and deepum's capacity (bytes, half
    the footprint at those sizes)."""
    workload: str
    sizes: str
    capacity: int


GPT2_24, BERT_LARGE = "--layers 24 --hidden 1024 --heads 16 --seq 512 --batch 4", "--layers 24 --seq 128 --batch 8"
MODELS = {
    "gpt2": Model("gpt2", f"{GPT2_24} --precision bf16", 6138363904),
    "bert-large": Model("bert-large", f"{BERT_LARGE} --precision bf16", 3921674240),
    # fp32 with foreach Adam, as the sweep trains them (bench/results/sweep_fewer_driver_calls/)
    "gpt2-fp32": Model("gpt2", GPT2_24, 6002049024),
    "bert-large-fp32": Model("bert-large", BERT_LARGE, 3811573760),
}
BUILD = [[sys.executable, "setup.py", "-q", "build_ext", "--inplace"], [sys.executable, "-c", PREBUILD]]


def parse_args(argv=None) -> argparse.Namespace:
    """The arguments, checked; errors exit with status 2 and one line on stderr."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the records")
    parser.add_argument("--tree", action="append", default=[], metavar="NAME=SOURCE",
                        help="another tree: .patch files over this checkout joined by +, a .tgz of files, or a "
                             "DeepUMConfig .json for this checkout (repeatable)")
    parser.add_argument("--models", default="gpt2,bert-large", help=f"comma-separated, of {', '.join(MODELS)}")
    parser.add_argument("--rounds", type=int, default=3, help=f"pairs per model and tree at most (1 to {MAX_REPEATS})")
    parser.add_argument("--steps", type=int, default=14, help="steps a run (at most 200, default 14)")
    parser.add_argument("--warmup", type=int, default=4,
                        help="of them warm-up, not measured (default 4; at least 10 steps are measured)")
    parser.add_argument("--stop-after", type=float, default=420, metavar="SECONDS",
                        help="no round starts after this many seconds (default 420)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/lockstep_ab"), help="where the copies are built")
    parser.add_argument("--deepum-config", default=None, metavar="FILE", help="DeepUMConfig JSON for every deepum run")
    parser.add_argument("--dry-run", action="store_true", help="print what would run, build and run nothing")
    args = parser.parse_args(argv)
    args.trees = {}
    for spec in args.tree:
        name, sep, source = spec.partition("=")
        if not sep or not re.fullmatch(r"[a-z0-9_-]+", name):
            parser.error(f"--tree {spec!r}: give NAME=SOURCE, NAME of a-z, 0-9, _ and -")
        if name == THIS_TREE or name in args.trees:
            parser.error(f"--tree {spec!r}: the name {name!r} is taken")
        parts = source.split("+")
        single = len(parts) == 1 and parts[0].endswith((".tgz", ".tar.gz", ".json"))
        if not single and not all(part.endswith(".patch") for part in parts):
            parser.error(f"--tree {spec!r}: SOURCE must be .patch files joined by +, one .tgz or one .json")
        for part in parts:
            if not Path(part).is_file():
                parser.error(f"--tree {spec!r}: no file {part}")
        if source.endswith(".json"):
            check_config(parser, f"--tree {spec!r}", source)
        args.trees[name] = [Path(part).resolve() for part in parts]
    args.model_list = [m for m in args.models.split(",") if m]
    unknown = [m for m in args.model_list if m not in MODELS]
    if unknown or not args.model_list:
        parser.error(f"--models: unknown {', '.join(unknown) or '(none given)'}; known: {', '.join(MODELS)}")
    if not 1 <= args.rounds <= MAX_REPEATS:
        parser.error(f"--rounds must be 1 to {MAX_REPEATS}, not {args.rounds}")
    if args.steps > 200 or args.warmup < 0 or args.steps - args.warmup < MIN_MEASURED_STEPS:
        parser.error(f"--steps {args.steps} --warmup {args.warmup}: give at most 200 steps of which at least "
                     f"{MIN_MEASURED_STEPS} measured after a warm-up of 0 or more")
    if args.stop_after <= 0:
        parser.error(f"--stop-after must be positive, not {args.stop_after:g}")
    if args.deepum_config:
        check_config(parser, "--deepum-config", args.deepum_config)
    return args


def check_config(parser: argparse.ArgumentParser, what: str, path: str) -> None:
    """Exits with status 2 and one line where `path` is no DeepUMConfig JSON file."""
    try:
        DeepUMConfig.load(path)
    except (OSError, ValueError, TypeError) as exc:
        parser.error(f"{what}: {exc}")


def is_config(sources: list[Path]) -> bool:
    """Whether a tree's sources are a DeepUMConfig file (the tree is this checkout under it)."""
    return len(sources) == 1 and sources[0].suffix == ".json"


def prepare(name: str, sources: list[Path], work: Path) -> Path:
    """A copy of this checkout with `sources` applied (patches in order, or one archive), built; returns
    its folder."""
    tree = work / name
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(ROOT, tree, symlinks=True, ignore=shutil.ignore_patterns(".git", "build"))
    for source in sources:
        if source.suffix == ".patch":
            subprocess.run(["git", "apply", str(source)], cwd=tree, check=True)
            continue
        with tarfile.open(source) as archive:
            archive.extractall(tree, filter="data")
    for command in BUILD:
        subprocess.run(command, cwd=tree, check=True, stdout=subprocess.DEVNULL, env=env_for(tree))
    return tree


def env_for(tree: Path) -> dict:
    """The environment of a command run in `tree`: its deepum first on the path."""
    return {**os.environ, "PYTHONPATH": str(tree)}


def pair_command(out: Path, model: str, tree: str, pairs: int, steps: int, warmup: int,
                 deepum_config: str | None) -> list[str]:
    """bench/no_pressure.py's command for the model's pairs in all, the last one new (--resume)."""
    workload, sizes, capacity = MODELS[model]
    command = [sys.executable, "bench/no_pressure.py", "--out", str(out / f"{model}_{tree}"), "--workloads", workload,
               "--size", f"{workload}={sizes}", "--capacity", f"{workload}={capacity}", "--lockstep",
               "--repeats", str(pairs), "--steps", str(steps), "--warmup", str(warmup), "--tolerance", "1.5",
               "--timeout", str(150 + steps), "--resume"]
    return command + (["--deepum-config", str(Path(deepum_config).resolve())] if deepum_config else [])


HOOK_PARTS = ("scan", "translate", "policy", "submit")
"""The hook's parts (hook_split_s_per_step) the summary shows; policy includes translate."""


def summary(out: Path, models: list[str], trees: list[str]) -> list[dict]:
    """Per model and tree, from OUT/<model>_<tree>/: the pairs and their verdict (no_pressure.json), deepum's
    and none's run medians round by round and their medians (s), the medians of the hook's parts (ms a
    step) and of the launches a step that took a remembered iteration's plan."""
    rows = []
    for model in models:
        for tree in trees:
            folder = out / f"{model}_{tree}"
            row = {"model": model, "tree": tree}
            try:
                workload = MODELS[model].workload
                result = json.loads((folder / "no_pressure.json").read_text())["workloads"][workload]
                runs = [json.loads(f.read_text()) for f in sorted(folder.glob(f"{workload}_deepum_*.json"))]
            except (OSError, KeyError, ValueError):
                rows.append({**row, "status": "no record"})
                continue
            splits = [r.get("hook_split_s_per_step") or {} for r in runs]
            row.update(status=result.get("status", "?"), pairs=result.get("pair_ratios", []),
                       pair_median=result.get("pair_median"), verdict=result.get("verdict"),
                       deepum_steps=result["deepum_run_medians"], none_steps=result["none_run_medians"],
                       deepum_step_s=statistics.median(result["deepum_run_medians"]),
                       none_step_s=statistics.median(result["none_run_medians"]),
                       hook_ms={part: 1e3 * statistics.median(s[part] for s in splits)
                                for part in HOOK_PARTS if splits and all(part in s for s in splits)},
                       repeated_plan_launches=statistics.median(
                           r.get("repeated_plan_launches_per_step") or 0 for r in runs) if runs else None)
            rows.append(row)
    return rows


AGAINST_FIRST = {"pairs": "against_first", "deepum_steps": "deepum_against_first", "none_steps": "none_against_first"}
"""What against_first sets against the first tree's, and the key of the comparison."""


def against_first(rows: list[dict]) -> None:
    """Adds to each model's rows after its first tree's, round by round, the ratio of its pair to the first
    tree's pair of the same round (the trees take turns, so a round shares the machine's drift), their
    median and the rounds in which it came lower ("against_first"; absent where either has no pairs); the
    same of deepum's and of none's run medians ("deepum_against_first", "none_against_first"), which show
    whether a lower pair came from deepum's own steps or from the in-memory steps beside them."""
    first: dict[str, dict] = {}
    for row in rows:
        if row["model"] not in first:
            first[row["model"]] = row
            continue
        for figures, key in AGAINST_FIRST.items():
            ratios = [mine / theirs for mine, theirs in zip(row.get(figures) or [], first[row["model"]].get(figures) or [])]
            if ratios:
                row[key] = {"ratios": ratios, "median": statistics.median(ratios), "lower": sum(r < 1 for r in ratios)}


def device(out: Path) -> str | None:
    """The GPU the pairs ran on, as the first of OUT's no_pressure.json records names it."""
    for path in sorted(out.glob("*/no_pressure.json")):
        try:
            return json.loads(path.read_text()).get("device")
        except (OSError, ValueError):
            continue
    return None


def print_summary(rows: list[dict]) -> None:
    print(f"{'model':<11} {'tree':<14} {'pairs':>5} {'median':>7} {'verdict':<10} {'deepum s':>9} {'none s':>7}"
          f" {'repeated':>8}  hook ms")
    for r in rows:
        if r["status"] != "ok":
            print(f"{r['model']:<11} {r['tree']:<14} {r['status']}")
            continue
        hook = " ".join(f"{k} {v:.1f}" for k, v in r["hook_ms"].items())
        versus = "; ".join(f"{name} {r[key]['median']:.3f}, lower in {r[key]['lower']} of {len(r[key]['ratios'])}"
                           for name, key in zip(("pairs", "deepum's steps", "none's"), AGAINST_FIRST.values())
                           if key in r)
        versus = f"  against the first tree, round by round: {versus}" if versus else ""
        print(f"{r['model']:<11} {r['tree']:<14} {len(r['pairs']):>5} {r['pair_median']:>7.3f} {r['verdict']:<10} "
              f"{r['deepum_step_s']:>9.4f} {r['none_step_s']:>7.4f} {r['repeated_plan_launches'] or 0:>8.0f}  "
              f"{hook}{versus}")


def main(argv=None) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    folders = {THIS_TREE: ROOT}
    configs = {THIS_TREE: args.deepum_config}
    for name, sources in args.trees.items():
        configs[name] = args.deepum_config
        if is_config(sources):
            folders[name], configs[name] = ROOT, str(sources[0])
        elif args.dry_run:
            print(f"build {name}: a copy of {ROOT} with {' + '.join(map(str, sources))} in {args.work / name}")
            folders[name] = args.work / name
        else:
            folders[name] = prepare(name, sources, args.work)
            print(f"{name} built at {time.monotonic() - started:.0f} s", flush=True)
    longest_round, rows = 0.0, None
    for pairs in range(1, args.rounds + 1):
        if time.monotonic() - started + longest_round > args.stop_after:
            print(f"stopped before round {pairs}: it would end past {args.stop_after:g} s")
            break
        round_started = time.monotonic()
        for model in args.model_list:
            for name, folder in folders.items():
                command = pair_command(args.out.resolve(), model, name, pairs, args.steps, args.warmup, configs[name])
                if args.dry_run:
                    print(f"({folder}) {shlex.join(command)}")
                    continue
                run = subprocess.run(command, cwd=folder, capture_output=True, text=True, env=env_for(folder))
                lines = (run.stdout + run.stderr).strip().splitlines()
                print(f"{model} {name} round {pairs}: {lines[-1] if lines else f'exit status {run.returncode}'}",
                      flush=True)
        longest_round = max(longest_round, time.monotonic() - round_started)
        if not args.dry_run:
            rows = write_record(args, list(folders))
    print(f"done at {time.monotonic() - started:.0f} s")
    if not args.dry_run:
        print_summary(rows if rows is not None else write_record(args, list(folders)))
    return 0


def write_record(args: argparse.Namespace, trees: list[str]) -> list[dict]:
    """Writes OUT/lockstep_ab.json from the records so far and returns its rows."""
    rows = summary(args.out.resolve(), args.model_list, trees)
    against_first(rows)
    record = {"command": shlex.join([Path(sys.executable).name, *sys.argv]), "device": device(args.out),
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "trees": {name: [str(s) for s in sources] for name, sources in args.trees.items()},
              "steps": args.steps, "warmup": args.warmup, "rows": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "lockstep_ab.json").write_text(json.dumps(record, indent=1) + "\n")
    return rows


if __name__ == "__main__":
    sys.exit(main())
