// Work requests on their rings (app -> lcore, single producer and single consumer:
// nic/spsc_ring.h). A slot holds a whole SendWr or RecvWr, but only its used part is copied in
// and out, in place in the slot: the fields before the SGEs and the SGEs (or inline bytes) in
// use.
// A one-SGE SEND moves 104 of its 216 bytes each way; copying every slot whole cost the
// posting thread and the requester a copy of the unused SGE array per request.
#pragma once

#include <cstddef>
#include <cstring>

#include "ndnic/verbs.h"
#include "nic/spsc_ring.h"

namespace ndnic::nic {

inline size_t used_bytes(const SendWr& w) {
  return offsetof(SendWr, sge) + ((w.flags & kWrInline) ? w.inline_len : w.num_sge * sizeof(Sge));
}
inline size_t used_bytes(const RecvWr& w) { return offsetof(RecvWr, sge) + w.num_sge * sizeof(Sge); }

/// Copies the used part of `from` into `to` (SGEs past num_sge are left as they were). A
/// request of at most one SGE, nearly every one, is copied as a constant size, in a few vector
/// moves instead of a call to libc's memmove, which `perf` put at 2-3% of each thread of
/// ndperf send_bw 64 B (BM_responder and BM_requester SEND 64 B: ~2% less time per packet).
template <class Wr>
void wr_copy(Wr* to, const Wr& from) {
  constexpr size_t kOneSge = offsetof(Wr, sge) + sizeof(Sge);
  const size_t n = used_bytes(from);
  if (n <= kOneSge)
    std::memcpy(static_cast<void*>(to), &from, kOneSge);
  else
    std::memcpy(static_cast<void*>(to), &from, n);
}

/// Posts all n or none (false: no room).
template <class Wr>
bool wr_enqueue(SpscRing<Wr>& r, const Wr* wrs, unsigned n) {
  if (r.free_slots(n) < n) return false;
  for (unsigned i = 0; i < n; i++) wr_copy(r.slot(i), wrs[i]);
  r.publish(n);
  return true;
}

/// Takes the oldest into `out` (false: none waits).
template <class Wr>
bool wr_dequeue(SpscRing<Wr>& r, Wr* out) {
  return r.take_burst(1, [out](const Wr& w) { wr_copy(out, w); }) == 1;
}

}  // namespace ndnic::nic
