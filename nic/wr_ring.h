// Work requests on their rings (app -> lcore, single producer and single consumer:
// nic/spsc_ring.h). A slot holds a whole SendWr or RecvWr, but only its used part is copied in
// and out, in place in the slot: the fields before the SGEs and the SGEs (or inline bytes) in
// use, and for a SendWr the fields after them only where the request reads them (atomics,
// binds, every send of a UD QP). A one-SGE SEND moves the 56 bytes of its slot's first line
// each way; copying every slot whole cost the posting thread and the requester a copy of the
// unused SGE array per request, and with the lcore on another core, a line moved per line
// copied.
#pragma once

#include <cstddef>
#include <cstring>

#include "ndnic/verbs.h"
#include "nic/spsc_ring.h"

namespace ndnic::nic {

/// Bytes from the start of the WR through its last SGE or inline byte in use.
inline size_t used_bytes(const SendWr& w) {
  return offsetof(SendWr, sge) + ((w.flags & kWrInline) ? w.inline_len : w.num_sge * sizeof(Sge));
}
inline size_t used_bytes(const RecvWr& w) { return offsetof(RecvWr, sge) + w.num_sge * sizeof(Sge); }

/// Whether a send reads the fields after the SGEs: an atomic's operands, a bind, the
/// destination of a UD send (`ud`: the QP is UD).
inline bool reads_tail(const SendWr& w, bool ud) {
  return ud || w.opcode == WrOpcode::kCompareSwap || w.opcode == WrOpcode::kFetchAdd ||
         w.opcode == WrOpcode::kBindMw;
}

/// Copies the used part of `from` into `to` (SGEs past num_sge are left as they were). A
/// request of at most one SGE, nearly every one, is copied as a constant size, in a few vector
/// moves instead of a call to libc's memmove, which `perf` put at 2-3% of each thread of
/// ndperf send_bw 64 B (BM_responder and BM_requester SEND 64 B: ~2% less time per packet).
template <class Wr>
void copy_used(Wr* to, const Wr& from) {
  constexpr size_t kOneSge = offsetof(Wr, sge) + sizeof(Sge);
  const size_t n = used_bytes(from);
  if (n <= kOneSge)
    std::memcpy(static_cast<void*>(to), &from, kOneSge);
  else
    std::memcpy(static_cast<void*>(to), &from, n);
}

inline void wr_copy(RecvWr* to, const RecvWr& from) { copy_used(to, from); }

/// A send's used part, and the fields after the SGEs where it reads them (`ud`: the QP is UD).
inline void wr_copy(SendWr* to, const SendWr& from, bool ud) {
  constexpr size_t kTailAt = offsetof(SendWr, compare_add);
  constexpr size_t kTailEnd = offsetof(SendWr, bind) + sizeof(SendWr::bind);
  static_assert(sizeof(SendWr::bind) >= sizeof(SendWr::ud) && offsetof(SendWr, ud) == offsetof(SendWr, bind));
  copy_used(to, from);
  if (reads_tail(from, ud))
    std::memcpy(reinterpret_cast<char*>(to) + kTailAt, reinterpret_cast<const char*>(&from) + kTailAt,
                kTailEnd - kTailAt);
}

/// Posts all n or none (false: no room). `how` is what wr_copy takes beside the WRs.
template <class Wr, class... How>
bool wr_enqueue(SpscRing<Wr>& r, const Wr* wrs, unsigned n, How... how) {
  if (r.free_slots(n) < n) return false;
  for (unsigned i = 0; i < n; i++) wr_copy(r.slot(i), wrs[i], how...);
  r.publish(n);
  return true;
}

/// Takes the oldest into `out` (false: none waits).
template <class Wr, class... How>
bool wr_dequeue(SpscRing<Wr>& r, Wr* out, How... how) {
  return r.take_burst(1, [&](const Wr& w) { wr_copy(out, w, how...); }) == 1;
}

}  // namespace ndnic::nic
