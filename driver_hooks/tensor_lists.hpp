// Which tensors a launch of PyTorch's multi_tensor_apply_kernel uses (the foreach ops and the fused
// optimizers). Such a kernel takes one struct by value that lists up to `slots` tensors per operand
// list, and a launch fills only the slots it uses: PyTorch reuses the struct across the launches of
// one call and builds it on the stack, so the other slots hold addresses of earlier launches, or of
// earlier calls. Scanned word by word they count as uses, and an optimizer's state looks used in
// more launches than it is. The kernel's block b works on slot block_to_tensor[b], so the slots a
// launch of grid_x blocks uses are block_to_tensor[0 .. grid_x).
//
// Layouts: PyTorch's argument structs of at most 4 KiB (ATen/native/cuda/MultiTensorApply.cuh of
// PyTorch 2.x), recognised by the mangled kernel name and checked against the parameter's size. A
// kernel whose name or size does not fit, or whose struct names a slot past its table, is scanned
// whole instead: the reader may only narrow what the scan finds, never guess.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace deepum {

struct TensorListLayout {
  int depth = 0;                     // operand lists (addresses[depth][slots] at offset 0)
  size_t slots = 0;                  // tensors one launch may list
  size_t step_addresses = 0;         // offset of the fused optimizers' state_steps_addresses[step_slots]; 0: none
  size_t step_slots = 0;
  size_t block_to_tensor = 0;        // offset of block_to_tensor[blocks], one byte each
  size_t blocks = 0;                 // blocks one launch may have
};

namespace tensor_lists {

constexpr int kMaxTensors[5] = {110, 64, 48, 36, 30};            // depth_to_max_tensors
constexpr int kMaxTensorsScalarList[5] = {96, 64, 48, 36, 30};   // depth_to_max_tensors_scalarlist
constexpr int kMaxTensorsComplexDouble[2] = {72, 60};            // ..._scalarlist_of_complex_double
constexpr size_t kMaxBlocks = 320;                               // depth_to_max_blocks, every depth

inline size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// Size and alignment of a scalar list's element, from its mangled type at name[at]; 0 when unknown.
inline std::pair<size_t, size_t> scalar_type(const std::string& name, size_t at) {
  static const std::pair<const char*, std::pair<size_t, size_t>> types[] = {
      {"N3c107complexIdEE", {16, 16}}, {"N3c107complexIfEE", {8, 8}},
      {"d", {8, 8}}, {"f", {4, 4}}, {"l", {8, 8}}, {"x", {8, 8}}, {"i", {4, 4}}, {"b", {1, 1}}};
  for (const auto& [mangled, size] : types)
    if (name.compare(at, std::strlen(mangled), mangled) == 0) return size;
  return {0, 0};
}

// The depth n of "Li<n>E" at name[at], or 0.
inline int depth_at(const std::string& name, size_t at) {
  if (name.compare(at, 2, "Li") != 0 || at + 3 >= name.size() || name[at + 3] != 'E') return 0;
  const int n = name[at + 2] - '0';
  return n >= 1 && n <= 5 ? n : 0;
}

}  // namespace tensor_lists

// The layout of a multi_tensor_apply_kernel's first parameter of param_size bytes, or nullopt for
// any other kernel and any struct that does not have the size its name implies.
inline std::optional<TensorListLayout> tensor_list_layout(const char* mangled_name, size_t param_size) {
  using namespace tensor_lists;
  if (!mangled_name) return std::nullopt;
  const std::string name(mangled_name);
  if (name.find("multi_tensor_apply_kernel") == std::string::npos) return std::nullopt;
  TensorListLayout layout;
  size_t end = 0, align = 8;  // bytes up to block_to_tensor, and the struct's alignment
  bool start_tensor_field = true;
  size_t at;
  if ((at = name.find("32FusedOptimizerTensorListMetadataI")) != std::string::npos) {
    layout.depth = depth_at(name, at + 35);
    if (!layout.depth) return std::nullopt;
    layout.slots = kMaxTensors[layout.depth - 1];
    layout.step_addresses = (layout.depth + 1) * layout.slots * 8;
    layout.step_slots = kMaxTensorsScalarList[layout.depth - 1];
    end = layout.step_addresses + layout.step_slots * 8;
  } else if ((at = name.find("18TensorListMetadataI")) != std::string::npos) {
    layout.depth = depth_at(name, at + 21);
    if (!layout.depth) return std::nullopt;
    layout.slots = kMaxTensors[layout.depth - 1];
    end = (layout.depth + 1) * layout.slots * 8;
  } else if ((at = name.find("28TensorListScalarListMetadataI")) != std::string::npos) {
    at += 31;
    const auto [scalar_size, scalar_align] = scalar_type(name, at);
    if (!scalar_size) return std::nullopt;
    const size_t type_end = name.find("Li", at);
    if (type_end == std::string::npos) return std::nullopt;
    layout.depth = depth_at(name, type_end);
    if (!layout.depth) return std::nullopt;
    layout.slots = scalar_size == 16 && layout.depth <= 2 ? kMaxTensorsComplexDouble[layout.depth - 1]
                                                         : kMaxTensorsScalarList[layout.depth - 1];
    align = std::max(align, scalar_align);
    end = round_up((layout.depth + 1) * layout.slots * 8, scalar_align) + layout.slots * scalar_size;
    start_tensor_field = false;
  } else {
    return std::nullopt;
  }
  layout.block_to_tensor = end;
  layout.blocks = kMaxBlocks;
  size_t size = round_up(end + kMaxBlocks, 4) + kMaxBlocks * 4;  // block_to_chunk: int[blocks]
  if (start_tensor_field) size += 4;
  if (round_up(size, align) != param_size) return std::nullopt;
  return layout;
}

// The tensor addresses a launch of grid_x blocks passes in `bytes` (the struct): every operand's,
// and the step counters' of a fused optimizer, for each slot its blocks use. nullopt when the struct
// does not read as the layout says (more blocks than it holds, a block naming a slot past the table).
inline std::optional<std::vector<uint64_t>> tensor_list_addresses(const TensorListLayout& layout, const char* bytes,
                                                                  uint64_t grid_x) {
  if (grid_x == 0 || grid_x > layout.blocks) return std::nullopt;
  std::vector<bool> used(layout.slots, false);
  for (uint64_t b = 0; b < grid_x; ++b) {
    const uint8_t slot = uint8_t(bytes[layout.block_to_tensor + b]);
    if (slot >= layout.slots) return std::nullopt;
    used[slot] = true;
  }
  std::vector<uint64_t> addresses;
  auto read = [&](size_t offset) {
    uint64_t word;
    std::memcpy(&word, bytes + offset, 8);
    addresses.push_back(word);
  };
  for (size_t slot = 0; slot < layout.slots; ++slot) {
    if (!used[slot]) continue;
    for (int d = 0; d < layout.depth; ++d) read((d * layout.slots + slot) * 8);
    if (layout.step_addresses && slot < layout.step_slots) read(layout.step_addresses + slot * 8);
  }
  return addresses;
}

}  // namespace deepum
