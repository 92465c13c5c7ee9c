"""Seeds known bugs into the native policy, the memory map, the fault log's iteration bins, the foreach
argument reader, the indexed kernels' marks, the managed allocator, the device-memory rule and its
session's iteration marks, the worker's hand-over to its pools and the launch hook's merge of a
launch's accesses, one at a time, each in a scratch copy of the checkout where deepum._native is
rebuilt, and runs the tests that must catch it; prints which tests failed per mutation. A mutation no
test catches is a hole in the tests.

    python tests/mutation_check.py [--only NAME]

Needs a source checkout and a C++17 compiler; the checkout itself is not changed.
"""
from __future__ import annotations

import argparse
import re
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ["tests/test_policy.py", "tests/test_next_use.py", "tests/test_schedule.py", "tests/test_simulator.py",
         "tests/test_memory_map.py", "tests/test_sleep.py", "tests/test_iteration_bins.py",
         "tests/test_tensor_lists_cpu.py", "tests/test_kernel_kinds.py", "tests/test_warm_start.py",
         "tests/test_runtime_cpu.py", "tests/test_warm_start_gpu_cpu.py", "tests/test_first_step_floor_cpu.py",
         "tests/test_hand_over.py", "tests/test_native_agrees.py", "tests/test_recorder.py"]

