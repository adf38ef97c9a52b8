// OVERLAPPED completions: a request that finishes later stores its HRESULT in Internal (with
// ND_PENDING until then) and wakes whoever waits in GetOverlappedResult. Waiters sleep on a
// futex over Internal's low 32 bits (the HRESULT), never spin.
#pragma once

#include "nd_frontend/ndspi.h"

namespace ndnic::nd {

void overlapped_start(OVERLAPPED* ov);
/// Stores the result and wakes every waiter.
void overlapped_complete(OVERLAPPED* ov, HRESULT hr, SIZE_T bytes = 0);
/// INDOverlapped::GetOverlappedResult: ND_PENDING if not done and !wait, else the result.
HRESULT overlapped_result(OVERLAPPED* ov, SIZE_T* bytes, BOOL wait);

}  // namespace ndnic::nd
