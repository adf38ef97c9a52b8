// The fuzzer's own model of what the peer may change in the arena: which regions and windows
// exist, which receives and READ/atomic sinks are outstanding, and which remote accesses the
// peer asked for. It is built from the API calls the fuzzer made and the completions it read,
// never from the engine's tables, so it can judge them.
//
// A byte of the arena may change during an engine iteration only if, before or after that
// iteration (a bind or invalidate may run inside it), it lies
//   - inside [va, va+len) of a WRITE (RETH) or atomic the peer sent to QP q, and that R_Key
//     grants the access to q over the whole range: a live region of q's PD with the right, or a
//     window of q's PD bound to q (this QP instance) with the right (or a bind q has posted and
//     that has not completed yet, which may already have run);
//   - inside an SGE of a receive posted on q and not yet completed, whose region is live, of
//     q's PD, locally writable and contains the SGE;
//   - inside an SGE of a READ or atomic posted on q and not yet completed (its sink), on the
//     same conditions.
// Anything else is a violation. Two kinds are told apart because they say what went wrong:
// "memory-revoked" (the range was granted when the peer named it, and the key has been
// invalidated or deregistered since: a multi-packet WRITE that kept writing) and
// "memory-sink-stale" (a READ/atomic sink whose region was deregistered before the response).
#pragma once

#include <algorithm>
#include <map>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "nic/memory.h"
#include "ndnic/verbs.h"

namespace ndnic::fuzz {

using nic::kAccessLocalWrite;
using nic::kAccessMwBind;
using nic::kAccessRemoteAtomic;
using nic::kAccessRemoteRead;
using nic::kAccessRemoteWrite;

constexpr uint32_t kRemoteRights = kAccessRemoteRead | kAccessRemoteWrite | kAccessRemoteAtomic;

inline bool range_inside(uint64_t base, uint64_t base_len, uint64_t va, uint64_t len) {
  return va >= base && len <= base_len && va - base <= base_len - len;
}

struct MrRec {
  uint32_t key = 0;
  uint64_t addr = 0, len = 0;
  uint32_t pd = 0, access = 0;
  bool live = false;
};

struct MwRec {
  enum State : uint8_t { kUnbound, kBound, kInvalidated };
  uint32_t handle = 0;         ///< the key alloc_mw returned
  uint32_t index = 0;          ///< key >> 8: the slot, the same for every key of this window
  uint32_t pd = 0;
  uint64_t context = 0;
  bool allocated = false;
  State state = kUnbound;
  uint32_t key = 0;            ///< current key
  std::vector<uint32_t> keys;  ///< every key it has had (handle, then one per bind)
  // The binding (state kBound, or the last one when kInvalidated):
  uint32_t mr_key = 0;
  uint64_t addr = 0, len = 0;
  uint32_t access = 0;
  int side = -1;               ///< the QP it is bound to: side and instance serial
  uint32_t serial = 0;
};

/// Everything the grant rules read, copied before each engine iteration.
struct Snapshot {
  struct Local {
    int side;
    uint32_t pd, lkey;
    uint64_t addr, len;
    bool sink;                 ///< READ/atomic result buffer (else a receive)
  };
  struct PendingBind {
    int side;
    uint32_t serial, key;
    uint64_t addr, len;
    uint32_t access;
  };
  struct QpInfo {
    bool exists = false;
    uint32_t serial = 0, pd = 0;
    uint32_t qpn = 0;
  };
  std::vector<MrRec> mrs;
  std::vector<MwRec> mws;
  std::vector<Local> locals;
  std::vector<PendingBind> binds;
  QpInfo qps[2];

  const MrRec* live_mr(uint32_t key) const {
    for (const MrRec& m : mrs)
      if (m.live && m.key == key) return &m;
    return nullptr;
  }