# name -> (file, exact text, replacement)
MUTATIONS = {
    "launch-accesses-write-not-or-ed": (
        "driver_hooks/launch_accesses.hpp",
        "accesses[rows - 1].write = accesses[rows - 1].write || accesses[i].write;",
        "accesses[rows - 1].write = accesses[i].write;"),
    "launch-accesses-pages-not-summed": (
        "driver_hooks/launch_accesses.hpp", "accesses[rows - 1].pages += accesses[i].pages;", ""),
    "held-lessons-ending-short-kept-whole": (
        "driver_hooks/correlation.hpp", "if (matching_ && matched_ == state.lessons.size()) return;",
        "if (matching_) return;"),
    "held-lessons-not-caught-up": (
        "driver_hooks/correlation.hpp",
        "for (size_t i = 0; i < matched_; ++i) learn(running_->blocks, i ? lessons[i - 1] : kNoBlock, lessons[i]);", ""),
    "prefetch-batch-ignored": (
        "driver_hooks/policy.hpp", "else if (trusting && prefetches_due())", "else if (trusting)"),
    "prefetch-batch-beyond-the-lookahead": (
        "driver_hooks/policy.hpp", "return issued_ + std::min(options_.prefetch_batch, lookahead) <= lookahead + 1;",
        "return issued_ + options_.prefetch_batch <= lookahead + 1;"),
    "repeated-plan-prefetches-what-is-not-memory": (
        "driver_hooks/policy.hpp", "if (resident_[b] || host_mapped_[b] || !memory_.exists(b) || resident_count_ >= capacity_) return;",
        "if (resident_[b] || host_mapped_[b] || resident_count_ >= capacity_) return;"),
    "repeated-plan-copies-as-recorded": (
        "driver_hooks/policy.hpp", "move = invalidates() && memory_.choose_discard(b, ticket) ? Move::kDiscard : Move::kEvict;",
        "(void)ticket;"),
    "repeated-plans-share-unscaled": (
        "driver_hooks/plan_records.hpp", "a.same_places(b) * 100 >= percent_ * a.launches()",
        "a.same_places(b) * 100 >= percent_"),
    "far-prefetch-takes-a-live-blocks-place": (
        "driver_hooks/policy.hpp", "if (far && v != kNone && !(invalidates() && memory_.dead(v))) {",
        "if (false && far && v != kNone) {"),
    "far-prefetch-counted-from-the-launch": (
        "driver_hooks/policy.hpp", "next_use_->rule().foresee(b, launch_) > launch_ + options_.tables.lookahead + 1;",
        "next_use_->rule().foresee(b, launch_) > launch_ + 1;"),
    "repeated-plan-unsettled": (
        "driver_hooks/plan_records.hpp", "if (alike(0, back) && alike(back - 1, 2 * back - 1))", "if (alike(0, back))"),
    "repeated-plan-demands-only-what-it-remembers": (
        "driver_hooks/policy.hpp", "    demand(blocks, count);\n    const PlannedIteration& r = *repeating_;",
        "    for (size_t i = 0; i < count; ++i) use(blocks[i]);\n    const PlannedIteration& r = *repeating_;"),
    "repeated-plan-records-the-moves-made": (
        "driver_hooks/policy.hpp", "plans_->record_remembered(exec_id, blocks, count, *repeating_);",
        "plans_->record(exec_id, blocks, count, plan_.moves);"),
    "repeated-plans-look-two-iterations-back": (
        "driver_hooks/plan_records.hpp", "constexpr size_t kRepeatBack = 8;", "constexpr size_t kRepeatBack = 2;"),
    "recall-drops-the-followed-iteration": (
        "driver_hooks/predictor.hpp", "if (following_ >= 0 && same(size_t(following_))) return;", ""),
    "recall-forgets-across-iterations": (
        "driver_hooks/predictor.hpp", "if (following_ >= 0 && size_t(following_) >= past_.size()) following_ = -1;",
        "following_ = -1;"),
    "known-block-numbers-the-block": (
        "driver_hooks/block_list.hpp", "const auto it = dense_.find(number);\n    return it == dense_.end() ? kNone : it->second;",
        "return const_cast<BlockIndex*>(this)->dense(number);"),
    "late-lessons-keep-an-exec-id-settled": (
        "driver_hooks/correlation.hpp", "it->second.settled = false;", ""),
    "allocation-span-ends-at-the-last-start": (
        "driver_hooks/segment_table.hpp", "p >= by_start_.back().end()) return nullptr;",
        "p >= by_start_.back().start) return nullptr;"),
    "allocation-span-skips-the-first-start": (
        "driver_hooks/segment_table.hpp", "p < by_start_.front().start ||", "p <= by_start_.front().start ||"),
    "host-map-one-use-too-many": (
        "driver_hooks/next_use.hpp", "uses.size() > most_uses) continue;", "uses.size() > most_uses + 1) continue;"),
    "host-map-ignores-the-span": (
        "driver_hooks/next_use.hpp", "(uint64_t(uses.back()) - uses.front() + 1) * 100 <= span_percent * past.length",
        "true"),
    "host-map-keeps-beyond-the-room": (
        "driver_hooks/policy.hpp", "ranked.resize(std::min(ranked.size(), size_t(capacity_) - used));", ""),
    "host-map-keeps-too-few-uses": (
        "driver_hooks/policy.hpp", "passes >= least) ranked.emplace_back(passes, b);",
        "passes + 1 >= least) ranked.emplace_back(passes, b);"),
    "host-map-counts-each-launch-a-pass": (
        "driver_hooks/next_use.hpp", "runs += previous == nullptr || p != *previous + 1;", "runs += 1;"),
    "host-map-room-misses-the-span-end": (
        "driver_hooks/next_use.hpp", "return p >= first && p <= last; });", "return p >= first && p < last; });"),
    "host-map-without-pressure": (
        "driver_hooks/policy.hpp", "options_.host_map_uses == 0 || !under_pressure()) return;",
        "options_.host_map_uses == 0) return;"),
    "host-mapped-blocks-demanded": (
        "driver_hooks/policy.hpp", "if (!resident_[b] && !host_mapped_[b]) missing_.push_back(b);",
        "if (!resident_[b]) missing_.push_back(b);"),
    "host-mapped-blocks-prefetched": (
        "driver_hooks/policy.hpp", "if (resident_[b] || host_mapped_[b] || !memory_.exists(b)) continue;",
        "if (resident_[b] || !memory_.exists(b)) continue;"),
    "eviction-threads-for-the-driver": (
        "driver_hooks/options.hpp", "return pre_evicts ? o.eviction_threads : 0;", "return o.eviction_threads;"),
    "eviction-threads-without-pre-eviction": (
        "driver_hooks/options.hpp", "(o.mode == Mode::kDeepUM && o.pre_evict) || o.mode == Mode::kOracle;",
        "o.mode == Mode::kDeepUM || o.mode == Mode::kOracle;"),
    "oracle-evicts-one-at-a-time": (
        "driver_hooks/options.hpp", "(o.mode == Mode::kDeepUM && o.pre_evict) || o.mode == Mode::kOracle;",
        "o.mode == Mode::kDeepUM && o.pre_evict;"),
    "oracle-counts-no-uses": (
        "driver_hooks/policy.hpp", "return next_use_ ? &next_use_->rule() : oracle_counts_.get();",
        "return next_use_ ? &next_use_->rule() : nullptr;"),
    "oracle-counts-no-iterations": (
        "driver_hooks/policy.hpp", "if (oracle_counts_) oracle_counts_->start_iteration(first);", ""),
    "hand-over-past-a-busy-worker": (
        "driver_hooks/hand_over.hpp", "while (!worker_behind && taken < count && served_by_pool(taken))",
        "while (taken < count && served_by_pool(taken))"),
    "hand-over-the-workers-own-commands": (
        "driver_hooks/hand_over.hpp", "while (!worker_behind && taken < count && served_by_pool(taken))",
        "while (!worker_behind && taken < count)"),
    "hand-over-unpublished-waits": (
        "driver_hooks/hand_over.hpp", "return std::min(wait, published);", "return wait;"),
    "eviction-threads-rate-ignored": (
        "driver_hooks/uvm_model.hpp", "eviction_threads(options) ? cost.threaded_evict_bytes_per_s : cost.evict_bytes_per_s",
        "cost.evict_bytes_per_s"),
    "host-mapped-accesses-free": (
        "driver_hooks/uvm_model.hpp", "double(host_mapped_bytes) / cost_.host_map_bytes_per_s", "0.0"),
    "host-mapped-accesses-queue-behind-migrations": (
        "driver_hooks/uvm_model.hpp", "const double mapped_end = ready + fault_s",
        "const double mapped_end = std::max(link_free_s_, ready + fault_s)"),
    "lru-without-dead-preference": (
        "driver_hooks/replacement.hpp", "      if (c.dead(b)) return b;\n", ""),
    "next-use-ignores-window-protection": (
        "driver_hooks/policy.hpp", "victim(launch_, Asking(*this, sparing && confident_, true), need_at)",
        "victim(launch_, Asking(*this, sparing && confident_ && !ruled, true), need_at)"),
    "lru-ignores-window-protection": (
        "driver_hooks/policy.hpp", "victim(launch_, Asking(*this, sparing && confident_, true), need_at)",
        "victim(launch_, Asking(*this, sparing && confident_ && ruled, true), need_at)"),
    "prefetch-need-at-zero": (
        "driver_hooks/policy.hpp", "victim(launch_, Asking(*this, sparing && confident_, true), need_at)",
        "victim(launch_, Asking(*this, sparing && confident_, true), 0)"),
    "victim-in-use-by-the-running-kernel": (
        "driver_hooks/policy.hpp", "return policy_.used_by_[b] != policy_.launch_ && (", "return (true) && ("),
    "bookkeeping-unbounded-without-marks": (
        "driver_hooks/policy.hpp", "kLongestIteration = uint64_t(1) << 16;", "kLongestIteration = UINT64_MAX;"),
    "foresight-ignores-exec-ids": (
        "driver_hooks/next_use.hpp", "return place >= execs.size() || execs[place] != exec_id;",
        "return place >= execs.size();"),
    "foresight-from-the-oldest-match": (
        "driver_hooks/next_use.hpp", "matching_.empty() ? iterations_ - 1 : matching_.front()",
        "matching_.empty() ? iterations_ - 1 : matching_.back()"),
    "foresight-wraps-into-the-same-iteration": (
        "driver_hooks/next_use.hpp", "foreseen_from_ + 1 < iterations_ ? foreseen_from_ + 1 : foreseen_from_",
        "foreseen_from_"),
    "schedule-follows-past-a-departure": (
        "driver_hooks/schedule.hpp", "position < plan_->execs.size() && plan_->execs[position] == exec_id;",
        "position < plan_->execs.size();"),
    "schedule-evicts-at-the-victims-last-use": (
        "driver_hooks/schedule.hpp", "at = std::max(size_t(last_[victim] + 1),",
        "at = std::max(size_t(last_[victim] + (last_[victim] < 0)),"),
    "woken-blocks-not-touched": (
        "driver_hooks/policy.hpp",
        "      count_touched(b);\n      if (!resident_[b] && !host_mapped_[b]) make_resident(b, launch_ + 1);",
        "      if (!resident_[b] && !host_mapped_[b]) make_resident(b, launch_ + 1);"),
    "woken-host-mapped-blocks-made-resident": (
        "driver_hooks/policy.hpp", "if (!resident_[b] && !host_mapped_[b]) make_resident",
        "if (!resident_[b]) make_resident"),
    "woken-blocks-arrive-at-the-last-launch": (
        "driver_hooks/policy.hpp", "make_resident(b, launch_ + 1);", "make_resident(b, launch_);"),
    "gate-wakes-at-its-threshold": (
        "driver_hooks/sleep_gate.hpp", "segment_bytes_ > threshold_bytes_", "segment_bytes_ >= threshold_bytes_"),
    "segments-populated-in-every-mode": (
        "driver_hooks/options.hpp", "return o.mode == Mode::kDeepUM && o.populate_segments;", "return o.populate_segments;"),
    "waking-segment-populated": (
        "driver_hooks/uvm_model.hpp", "if (!woke && gate_.asleep() && populates_new_segments_)",
        "if ((woke || gate_.asleep()) && populates_new_segments_)"),
    "populated-segment-blocks-arrive-at-once": (
        "driver_hooks/uvm_model.hpp", "      arrival_s_[b] = link_free_s_;\n      move_in(b, kPagesPerBlock, 0);",
        "      move_in(b, kPagesPerBlock, 0);"),
    "host-map-counts-fills": (
        "driver_hooks/next_use.hpp", "if (!fill && b.last_counted != launch) {", "if (b.last_counted != launch) {"),
    "host-map-counts-earlier-data": (
        "driver_hooks/next_use.hpp", "return i >= blocks_[counted_[i].block].counted_from;", "return true;"),
    "next-use-requeue-drops-the-unforeseen": (
        "driver_hooks/next_use.hpp", "if (b.queued) queue_.emplace_back(",
        "if (b.queued && b.next_use != kUnforeseen) queue_.emplace_back("),
    "fill-kernels-unrecognised": (
        "driver_hooks/fill_kernels.hpp", '{"FillFunctor"}', '{"NoSuchKernel"}'),
    "simulator-sees-no-fresh-blocks": (
        "driver_hooks/uvm_model.hpp", "          fresh_[b] = 1;", "          fresh_[b] = 0;"),
    "memory-map-takes-no-fresh-blocks": (
        "driver_hooks/memory_map.hpp", "fresh_.insert(int64_t(b));", "(void)b;"),
    "waking-map-forgets-allocations-made-asleep": (
        "driver_hooks/memory_map.hpp", "      for (const auto& [addr, a] : live_) live.emplace_back(addr, a.size);",
        "      (void)live_;"),
    "sleeping-map-answers-dead": (
        "driver_hooks/memory_map.hpp", "if (bytes != kBlockBytes || !awake_) return false;",
        "if (bytes != kBlockBytes) return false;"),
    "sleeping-map-records-fresh-blocks": (
        "driver_hooks/memory_map.hpp", "if (awake_ && tracking_releases_ && size)", "if (tracking_releases_ && size)"),
    "kernel-spans-binned-by-end": (
        "driver_hooks/iteration_bins.hpp", "bin(k.start).kernels.add(k.start, k.end);", "bin(k.end).kernels.add(k.start, k.end);"),
    "simulator-never-sleeps": (
        "driver_hooks/uvm_model.hpp", "sleeps(trace, options) ? options.wake_percent : 0", "0"),
    "confidence-ignored": (
        "driver_hooks/policy.hpp", "recent_hits_.count() >= options_.confident_hits", "true"),
    "policy-ignores-the-schedule": (
        "driver_hooks/policy.hpp", "const bool following = trusting && scheduled;", "const bool following = false;"),
    "cancellation-ignored": (
        "driver_hooks/memory_map.hpp", "ticket >= d.cancelled_at", "true"),
    "discard-ignores-last-users": (
        "driver_hooks/memory_map.hpp", "if (it != last_users_.end())\n", "if (false)\n"),
    "allocations-outside-segments-tracked": (
        "driver_hooks/memory_map.hpp", "if (!in_segment(addr)) return false;", ""),
    "record-at-a-mark-counts-before-it": (
        "driver_hooks/iteration_bins.hpp", "std::upper_bound(marks_.begin()", "std::lower_bound(marks_.begin()"),
    "mark-goes-back-in-time": (
        "driver_hooks/iteration_bins.hpp", "marks_.empty() ? t : std::max(t, marks_.back())", "t"),
    "busy-time-not-sorted": (
        "driver_hooks/iteration_bins.hpp", "    std::sort(records.begin(), records.end());\n", ""),
    "kernel-spans-not-sorted": (
        "driver_hooks/iteration_bins.hpp", "    std::sort(spans.begin(), spans.end());\n", ""),
    "busy-union-misses-the-run-before": (
        "driver_hooks/iteration_bins.hpp", "    if (it != runs_.begin() && std::prev(it)->second >= start) --it;\n", ""),
    "busy-union-keeps-every-run": (
        "driver_hooks/iteration_bins.hpp", "    while (runs_.size() > kKeptRuns) forget_oldest();\n", ""),
    "busy-union-merge-ends-at-the-new-interval": (
        "driver_hooks/iteration_bins.hpp", "      last = std::max(last, it->second);\n", "      last = end;\n"),
    "busy-bin-settles-a-mark-early": (
        "driver_hooks/iteration_bins.hpp", "if (bins_.size() >= 4) bins_[bins_.size() - 4].settle();",
        "if (bins_.size() >= 3) bins_[bins_.size() - 3].settle();"),
    "allocation-not-held-while-issuing": (
        "driver_hooks/memory_map.hpp", "      if (it->second.issuing) {", "      if (false) {"),
    "taken-discard-not-marked-issuing": (
        "driver_hooks/memory_map.hpp", "    if (valid) d.issuing += 1;", ""),
    "parts-joined-across-segments": (
        "driver_hooks/memory_map.hpp", "== start && segment == part_segment) {", "== start) {"),
    "returned-discard-counted-as-a-wait": (
        "driver_hooks/memory_map.hpp", "        if (wait_(stream, *d.issued)) allocation_waits_ += 1;",
        "        wait_(stream, *d.issued);\n        allocation_waits_ += 1;"),
    "handed-discard-not-waited-for": (
        "driver_hooks/memory_map.hpp", "    discard_finished(b, &done);\n    return true;",
        "    discard_finished(b, nullptr);\n    return true;"),
    "handed-discard-taken-when-cancelled": (
        "driver_hooks/memory_map.hpp", "    if (!take_pending(b, ticket)) return false;", "    take_pending(b, ticket);"),
    "tensor-list-reads-stale-slots": (
        "driver_hooks/tensor_lists.hpp", "if (!used[slot]) continue;", "if (slot >= layout.slots) continue;"),
    "tensor-list-skips-step-counters": (
        "driver_hooks/tensor_lists.hpp", "if (layout.step_addresses && slot < layout.step_slots)", "if (false)"),
    "tensor-list-without-padding": (
        "driver_hooks/tensor_lists.hpp", "round_up(size, align) != param_size", "size != param_size"),
    "indexed-block-needs-one-indexed-use": (
        "driver_hooks/next_use.hpp", "return std::all_of(uses.begin(), uses.end(),", "return std::any_of(uses.begin(), uses.end(),"),
    "indexed-mark-missing": (
        "driver_hooks/indexed_kernels.hpp", '"indexing_backward_kernel",', ""),
    "indexed-positions-by-place": (
        "driver_hooks/next_use.hpp", "if (indexed) indexed_.push_back(uint32_t(launch - start_));",
        "if (indexed) indexed_.push_back(uint32_t(execs_.size() - 1));"),
    "absent-block-prefetched": (
        "driver_hooks/policy.hpp", "if (resident_[b] || host_mapped_[b] || !memory_.exists(b)) continue;",
        "if (resident_[b] || host_mapped_[b]) continue;"),
    "absent-block-host-mapped": (
        "driver_hooks/policy.hpp", "if (memory_.exists(b) && !memory_.dead(b)) chosen.push_back(b);",
        "if (!memory_.dead(b)) chosen.push_back(b);"),
    "warm-start-mapped-blocks-ignored": (
        "driver_hooks/policy.hpp", "    for (Block b : loaded) take(b);\n", ""),
    "warm-start-mapped-blocks-on-trial": (
        "driver_hooks/policy.hpp", "if (warm_.state != WarmStart::kOnTrial) loaded.swap(loaded_mapped_);",
        "loaded.swap(loaded_mapped_);"),
    "host-map-resident-at-once": (
        "driver_hooks/policy.hpp", "      if (resident_[b]) {\n        map_when_evicted_[b] = 1;\n        map_queue_.push_back(b);\n        continue;\n      }\n",
        "      if (resident_[b]) leave(b);\n"),
    "host-map-resident-and-mapped": (
        "driver_hooks/policy.hpp", "      if (resident_[b]) {\n        map_when_evicted_[b] = 1;\n        map_queue_.push_back(b);\n        continue;\n      }\n",
        ""),
    "host-map-dead-when-evicted": (
        "driver_hooks/policy.hpp", "      if (!memory_.dead(b)) {\n        host_mapped_[b] = 1;",
        "      {\n        host_mapped_[b] = 1;"),
    "host-map-waiting-before-a-dead-victim": (
        "driver_hooks/policy.hpp", "if (waiting == kNone || (chosen != kNone && invalidates() && memory_.dead(chosen))) return chosen;",
        "if (waiting == kNone) return chosen;"),
    "host-map-waiting-after-the-rule": (
        "driver_hooks/policy.hpp", "    return waiting;\n  }", "    return chosen != kNone ? chosen : waiting;\n  }"),
    "next-use-spare-forgotten": (
        "driver_hooks/next_use.hpp", "void spare(int64_t block, uint64_t launch) { push(block, at(block), launch); }",
        "void spare(int64_t, uint64_t) {}"),
    "warm-start-learned-state-dropped": (
        "driver_hooks/policy.hpp", "    warm_.state = WarmStart::kOnTrial;\n",
        "    warm_.state = WarmStart::kOnTrial;\n    learn_afresh();\n"),
    "warm-start-trial-unrecorded": (
        "driver_hooks/policy.hpp", "    warm_.trial.emplace_back(warm_.launched, warm_.known);\n", ""),
    "warm-start-map-when-evicted-unsaved": (
        "driver_hooks/policy.hpp", "if (host_mapped_[b] || map_when_evicted_[b]) mapped.push_back",
        "if (host_mapped_[b]) mapped.push_back"),
    "simulator-blocks-always-exist": (
        "driver_hooks/uvm_model.hpp", "    if (!in_a_segment_[b]) return true;\n", "    return true;\n"),
    "allocations-appended-unsorted": (
        "driver_hooks/segment_table.hpp", "        allocations.insert(it, {start, size});",
        "        allocations.push_back({start, size});"),
    "dead-despite-an-allocation-reaching-in": (
        "driver_hooks/segment_table.hpp", "std::prev(it)->first + std::prev(it)->second > lo;",
        "std::prev(it)->first >= lo;"),
    "segments-by-place-unsorted": (
        "driver_hooks/segment_table.hpp", "    std::sort(by_place_.begin(), by_place_.end(),\n", "    if (false) std::sort(by_place_.begin(), by_place_.end(),\n"),
    "portable-number-of-the-later-segment": (
        "driver_hooks/segment_table.hpp", "std::prev(it)->end() > lo) return &*std::prev(it);", "false) return nullptr;"),
    "device-segments-listed-as-managed": (
        "kernels/managed_allocator.cpp", "    if (!segment.managed) continue;\n", ""),
    "device-memory-never-served": (
        "kernels/managed_allocator.cpp", "managed = !s.device_memory;", "managed = true;"),
    "change-of-kind-unreported": (
        "kernels/managed_allocator.cpp", "old_kind_live = old_kind_live || entry.second.managed == device;",
        "old_kind_live = old_kind_live && entry.second.managed == device;"),
    "device-memory-where-pressure-can-come": (
        "deepum/specs/sleep.py", "fuse_bytes <= capacity_bytes", "fuse_bytes <= 2 * capacity_bytes"),
    "device-memory-while-recording": (
        "deepum/specs/sleep.py", "and not recording and not loads_state", "and not loads_state"),
    "device-memory-session-counts-iterations": (
        "deepum/runtime/session.py", "counted = not _session.device_memory", "counted = True"),
    "device-memory-session-keeps-held-frees": (
        "deepum/runtime/session.py", "        if _session.deferred_frees is not None:\n            _session.deferred_frees.release_if_pending()\n        if not counted:",
        "        if _session.deferred_frees is not None and counted:\n            _session.deferred_frees.release_if_pending()\n        if not counted:"),
    "first-step-floor-over-in-memory-steady": (
        "bench/warm_start_gpu.py", "floor = none[0] / warm_steady", "floor = none[0] / steady(none)"),
}


