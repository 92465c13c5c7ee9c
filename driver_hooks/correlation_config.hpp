// CorrelationConfig from a DeepUMConfig dictionary (DeepUMConfig.to_dict()), for the bindings.
#pragma once
#include <pybind11/pybind11.h>

#include "correlation.hpp"

namespace deepum {

inline CorrelationConfig correlation_config_from(const pybind11::dict& c) {
  CorrelationConfig out;
  out.lookahead = c["lookahead"].cast<size_t>();
  out.exec_ids = c["exec_ids"].cast<size_t>();
  out.exec_records = c["exec_records"].cast<size_t>();
  out.block_rows = c["block_rows"].cast<size_t>();
  out.block_ways = c["block_ways"].cast<size_t>();
  out.block_successors = c["block_successors"].cast<size_t>();
  out.chain_blocks = c["chain_blocks"].cast<size_t>();
  return out;
}

}  // namespace deepum
