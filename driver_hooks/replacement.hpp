// Replacement: the rule that picks a victim among the resident blocks the policy lets go. The policy
// core (policy.hpp) tells each rule of arrivals, uses and iteration starts and asks it for victims; the
// rules know nothing of prefetching. Least recently migrated is here; foreseen next use is in
// next_use.hpp; the oracle's exact next use in oracle.hpp.
#pragma once
#include <cstdint>

#include "block_list.hpp"

namespace deepum {

// The policy's view of the resident blocks while it asks for a victim.
class Candidates {
 public:
  virtual ~Candidates() = default;
  virtual bool resident(Block b) const = 0;
  virtual bool may_go(Block b) const = 0;  // the policy allows it to leave now
  virtual bool dead(Block b) const = 0;    // it would leave without a copy (no live data in it)
};

class Replacement {
 public:
  virtual ~Replacement() = default;
  virtual void start_iteration(uint64_t /*first_launch*/) {}
  virtual void launch(uint64_t /*launch*/, uint64_t /*exec_id*/, bool /*indexed*/) {}  // a kernel launches, before its uses
  virtual void use(Block, uint64_t /*launch*/, bool /*resident*/) {}  // before the launch's decisions
  virtual void arrive(Block, uint64_t /*launch*/) {}                   // it became resident
  // A block among those `c` allows, or kNone. need_at > 0: the victim makes room for a prefetch for
  // that launch, and a rule that foresees uses gives up no block it foresees at or before it.
  virtual Block victim(uint64_t launch, const Candidates& c, uint64_t need_at) = 0;
};

// DeepUM's rule, and the driver's: the least recently migrated candidate. A dead block among the first
// kLruDeadSearch candidates goes first, since it leaves without a copy.
constexpr int kLruDeadSearch = 64;

class LruEviction : public Replacement {
 public:
  explicit LruEviction(const BlockList& migrated) : migrated_(migrated) {}  // least recently migrated first

  Block victim(uint64_t, const Candidates& c, uint64_t) override {
    Block first = kNone;
    int searched = 0;
    for (Block b = migrated_.head(); b != kNone; b = migrated_.next(b)) {
      if (!c.may_go(b)) continue;
      if (first == kNone) first = b;
      if (c.dead(b)) return b;
      if (++searched == kLruDeadSearch) break;
    }
    return first;
  }

 private:
  const BlockList& migrated_;
};

}  // namespace deepum