def failing_tests(output: str) -> list[str]:
    return sorted(set(re.findall(r"^FAILED (\S+)", output, flags=re.MULTILINE)))


RECORDS_THE_TESTS_READ = ["bench/results/unbudgeted_traces/call_a/gpt2_bf16_trace.npz"]
"""The files under bench/results/ (left out of the scratch copy) that the tests above read: without
them those tests would fail under every mutation."""


def scratch_copy(into: Path) -> Path:
    for part in ("deepum", "driver_hooks", "kernels", "tests", "bench"):
        shutil.copytree(ROOT / part, into / part, ignore=shutil.ignore_patterns("*.so", "__pycache__", "results"))
    for part in ("setup.py", "pyproject.toml", "README.md", *RECORDS_THE_TESTS_READ):
        (into / part).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / part, into / part)
    return into


def caught_by(name: str, path: str, text: str, replacement: str) -> list[str] | None:
    """The tests that fail with the mutation in place; None when its text is gone from the source."""
    with tempfile.TemporaryDirectory() as scratch:
        copy = scratch_copy(Path(scratch))
        source = copy / path
        original = source.read_text()
        if text not in original:
            return None
        source.write_text(original.replace(text, replacement))
        subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=copy, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        tests = [t for t in TESTS if (copy / t).exists()]
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests], cwd=copy,
                             capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(copy)})
        return failing_tests(run.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(MUTATIONS))
    args = parser.parse_args()
    holes = 0
    for name, (path, text, replacement) in MUTATIONS.items():
        if args.only and name != args.only:
            continue
        caught = caught_by(name, path, text, replacement)
        if caught is None:
            print(f"{name}: its text is no longer in {path}; update the mutation")
        else:
            print(f"{name}: {'caught by ' + ', '.join(caught) if caught else 'NOT CAUGHT'}")
        holes += not caught
    return 1 if holes else 0


if __name__ == "__main__":
    sys.exit(main())
