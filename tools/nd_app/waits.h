// Waiting for ND requests without blocking in the provider: a result on a CQ, an overlapped
// call (connection steps, registration), each up to a deadline, and, for the connection steps
// of tools that can be stopped, up to a limit or a halt with the request canceled after it.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "ndnic/ndspi.h"

namespace ndnic::nd_app {

using Clock = std::chrono::steady_clock;

/// Reaps `cq` until `r` is among its results, or `timeout` passes (false). The results reaped
/// on the way stay in `reaped` in the CQ's order, where the next wait looks first: a check of
/// the order results arrive in starts with them.
bool wait_result(INDCompletionQueue* cq, const ND_RESULT* r, std::vector<ND_RESULT*>* reaped,
                 Clock::duration timeout);

/// Waits for an overlapped call to finish, up to `deadline`; ND_TIMEOUT when it did not.
HRESULT wait_overlapped(INDOverlapped* o, OVERLAPPED* ov, Clock::time_point deadline);

/// Finishes an overlapped request that returned `hr`: waits at most `limit` (forever when it
/// is max()), less when `halting` says so. Its HRESULT; ND_IO_TIMEOUT after the limit,
/// ND_CANCELED after a halt. A request given up is canceled; if the object does not complete
/// it as canceled soon, `ov` is left allocated, since the request may still complete into it.
HRESULT await(INDOverlapped* obj, HRESULT hr, std::unique_ptr<OVERLAPPED> ov, Clock::duration limit,
              const std::function<bool()>& halting);

}  // namespace ndnic::nd_app
