// The learned state's byte layout (a warm start: policy.hpp's save_state / load_state): a magic
// string, a version, then 64-bit little-endian words. docs/warm-start.md describes the layout;
// deepum/specs/warm_state.py is its readable specification. Reading is bounded: a count is checked
// against the words left before anything is allocated for it, so a corrupt or hostile file costs at
// most its own size in memory, and every problem is one std::invalid_argument line.
#pragma once
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace deepum {

constexpr char kStateMagic[8] = {'D', 'E', 'E', 'P', 'U', 'M', 'W', 'S'};
constexpr uint64_t kStateVersion = 5;
constexpr size_t kStateMaxBytes = size_t(1) << 30;  // a larger file is refused unread

class StateWriter {
 public:
  StateWriter() { bytes_.assign(kStateMagic, kStateMagic + sizeof(kStateMagic)); }
  void word(uint64_t w) {
    unsigned char b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>(w >> (8 * i));
    bytes_.insert(bytes_.end(), b, b + 8);
  }
  void signed_word(int64_t w) { word(static_cast<uint64_t>(w)); }
  std::vector<uint8_t> take() { return std::move(bytes_); }

 private:
  std::vector<uint8_t> bytes_;
};

class StateReader {
 public:
  StateReader(const uint8_t* data, size_t size) : data_(data), size_(size) {
    if (size > kStateMaxBytes)
      fail("it holds " + std::to_string(size) + " bytes, more than the " + std::to_string(kStateMaxBytes) + " allowed");
    if (size < sizeof(kStateMagic) || std::memcmp(data, kStateMagic, sizeof(kStateMagic)) != 0)
      fail("it is not a deepum learned state (no DEEPUMWS header)");
    at_ = sizeof(kStateMagic);
  }

  uint64_t word() {
    if (size_ - at_ < 8) fail("it ends early (truncated)");
    uint64_t w = 0;
    for (int i = 0; i < 8; ++i) w |= uint64_t(data_[at_ + i]) << (8 * i);
    at_ += 8;
    return w;
  }
  int64_t signed_word() { return static_cast<int64_t>(word()); }
  int64_t block() {  // a UM block number: non-negative
    const int64_t b = signed_word();
    if (b < 0) fail("a UM block number is negative");
    return b;
  }
  // A count of items of at least `words_each` words, at most `limit`, that the words left can hold.
  size_t count(uint64_t limit, size_t words_each, const char* what) {
    const uint64_t n = word();
    if (n > limit) fail(std::string("it holds more ") + what + " than its settings allow");
    if (words_each > 0 && n > (size_ - at_) / 8 / words_each) fail("it ends early (truncated)");
    return size_t(n);
  }
  void expect(uint64_t value, const char* what) {
    if (word() != value) fail(std::string("it was saved with another ") + what);
  }
  void finish() const {
    if (at_ != size_) fail("it has bytes past its end");
  }
  [[noreturn]] static void fail(const std::string& why) { throw std::invalid_argument("bad learned state: " + why); }

 private:
  const uint8_t* data_;
  size_t size_, at_ = 0;
};

}  // namespace deepum
