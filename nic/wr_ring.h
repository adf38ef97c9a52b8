// Work requests on their rings (app -> lcore, single producer and single consumer). A slot
// holds a whole SendWr or RecvWr, but only its used part is copied in and out, through
// rte_ring's zero-copy API: the fields before the SGEs and the SGEs (or inline bytes) in use.
// A one-SGE SEND moves 104 of its 216 bytes each way; copying every slot whole cost the
// posting thread and the requester a copy of the unused SGE array per request.
#pragma once

#include <cstddef>
#include <cstring>

#include <rte_ring.h>
#include <rte_ring_elem.h>
#include <rte_ring_peek_zc.h>

#include "ndnic/verbs.h"

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

/// Enqueues all n or none (false: no room).
template <class Wr>
bool wr_enqueue(rte_ring* r, const Wr* wrs, unsigned n) {
  rte_ring_zc_data zcd;
  if (rte_ring_enqueue_zc_bulk_elem_start(r, sizeof(Wr), n, &zcd, nullptr) != n) return false;
  for (unsigned i = 0; i < n; i++) {
    Wr* slot = i < zcd.n1 ? static_cast<Wr*>(zcd.ptr1) + i : static_cast<Wr*>(zcd.ptr2) + (i - zcd.n1);
    wr_copy(slot, wrs[i]);
  }
  rte_ring_enqueue_zc_elem_finish(r, n);
  return true;
}

/// Takes up to `max` of the oldest, in order, handing each to take(const Wr&), which copies
/// what it keeps (wr_copy): the slot is the producer's again once this returns. One ring
/// operation for the lot: the producer's index is read and ours written once per burst, not
/// once per request; each of those is a cache line the posting thread's core owns.
template <class Wr, class Take>
unsigned wr_dequeue_burst(rte_ring* r, unsigned max, Take&& take) {
  rte_ring_zc_data zcd;
  const unsigned n = rte_ring_dequeue_zc_burst_elem_start(r, sizeof(Wr), max, &zcd, nullptr);
  if (n == 0) return 0;
  const Wr* first = static_cast<const Wr*>(zcd.ptr1);
  const Wr* wrap = static_cast<const Wr*>(zcd.ptr2);
  for (unsigned i = 0; i < n; i++) take(i < zcd.n1 ? first[i] : wrap[i - zcd.n1]);
  rte_ring_dequeue_zc_elem_finish(r, n);
  return n;
}

}  // namespace ndnic::nic
