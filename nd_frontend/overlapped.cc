#include "nd_frontend/overlapped.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>

namespace ndnic::nd {
namespace {

// The HRESULT lives in the low half of Internal (little-endian): a 32-bit futex word.
uint32_t* word(OVERLAPPED* ov) { return reinterpret_cast<uint32_t*>(const_cast<uint64_t*>(&ov->Internal)); }

}  // namespace

void overlapped_start(OVERLAPPED* ov) {
  ov->InternalHigh = 0;
  __atomic_store_n(&ov->Internal, uint64_t(uint32_t(ND_PENDING)), __ATOMIC_RELEASE);
}

void overlapped_complete(OVERLAPPED* ov, HRESULT hr, SIZE_T bytes) {
  ov->InternalHigh = bytes;
  __atomic_store_n(&ov->Internal, uint64_t(uint32_t(hr)), __ATOMIC_RELEASE);
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
    syscall(SYS_futex, word(ov), FUTEX_WAIT_PRIVATE, v, nullptr, nullptr, 0);
  }
}

}  // namespace ndnic::nd
