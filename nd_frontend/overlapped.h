// OVERLAPPED completions: a request that finishes later stores its HRESULT in Internal (with
// ND_PENDING until then) and wakes whoever waits in GetOverlappedResult. Waiters sleep on a
// futex over Internal's low 32 bits (the HRESULT); a CQ's Notify wait watches the CQ itself
// instead, and sleeps on the CQ's own word (NdCq::wait_watching, wait_driving).
#pragma once

#include "ndnic/ndspi.h"
#include "ndnic/backoff.h"

namespace ndnic::nd {

void overlapped_start(OVERLAPPED* ov);
/// Stores the result and wakes every waiter.
void overlapped_complete(OVERLAPPED* ov, HRESULT hr, SIZE_T bytes = 0);
/// INDOverlapped::GetOverlappedResult: ND_PENDING if not done and !wait, else the result.
HRESULT overlapped_result(OVERLAPPED* ov, SIZE_T* bytes, BOOL wait);

/// The same wait for an app-driven adapter: nobody else may move the engine, so the waiter
/// drives it (`drive`, called between looks) instead of sleeping, and backs off as every
/// polling loop does.
template <typename Drive>
HRESULT overlapped_result_driving(OVERLAPPED* ov, SIZE_T* bytes, Drive&& drive) {
  nic::Backoff backoff;
  for (;;) {
    const HRESULT hr = overlapped_result(ov, bytes, FALSE);
    if (hr != ND_PENDING) return hr;
    if (drive())
      backoff.busy();
    else
      backoff.idle();
  }
}

}  // namespace ndnic::nd
