// The learned state across the Python boundary (policy_bindings.cpp, uvm_model_bindings.cpp,
// online_bindings.cpp): bytes in and out, and a warm start's trial as a dict.
#pragma once
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "policy.hpp"

namespace deepum {

inline pybind11::bytes state_bytes(const std::vector<uint8_t>& state) {
  return pybind11::bytes(reinterpret_cast<const char*>(state.data()), state.size());
}

// Hands `data` to target.load_state(bytes, size): a Policy, or the engine that runs one.
template <class Target>
void load_state_bytes(Target& target, const pybind11::bytes& data) {
  const std::string_view view = data;
  target.load_state(reinterpret_cast<const uint8_t*>(view.data()), view.size());
}

// {"state": "cold" | "on_trial" | "kept" | "forgotten", "iterations": judged, "launched": ..., "known": ...}
inline pybind11::dict warm_start_dict(const WarmStartStatus& w) {
  static const char* names[] = {"cold", "on_trial", "kept", "forgotten"};
  pybind11::dict out;
  out["state"] = names[int(w.state)];
  out["iterations"] = w.iterations;
  out["launched"] = w.launched;
  out["known"] = w.known;
  pybind11::list trial;
  for (const auto& [launched, known] : w.trial) trial.append(pybind11::make_tuple(launched, known));
  out["trial"] = trial;
  return out;
}

}  // namespace deepum
