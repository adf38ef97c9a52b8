// Fixed-size elements on an rte_ring through its zero-copy API: the caller reads or writes
// each slot in place. rte_ring's own element copy moves sizes other than 8 and 16 bytes four
// bytes at a time (a 32-byte completion: eight loads and eight stores per entry, ~70
// instructions per result at each end of a CQ); a struct copy is two vector moves. The ring's
// side that uses these must be single-threaded or HTS (rte_ring_peek_zc.h).
#pragma once

#include <rte_ring.h>
#include <rte_ring_elem.h>
#include <rte_ring_peek_zc.h>

namespace ndnic::nic {

/// Whether a zero-copy enqueue takes all n or none (bulk), or as many as fit (burst).
enum class ZcFill : bool { kAllOrNone, kAsMany };

/// Reserves up to n slots at the producer's end, calls put(T* slot, i) for each in order and
/// publishes them; returns how many (0 or n for kAllOrNone).
template <class T, class Put>
unsigned zc_enqueue(rte_ring* r, unsigned n, ZcFill fill, Put&& put) {
  rte_ring_zc_data zcd;
  const unsigned k = fill == ZcFill::kAllOrNone
                         ? rte_ring_enqueue_zc_bulk_elem_start(r, sizeof(T), n, &zcd, nullptr)
                         : rte_ring_enqueue_zc_burst_elem_start(r, sizeof(T), n, &zcd, nullptr);
  if (k == 0) return 0;
  for (unsigned i = 0; i < k; i++)
    put(i < zcd.n1 ? static_cast<T*>(zcd.ptr1) + i : static_cast<T*>(zcd.ptr2) + (i - zcd.n1), i);
  rte_ring_enqueue_zc_elem_finish(r, k);
  return k;
}

/// Takes up to `max` of the oldest, in order, handing each to take(const T&), which copies
/// what it keeps: the slot is the producer's again once this returns. One ring operation for
/// the lot: the producer's index is read and ours written once per burst, not once per
/// element; each of those is a cache line the other side's core owns.
template <class T, class Take>
unsigned zc_dequeue_burst(rte_ring* r, unsigned max, Take&& take) {
  rte_ring_zc_data zcd;
  const unsigned n = rte_ring_dequeue_zc_burst_elem_start(r, sizeof(T), max, &zcd, nullptr);
  if (n == 0) return 0;
  const T* first = static_cast<const T*>(zcd.ptr1);
  const T* wrap = static_cast<const T*>(zcd.ptr2);
  for (unsigned i = 0; i < n; i++) take(i < zcd.n1 ? first[i] : wrap[i - zcd.n1]);
  rte_ring_dequeue_zc_elem_finish(r, n);
  return n;
}

}  // namespace ndnic::nic
