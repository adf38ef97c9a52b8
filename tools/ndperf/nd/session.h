// One end's Network Direct v1 objects for one test, as an ND application holds them: the
// adapter (opened by address), one completion queue for every QP and both directions
// (nd_app::Reaper: polled or waited for with Notify), the end's buffer registered once, an
// nd_app::Connection per QP, the memory windows. Every request's ND_RESULT is an Op that says
// what the request was. Only ndspi.h, ndnic_ext.h and NdOpenV1Adapter here.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ndnic/ndnic_ext.h"
#include "ndnic/ndspi.h"
#include "tools/nd_app/actor.h"
#include "tools/nd_app/connection.h"
#include "tools/nd_app/halt.h"
#include "tools/nd_app/reaper.h"
#include "tools/ndperf/node.h"
#include "tools/ndperf/plan.h"

namespace ndnic::ndperf {

enum class OpKind : uint8_t {
  kData,        ///< a signaled data request (Send, Write, Read, FetchAndAdd)
  kDataSilent,  ///< the shared result of a QP's unsignaled data requests (seen only on error)
  kDataRecv,    ///< a receive for data messages (and zero-byte SYNCs)
  kCtrlRecv,    ///< a receive for control messages (setup, credits, SYNC and their answers)
  kCtrlSend,    ///< a control message we sent
  kBind,        ///< a window bind
  kInvalidate,  ///< a window's invalidation result (CreateMemoryWindow's)
  kCheck,       ///< a verifying request after a run (atomic_bw's final FetchAndAdd)
};

/// An ND_RESULT with what it was for. GetResults hands back the caller's ND_RESULT*, so the
/// request's context rides along with it, as in the SDK examples. It is an NDNIC_RESULT, so a
/// receive may also go through the extension's ReceiveExt (when `extended`).
struct Op : NDNIC_RESULT {
  OpKind kind = OpKind::kData;
  bool extended = false;    ///< receives: posted with ReceiveExt (Flags and ImmediateData valid)
  uint16_t qp = 0;
  uint32_t slot = 0;
  uint64_t seq = 0;         ///< kData: the request's number on its QP
  uint8_t* addr = nullptr;  ///< receives: where the message lands
};

inline Op* op_of(ND_RESULT* r) { return static_cast<Op*>(static_cast<NDNIC_RESULT*>(r)); }

struct Depths {
  SIZE_T inbound = 0;   ///< receives outstanding at most, per QP
  SIZE_T outbound = 0;  ///< send-side requests outstanding at most, per QP
};

class Session {
  using Clock = std::chrono::steady_clock;

 public:
  static constexpr size_t kMaxReap = 64;  ///< reap_ops(): results per call at most

  /// `who` ("server", "client") prefixes messages. A patient session (the server's) waits for
  /// results as long as it takes: in a Write or Read test its peer may be busy for minutes
  /// without a result arriving here.
  Session(const Options& o, Node& node, const char* who, nd_app::Halt& halt, bool patient);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// The adapter that owns the node's address, and the node's buffer registered.
  bool open();
  /// The CQ every QP of the test completes into (before the first connect or accept).
  bool create_cq(size_t entries);
  /// A group of a split test (Plan::groups): its CQ, and with it its endpoints, on worker
  /// `group` (INDAdapterExt); its QPs' control slots after those of the groups before, and
  /// its data in a slice of the recv and send areas of its own. Before create_cq. False (and
  /// said why) when the buffer has no room for the slice.
  bool set_group(const Plan& p);

  // ---- server ----
  bool listen(uint16_t port);
  /// Waits for the next connection request and returns its plan (false: failed or halted;
  /// a request that is not ndperf's is rejected and counts as a failure).
  bool get_request(Plan* plan);
  /// Creates the request's endpoint, lets `post` post its receives, accepts, and waits until
  /// the connection is established.
  bool accept(const Depths& d, const std::function<bool(uint32_t qp)>& post);
  void reject();
  /// Waits until the client has disconnected every QP.
  bool wait_disconnect();

  // ---- client ----
  /// One more QP: an endpoint, Connect with the plan (retried while the server is not
  /// listening yet, up to `retry`), `post` for its receives, CompleteConnect.
  bool connect(uint32_t ip, uint16_t port, const Plan& plan, const Depths& d,
               const std::function<bool(uint32_t qp)>& post, Clock::duration retry);
  bool disconnect();

