#include "nd_frontend/overlapped.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>

namespace ndnic::nd {
namespace {

// The HRESULT lives in the low half of Internal (little-endian): a 32-bit futex word.
uint32_t* word(OVERLAPPED* ov) { return reinterpret_cast<uint32_t*>(const_cast<uint64_t*>(&ov->Internal)); }

// Threads asleep in FUTEX_WAIT on some OVERLAPPED, process-wide: a completion wakes only when
// one may be (a FUTEX_WAKE per result was most of a polled wait's syscalls). A sleeper counts
// itself before it sleeps and the completer stores the result before it looks (both with a
// full fence), so either the completer sees the sleeper or the kernel sees the result.
std::atomic<uint32_t> g_sleepers{0};

}  // namespace

void overlapped_start(OVERLAPPED* ov) {
  ov->InternalHigh = 0;
  __atomic_store_n(&ov->Internal, uint64_t(uint32_t(ND_PENDING)), __ATOMIC_RELEASE);
}

void overlapped_complete(OVERLAPPED* ov, HRESULT hr, SIZE_T bytes) {
  ov->InternalHigh = bytes;
  __atomic_store_n(&ov->Internal, uint64_t(uint32_t(hr)), __ATOMIC_RELEASE);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (g_sleepers.load(std::memory_order_relaxed) != 0)
    syscall(SYS_futex, word(ov), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

HRESULT overlapped_result(OVERLAPPED* ov, SIZE_T* bytes, BOOL wait) {
  for (;;) {
    const uint32_t v = __atomic_load_n(word(ov), __ATOMIC_ACQUIRE);
    if (v != uint32_t(ND_PENDING)) {
      if (bytes) *bytes = ov->InternalHigh;
      return HRESULT(v);
    }
    if (!wait) return ND_PENDING;
    g_sleepers.fetch_add(1, std::memory_order_seq_cst);
    syscall(SYS_futex, word(ov), FUTEX_WAIT_PRIVATE, v, nullptr, nullptr, 0);
    g_sleepers.fetch_sub(1, std::memory_order_relaxed);
  }
}

}  // namespace ndnic::nd
