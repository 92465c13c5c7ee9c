// Options from a mode name and a DeepUMConfig dictionary (DeepUMConfig.to_dict()): the one place
// the config crosses from Python into native code.
#pragma once
#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

#include "options.hpp"

namespace deepum {

inline CorrelationConfig tables_from(const pybind11::dict& c) {
  CorrelationConfig out;
  out.lookahead = c["lookahead"].cast<size_t>();
  out.recall_iterations = c["recall_iterations"].cast<size_t>();
  out.exec_ids = c["exec_ids"].cast<size_t>();
  out.exec_records = c["exec_records"].cast<size_t>();
  out.block_rows = c["block_rows"].cast<size_t>();
  out.block_ways = c["block_ways"].cast<size_t>();
  out.block_successors = c["block_successors"].cast<size_t>();
  out.chain_blocks = c["chain_blocks"].cast<size_t>();
  return out;
}

inline Mode mode_from(const std::string& name) {
  if (name == "um") return Mode::kUm;
  if (name == "advise") return Mode::kAdvise;
  if (name == "deepum") return Mode::kDeepUM;
  if (name == "oracle") return Mode::kOracle;
  throw std::invalid_argument("unknown policy '" + name + "' (um, advise, deepum, oracle)");
}

inline Options options_from(const std::string& mode, const pybind11::dict& c) {
  Options out;
  out.mode = mode_from(mode);
  out.tables = tables_from(c);
  const std::string learn_from = c["learn_from"].cast<std::string>();
  if (learn_from != "accesses" && learn_from != "faults")
    throw std::invalid_argument("learn_from must be 'accesses' or 'faults', got '" + learn_from + "'");
  out.learn_from = learn_from == "faults" ? LearnFrom::kFaults : LearnFrom::kAccesses;
  const std::string eviction = c["eviction"].cast<std::string>();
  if (eviction != "lru" && eviction != "next_use")
    throw std::invalid_argument("eviction must be 'lru' or 'next_use', got '" + eviction + "'");
  out.eviction = eviction == "lru" ? Eviction::kLru : Eviction::kNextUse;
  const std::string far = c["far_prefetches"].cast<std::string>();
  if (far != "evict" && far != "dead_only" && far != "skip")
    throw std::invalid_argument("far_prefetches must be 'evict', 'dead_only' or 'skip', got '" + far + "'");
  out.far_prefetches = far == "evict" ? FarPrefetches::kEvict : far == "dead_only" ? FarPrefetches::kDeadOnly : FarPrefetches::kSkip;
  out.foresight_iterations = c["foresight_iterations"].cast<size_t>();
  out.schedule = c["schedule"].cast<bool>();
  out.schedule_ahead = c["schedule_ahead"].cast<size_t>();
  out.schedule_accesses = c["schedule_accesses"].cast<size_t>();
  out.repeat_plans_percent = c["repeat_plans_percent"].cast<size_t>();
  out.confident_hits = c["confident_hits"].cast<size_t>();
  out.prefetch_batch = c["prefetch_batch"].cast<size_t>();
  out.host_map_uses = c["host_map_uses"].cast<size_t>();
  out.host_map_span_percent = c["host_map_span_percent"].cast<size_t>();
  out.host_map_indexed = c["host_map_indexed"].cast<bool>();
  out.host_map_keep_uses = c["host_map_keep_uses"].cast<size_t>();
  out.wake_percent = c["wake_percent"].cast<size_t>();
  out.populate_segments = c["populate_segments"].cast<bool>();
  out.prefetch = c["prefetch"].cast<bool>();
  out.pre_evict = c["pre_evict"].cast<bool>();
  out.invalidate = c["invalidate"].cast<bool>();
  out.eviction_threads = c["eviction_threads"].cast<size_t>();
  out.prefetch_threads = c["prefetch_threads"].cast<size_t>();
  out.discard_threads = c["discard_threads"].cast<size_t>();
  out.drop_to_host = c["drop_to_host"].cast<bool>();
  return out;
}

}  // namespace deepum