  /// Whether `key` lets the peer of QP `side` do `need` on every byte of [va, va+len).
  bool grants(int side, uint32_t key, uint64_t va, uint64_t len, uint32_t need) const {
    const QpInfo& q = qps[side];
    if (!q.exists) return false;
    if (!nic::is_mw_key(key)) {
      const MrRec* m = live_mr(key);
      return m && m->pd == q.pd && (m->access & need) == need && range_inside(m->addr, m->len, va, len);
    }
    for (const MwRec& w : mws)
      if (w.allocated && w.state == MwRec::kBound && w.key == key && w.pd == q.pd && w.side == side &&
          w.serial == q.serial && (w.access & need) == need && range_inside(w.addr, w.len, va, len))
        return true;
    for (const PendingBind& b : binds)
      if (b.key == key && b.side == side && b.serial == q.serial && (b.access & need) == need &&
          range_inside(b.addr, b.len, va, len))
        return true;
    return false;
  }

  /// The part of a local SGE the engine may write: the SGE's bytes inside its region, when the
  /// region is live, of the QP's PD and locally writable (the engine checks each piece it
  /// places, so an SGE running past its region still takes what lies inside). Empty: none.
  std::pair<uint64_t, uint64_t> local_writable(const Local& l) const {
    const MrRec* m = live_mr(l.lkey);
    if (!m || m->pd != l.pd || !(m->access & kAccessLocalWrite) || l.addr + l.len < l.addr) return {0, 0};
    const uint64_t a = std::max(l.addr, m->addr), b = std::min(l.addr + l.len, m->addr + m->len);
    return a < b ? std::make_pair(a, b - a) : std::make_pair(uint64_t(0), uint64_t(0));
  }
};

/// A remote access the peer asked for through QP `side` (RETH of a WRITE, AtomicETH).
struct RemoteRec {
  uint32_t key;
  uint64_t va, len;
  uint32_t need;
  bool granted_when_sent;
  bool operator<(const RemoteRec& o) const {
    if (key != o.key) return key < o.key;
    if (va != o.va) return va < o.va;
    if (len != o.len) return len < o.len;
    if (need != o.need) return need < o.need;
    return granted_when_sent < o.granted_when_sent;
  }
};

/// Per byte of [lo, hi): what allowed a change there.
struct AllowedMask {
  enum : uint8_t { kAllowed = 1, kRevoked = 2, kStaleSink = 4 };
  uint64_t lo = 0, hi = 0;     ///< arena offsets
  std::vector<uint8_t> bits;

  void reset(uint64_t l, uint64_t h) {
    lo = l;
    hi = h;
    bits.assign(h - l, 0);
  }
  /// Marks [va, va+len) (host addresses) of an arena at `base`.
  void mark(uint64_t base, uint64_t va, uint64_t len, uint8_t bit) {
    if (len == 0 || va + len < va) return;
    const uint64_t a = std::max(va, base + lo), b = std::min(va + len, base + hi);
    for (uint64_t x = a; x < b; x++) bits[x - base - lo] |= bit;
  }
  uint8_t at(uint64_t off) const { return off >= lo && off < hi ? bits[off - lo] : 0; }
};

/// `records`: what the peer asked for, by the QP number its frames were addressed to.
inline void mark_allowed(const Snapshot& s, const std::map<uint32_t, std::set<RemoteRec>>& records, uint64_t base,
                         AllowedMask* m) {
  for (int side = 0; side < 2; side++) {
    if (!s.qps[side].exists) continue;
    const auto it = records.find(s.qps[side].qpn);
    if (it == records.end()) continue;
    for (const RemoteRec& r : it->second) {
      if (s.grants(side, r.key, r.va, r.len, r.need))
        m->mark(base, r.va, r.len, AllowedMask::kAllowed);
      else if (r.granted_when_sent)
        m->mark(base, r.va, r.len, AllowedMask::kRevoked);
    }
  }
  for (const Snapshot::Local& l : s.locals) {
    const auto [at, n] = s.local_writable(l);
    m->mark(base, at, n, AllowedMask::kAllowed);
    if (l.sink) m->mark(base, l.addr, l.len, AllowedMask::kStaleSink);  // what is not allowed above
  }
}

}  // namespace ndnic::fuzz