  // ---- objects ----
  uint32_t qps() const { return uint32_t(qps_.size()); }
  INDEndpoint* ep(uint32_t qp) const { return qps_[qp]->endpoint(); }
  INDEndpointExt* ext(uint32_t qp) { return qps_[qp]->ext(); }
  INDAdapter* adapter() const { return adapter_; }
  /// A window whose invalidations complete into `invalidated`; released with the session.
  INDMemoryWindow* create_window(Op* invalidated);
  uint8_t* buf() const { return node_.buffer(); }
  const Layout& layout() const { return node_.layout(); }
  /// Where this session's data goes and comes from: the layout's recv and send areas, or the
  /// group's slice of them.
  size_t recv_area() const { return layout().recv() + data_off_; }
  size_t send_area() const { return layout().send() + data_off_; }
  /// QP `qp`'s (of this session) control slots in the layout.
  size_t control_in(uint32_t qp, uint32_t slot) const { return layout().control_in(first_qp_ + qp, slot); }
  size_t control_out(uint32_t qp, uint32_t slot) const { return layout().control_out(first_qp_ + qp, slot); }
  ND_SGE sge(size_t offset, size_t len) const { return ND_SGE{buf() + offset, len, mr_}; }
  ND_MR_HANDLE mr() const { return mr_; }

  // ---- results ----
  /// Waits for results and returns 1..n of them; 0 on failure, timeout (the client's:
  /// --timeout without any) or halt, with the reason printed (halted() tells which).
  size_t reap(ND_RESULT** out, size_t n) { return reaper_.reap(out, n); }
  /// reap() into `room` (kMaxReap at most), each result as the Op it is; empty on failure,
  /// timeout or halt, as reap().
  std::span<Op*> reap_ops(std::span<Op*> room);
  /// Whatever results are there now.
  size_t poll(ND_RESULT** out, size_t n) { return reaper_.poll(out, n); }
  bool halted() const { return actor_.halted(); }
  /// For loops that do not wait in reap(): whether to give up now (marks the session halted).
  bool stop_requested() {
    if (halt_.now()) actor_.set_halted();
    return actor_.halted();
  }
  const Options& options() const { return o_; }
  const char* who() const { return who_; }

  /// "ndperf <who>: <what>[: STATUS (0x...)]" on stderr; returns false.
  bool fail(const std::string& what, HRESULT hr = ND_SUCCESS) const { return actor_.fail(what, hr); }
  /// A post's HRESULT: true when it was accepted, otherwise says what failed.
  bool posted(HRESULT hr, const char* what) const { return SUCCEEDED(hr) || fail(what, hr); }
  /// A completed request's status: true for ND_SUCCESS, otherwise says what failed. A view, so
  /// that the loops calling it for every result build no string for the usual success.
  bool succeeded(const ND_RESULT* r, std::string_view what) const {
    return r->Status == ND_SUCCESS || failed(r, what);
  }
  /// A result nothing waits for: says what failed if it did (succeeded()), else "an unexpected
  /// result"; false.
  bool unexpected(const ND_RESULT* r, std::string_view what) const {
    return succeeded(r, what) && fail("an unexpected result");
  }

 private:
  /// succeeded()'s failure: says what failed; false.
  bool failed(const ND_RESULT* r, std::string_view what) const;
  nd_app::EndpointShape shape(const Depths& d) const;

  const Options& o_;
  Node& node_;
  const char* who_;
  nd_app::Halt& halt_;
  nd_app::Actor actor_;
  INDAdapter* adapter_ = nullptr;
  nd_app::Reaper reaper_;
  INDListen* listen_ = nullptr;
  ND_MR_HANDLE mr_ = nullptr;
  std::vector<std::unique_ptr<nd_app::Connection>> qps_;
  std::unique_ptr<nd_app::Connection> pending_;  ///< server: the request not accepted yet
  std::vector<INDMemoryWindow*> windows_;
  int worker_ = -1;         ///< set_group: the worker of this group's CQ; -1: any
  uint32_t first_qp_ = 0;   ///< set_group: the group's first QP in the layout
  size_t data_off_ = 0;     ///< set_group: the group's slice of the recv and send areas
};

}  // namespace ndnic::ndperf
