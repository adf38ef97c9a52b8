#include "tools/nd_app/waits.h"

#include <thread>

namespace ndnic::nd_app {
namespace {

// A waiter that sleeps this long between empty polls leaves the CPU to the worker lcore when
// both share one core, and still answers within a few microseconds.
constexpr auto kIdleSleep = std::chrono::microseconds(20);
// Connection steps are rare enough for a millisecond's sleep between looks.
constexpr auto kStepPoll = std::chrono::milliseconds(1);
constexpr auto kCancelGrace = std::chrono::milliseconds(100);

}  // namespace

bool wait_result(INDCompletionQueue* cq, const ND_RESULT* r, std::vector<ND_RESULT*>* reaped,
                 Clock::duration timeout) {
  const auto end = Clock::now() + timeout;
  for (;;) {
    for (auto it = reaped->begin(); it != reaped->end(); ++it)
      if (*it == r) {
        reaped->erase(it);
        return true;
      }
    if (Clock::now() >= end) return false;
    ND_RESULT* got[4];
    const SIZE_T n = cq->GetResults(got, 4);
    reaped->insert(reaped->end(), got, got + n);
    if (n == 0) std::this_thread::sleep_for(kIdleSleep);
  }
}

HRESULT wait_overlapped(INDOverlapped* o, OVERLAPPED* ov, Clock::time_point deadline) {
  SIZE_T bytes;
  for (;;) {
    const HRESULT hr = o->GetOverlappedResult(ov, &bytes, FALSE);
    if (hr != ND_PENDING) return hr;
    if (Clock::now() > deadline) return ND_TIMEOUT;
    std::this_thread::sleep_for(kStepPoll);
  }
}

HRESULT await(INDOverlapped* obj, HRESULT hr, std::unique_ptr<OVERLAPPED> ov, Clock::duration limit,
              const std::function<bool()>& halting) {
  // Polled, not GetOverlappedResult(bWait): a wait must end on a halt and on its limit.
  const auto end = limit == Clock::duration::max() ? Clock::time_point::max() : Clock::now() + limit;
  while (hr == ND_PENDING && !halting() && Clock::now() < end) {
    hr = obj->GetOverlappedResult(ov.get(), nullptr, FALSE);
    if (hr == ND_PENDING) std::this_thread::sleep_for(kStepPoll);
  }
  if (hr != ND_PENDING) return hr;
  // Given up: cancel, and give the object a moment to complete the request as canceled (a
  // provider may not cancel a connection step).
  obj->CancelOverlappedRequests();
  const auto grace = Clock::now() + kCancelGrace;
  while (obj->GetOverlappedResult(ov.get(), nullptr, FALSE) == ND_PENDING && Clock::now() < grace)
    std::this_thread::sleep_for(kStepPoll);
  if (obj->GetOverlappedResult(ov.get(), nullptr, FALSE) == ND_PENDING) ov.release();
  return halting() ? ND_CANCELED : ND_IO_TIMEOUT;
}

}  // namespace ndnic::nd_app
