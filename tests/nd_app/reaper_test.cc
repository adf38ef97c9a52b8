// The Reaper's blocking wait over a scripted completion queue (one component alone): what it
// asks of the CQ, in order, for each way a result can come.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tools/nd_app/reaper.h"

namespace ndnic::nd_app {
namespace {

/// A CQ that logs each call and hands out `ready` results: `on_notify` ones arrive just before
/// a Notify arms it (after the look that found nothing), `on_wait` ones while a wait on the
/// Notify goes on (completing it).
class ScriptedCq : public INDCompletionQueue {
 public:
  std::vector<std::string> calls;
  std::vector<ND_RESULT*> ready, on_notify, on_wait;

  HRESULT QueryInterface(REFIID, void**) override { return ND_NOT_SUPPORTED; }
  ULONG AddRef() override { return 1; }
  ULONG Release() override { return 1; }
  HRESULT CancelOverlappedRequests() override { return ND_SUCCESS; }
  HRESULT Resize(SIZE_T) override { return ND_SUCCESS; }

  HRESULT Notify(DWORD, OVERLAPPED* ov) override {
    calls.push_back("Notify");
    ready.insert(ready.end(), on_notify.begin(), on_notify.end());
    on_notify.clear();
    // As ndnic's: results already queued satisfy a Notify for any result at once.
    ov->Internal = uint64_t(uint32_t(ready.empty() ? ND_PENDING : ND_SUCCESS));
    return ND_PENDING;
  }
  HRESULT GetOverlappedResult(OVERLAPPED* ov, SIZE_T*, BOOL wait) override {
    calls.push_back(wait ? "wait" : "look");
    if (HRESULT(uint32_t(ov->Internal)) == ND_PENDING && wait) {
      ready.insert(ready.end(), on_wait.begin(), on_wait.end());
      on_wait.clear();
      ov->Internal = uint64_t(uint32_t(ND_SUCCESS));
    }
    return HRESULT(uint32_t(ov->Internal));
  }
  SIZE_T GetResults(ND_RESULT* out[], SIZE_T n) override {
    calls.push_back("GetResults");
    SIZE_T k = 0;
    for (; k < n && k < ready.size(); k++) out[k] = ready[k];
    ready.erase(ready.begin(), ready.begin() + long(k));
    return k;
  }
};

class ReaperWait : public ::testing::Test {
 protected:
  Halt halt{false};
  Actor actor{"test", "", 10, halt, false};
  Reaper reaper{actor, /*blocking=*/true, /*backoff=*/false};
  ScriptedCq cq;
  ND_RESULT r{};
  ND_RESULT* out[4] = {};

  void SetUp() override { reaper.attach(&cq); }
};

// Arm, then wait: no look at the CQ between the Notify and the wait. Run to completion, every
// look moves the engine once more, and a ping-pong's Notify wait paid for that one each turn.
TEST_F(ReaperWait, ArmsThenWaitsWithoutASecondLook) {
  cq.on_wait = {&r};
  ASSERT_EQ(reaper.reap(out, 4), 1u);
  EXPECT_EQ(out[0], &r);
  EXPECT_EQ(cq.calls, (std::vector<std::string>{"GetResults", "Notify", "wait", "GetResults"}));
  EXPECT_EQ(reaper.looks(), 2u);
  EXPECT_EQ(reaper.hit_looks(), 1u);
}

// A result that came between the empty look and the arming completes the Notify at once (as
// ndnic's Notify does): the wait returns at once and the next look takes it. Nothing is lost
// for want of a look between the Notify and the wait.
TEST_F(ReaperWait, AResultBeforeTheArmingEndsTheWaitAtOnce) {
  cq.on_notify = {&r};
  ASSERT_EQ(reaper.reap(out, 4), 1u);
  EXPECT_EQ(out[0], &r);
  EXPECT_EQ(cq.calls, (std::vector<std::string>{"GetResults", "Notify", "wait", "GetResults"}));
}

}  // namespace
}  // namespace ndnic::nd_app
