// sendinv: the remote-invalidation cycle of a storage protocol (SMB Direct's or NFS/RDMA's
// read path), counted in cycles per second:
//
//   client                                      server
//   Bind a window over a 4 KiB block,
//   Send its descriptor                   --->  RDMA Write 4 KiB into the window,
//                                               SendAndInvalidate the answer (the window's token)
//   the window's invalidation result and  <---
//   the answer arrive; check the block,
//   Bind the window again (a new token)
//
// Each QP keeps sendinv_windows() cycles in flight, one per window; Binds, requests, Writes and
// answers go unsignaled (their failures still complete), so the results that come back are
// the invalidations and the receives. Data check, every cycle: the block is cleared before
// each Bind and must hold the server's 4 KiB when the answer is in, and the invalidation must
// have come with it.
#include <arpa/inet.h>

#include <cstring>

#include "tools/ndperf/nd/halves.h"
#include "tools/ndperf/pattern.h"
#include "tools/ndperf/progress.h"
#include "tools/ndperf/report/report.h"
#include "tools/ndperf/stats.h"

namespace ndnic::ndperf {
namespace {

constexpr uint32_t kMsgSlot = 8;  ///< control slots from here on carry requests and answers
constexpr uint32_t kSetupSlot = 0;
constexpr size_t kRequestLen = sizeof(ND_MW_DESCRIPTOR) + sizeof(uint32_t);
constexpr size_t kAnswerLen = sizeof(uint32_t);
constexpr size_t kBurst = 64;

uint32_t recvs_per_qp(uint32_t windows) { return windows + kCtrlRecvs / 2; }
uint32_t sends_per_qp(uint32_t windows) { return 2 * windows + kCtrlSends; }

// ---- client -----------------------------------------------------------------------------

class InvClient {
 public:
  InvClient(Session& s, const Plan& p, ClientEnv& env)
      : s_(s), p_(p), env_(env), o_(s.options()), nqp_(test_qps(p)), nwin_(sendinv_windows(p)), qps_(nqp_) {}

  bool run() {
    if (!s_.create_cq(nqp_ * (recvs_per_qp(nwin_) + nwin_ + sends_per_qp(nwin_)))) return false;
    for (uint32_t i = 0; i < nqp_; i++) {
      Qp& q = qps_[i];
      q.ctrl.init(i, recvs_per_qp(nwin_));
      q.silent.kind = OpKind::kDataSilent;
      q.silent.qp = uint16_t(i);
      q.windows.resize(nwin_);
      for (uint32_t w = 0; w < nwin_; w++) {
        q.windows[w].invalidated.kind = OpKind::kInvalidate;
        q.windows[w].invalidated.qp = uint16_t(i);
        q.windows[w].invalidated.slot = w;
      }
    }
    const Depths d{recvs_per_qp(nwin_), sends_per_qp(nwin_)};
    if (!connect_all(s_, env_, p_, d, [&](uint32_t qp) { return post_ctrl_recvs(s_, qps_[qp].ctrl); })) return false;
    std::vector<Setup> setups;
    if (!wait_setups(s_, nqp_, &setups, [&](Op* op) { return post_ctrl_recv(s_, op); })) return false;
    for (Qp& q : qps_)
      for (Window& w : q.windows)
        if (!(w.mw = s_.create_window(&w.invalidated))) return false;
    print_test_banner(s_, p_, env_, 0);
    for (uint32_t size : sizes(p_)) {
      Row row;
      if (!measure(size, &row) || !sync()) return false;
      keep_row(p_, env_, row);
      if (nd_app::sigint_requested()) break;
    }
    print_end();
    return s_.disconnect();
  }

 private:
  struct Window {
    INDMemoryWindow* mw = nullptr;
    Op invalidated;
    ND_MW_DESCRIPTOR desc{};
    bool busy = false, answered = false, invalidated_seen = false;
  };
  struct Qp {
    Control ctrl;
    Op silent;
    std::vector<Window> windows;
    uint64_t started = 0, done = 0;
    std::vector<uint32_t> restart;  ///< windows to start a cycle on, batched (counted in started)
    bool answered = false;
  };

  size_t block(uint32_t qp, uint32_t w, uint32_t size) const {
    return s_.layout().recv() + (size_t(qp) * nwin_ + w) * size;
  }

  /// Starts a cycle on each window in q.restart: clear the block, Bind, send the descriptor.
  bool start_cycles(uint32_t i, uint32_t size) {
    Qp& q = qps_[i];
    if (q.restart.empty()) return true;
    INDEndpoint* ep = s_.ep(i);
    ep->StartRequestBatch();
    bool ok = true;
    for (uint32_t w : q.restart) {
      Window& win = q.windows[w];
      const size_t off = block(i, w, size);
      std::memset(s_.buf() + off, 0, size);
      ok = ok && s_.posted(ep->Bind(&q.silent, s_.mr(), win.mw, s_.buf() + off, size,
                                    ND_OP_FLAG_ALLOW_WRITE | ND_OP_FLAG_SILENT_SUCCESS, &win.desc),
                           "Bind");
      uint8_t msg[kRequestLen];
      std::memcpy(msg, &win.desc, sizeof win.desc);
      const uint32_t be = htonl(w);
      std::memcpy(msg + sizeof win.desc, &be, sizeof be);
      const size_t out = s_.control_out(i, kMsgSlot + w);
      std::memcpy(s_.buf() + out, msg, sizeof msg);
      const ND_SGE sge = s_.sge(out, sizeof msg);
      ok = ok && s_.posted(ep->Send(&q.silent, &sge, 1, ND_OP_FLAG_SILENT_SUCCESS), "Send (request)");
      win.busy = true;
      win.answered = win.invalidated_seen = false;
      if (!ok) break;
    }
    ep->SubmitRequestBatch();
    q.restart.clear();
    return ok;
  }

  bool measure(uint32_t size, Row* row) {
    const uint64_t iters = iterations(o_, p_.test, size);
    BwMeter meter;
    Progress progress(p_.test, size, o_.duration_s);
    meter.start();
    uint64_t done = 0;
    bool stopping = false;
    for (uint32_t i = 0; i < nqp_; i++) {
      Qp& q = qps_[i];
      q.started = q.done = 0;
      for (uint32_t w = 0; w < nwin_ && (!iters || w < iters); w++) {
        q.restart.push_back(w);
        q.started++;
      }
      if (!start_cycles(i, size)) return false;
    }
    for (;;) {
      stopping = stopping || (!iters && run_over(o_, meter.started(), 0, 0)) || nd_app::sigint_requested();
      bool finished = true;
      for (Qp& q : qps_) finished = finished && q.done == q.started;
      if (finished) break;
      Op* room[kBurst];
      const std::span<Op*> ops = s_.reap_ops(room);
      if (ops.empty()) return false;
      for (Op* op : ops) {
        Qp& q = qps_[op->qp];
        uint32_t w = 0;
        if (op->kind == OpKind::kInvalidate) {
          if (!s_.succeeded(op, "the window's invalidation")) return false;
          w = op->slot;
          q.windows[w].invalidated_seen = true;
        } else if (op->kind == OpKind::kCtrlRecv) {
          if (op->Status == ND_CANCELED) return s_.fail("the server went away (receive canceled)");
          if (!s_.succeeded(op, "receiving an answer")) return false;
          uint32_t be = 0;
          if (op->BytesTransferred != kAnswerLen)
            return s_.fail("an answer of " + std::to_string(op->BytesTransferred) + " bytes");
          std::memcpy(&be, op->addr, sizeof be);
          w = ntohl(be);
          if (w >= nwin_ || !q.windows[w].busy || q.windows[w].answered) return s_.fail("an answer for no cycle");
          q.windows[w].answered = true;
          if (!post_ctrl_recv(s_, op)) return false;
        } else {
          return s_.succeeded(op, "a Bind or request") &&
                 s_.fail("an unexpected result (kind " + std::to_string(int(op->kind)) + ")");
        }
        Window& win = q.windows[w];
        if (!win.answered || !win.invalidated_seen) continue;
        // The cycle is complete: the Write landed before the answer, the window is invalid.
        const int64_t bad = check_pattern(s_.buf() + block(op->qp, w, size), size,
                                          pattern_seed(p_.test, Direction::kToClient));
        if (bad >= 0) return s_.fail("sendinv: the block written differs at byte " + std::to_string(bad));
        win.busy = false;
        q.done++;
        done++;
        if (!stopping && (!iters || q.started < iters)) {
          q.restart.push_back(w);
          q.started++;
        }
      }
      for (uint32_t i = 0; i < nqp_; i++)
        if (!start_cycles(i, size)) return false;
      meter.sample(done);
      const uint64_t now = now_tsc();
      if (progress.due(now)) {
        char fig[64];
        std::snprintf(fig, sizeof fig, "%.0f cycles/s", double(done) / meter.seconds());
        progress.print(now, done, fig);
      }
    }
    *row = meter.finish(size, done, 2ull * nwin_ * nqp_);
    row->cycles_per_sec = meter.seconds() > 0 ? double(done) / meter.seconds() : 0;
    row->bw_peak_gbps = row->bw_avg_gbps = row->msg_rate_mpps = 0;
    return true;
  }

  bool sync() {
    for (Qp& q : qps_) {
      q.answered = false;
      if (!send_empty(s_, q.ctrl)) return false;
    }
    for (;;) {
      bool all = true;
      for (Qp& q : qps_) all = all && q.answered;
      if (all) return true;
      Op* room[kBurst];
      const std::span<Op*> ops = s_.reap_ops(room);
      if (ops.empty()) return false;
      for (Op* op : ops) {
        if (op->kind != OpKind::kCtrlRecv) return s_.unexpected(op, "a request");
        if (!s_.succeeded(op, "receiving the SYNC answer")) return false;
        if (op->BytesTransferred != 0) return s_.fail("a message where the SYNC answer belongs");
        qps_[op->qp].answered = true;
        if (!post_ctrl_recv(s_, op)) return false;
      }
    }
  }

  Session& s_;
  const Plan& p_;
  ClientEnv& env_;
  const Options& o_;
  const uint32_t nqp_, nwin_;
  std::vector<Qp> qps_;
};

// ---- server -----------------------------------------------------------------------------

class InvServer {
 public:
  InvServer(Session& s, const Plan& p) : s_(s), p_(p), nqp_(test_qps(p)), nwin_(sendinv_windows(p)), qps_(nqp_) {}

  bool run() {
    if (!s_.create_cq(nqp_ * (recvs_per_qp(nwin_) + sends_per_qp(nwin_)))) return false;
    for (uint32_t i = 0; i < nqp_; i++) {
      qps_[i].ctrl.init(i, recvs_per_qp(nwin_));
      qps_[i].silent.kind = OpKind::kDataSilent;
      qps_[i].silent.qp = uint16_t(i);
    }
    const Depths d{recvs_per_qp(nwin_), sends_per_qp(nwin_)};
    if (!accept_all(s_, p_, d, [&](uint32_t qp) { return post_ctrl_recvs(s_, qps_[qp].ctrl); })) return false;
    fill_pattern(s_.buf() + s_.layout().send(), p_.last_size, pattern_seed(p_.test, Direction::kToClient));
    for (Qp& q : qps_) {
      uint8_t msg[kSetupLen];
      encode(Setup{}, msg);
      if (!send_ctrl(s_, q.ctrl, kSetupSlot, msg, sizeof msg)) return false;
    }
    auto received = [&](Op* op, uint32_t) {
      if (op->BytesTransferred == kRequestLen) {
        Request r;
        std::memcpy(&r.desc, op->addr, sizeof r.desc);
        uint32_t be;
        std::memcpy(&be, op->addr + sizeof r.desc, sizeof be);
        r.window = ntohl(be);
        if (r.window >= nwin_) return s_.fail("a request for window " + std::to_string(r.window));
        qps_[op->qp].pending.push_back(r);
      } else if (op->BytesTransferred != 0) {
        return s_.fail("a " + std::to_string(op->BytesTransferred) + "-byte message where sendinv sends requests");
      }
      return post_ctrl_recv(s_, op);
    };
    auto burst = [&](uint32_t size) {
      for (uint32_t i = 0; i < nqp_; i++)
        if (!serve(i, size)) return false;
      return true;
    };
    auto answer = [&](uint32_t) {
      for (Qp& q : qps_)
        if (!send_empty(s_, q.ctrl)) return false;
      return true;
    };
    return serve_sizes(s_, p_, nqp_, "a Write or answer", received, burst, answer);
  }

 private:
  struct Request {
    ND_MW_DESCRIPTOR desc;
    uint32_t window;
  };
  struct Qp {
    Control ctrl;
    Op silent;
    std::vector<Request> pending;
  };

  /// Writes the block into each requested window and answers with SendAndInvalidate.
  bool serve(uint32_t i, uint32_t size) {
    Qp& q = qps_[i];
    if (q.pending.empty()) return true;
    INDEndpoint* ep = s_.ep(i);
    ep->StartRequestBatch();
    bool ok = true;
    for (const Request& r : q.pending) {
      const ND_SGE data = s_.sge(s_.layout().send(), size);
      ok = ok && s_.posted(ep->Write(&q.silent, &data, 1, &r.desc, 0, ND_OP_FLAG_SILENT_SUCCESS), "Write");
      const size_t off = s_.control_out(i, kMsgSlot + r.window);
      const uint32_t be = htonl(r.window);
      std::memcpy(s_.buf() + off, &be, sizeof be);
      const ND_SGE answer = s_.sge(off, kAnswerLen);
      ok = ok && s_.posted(ep->SendAndInvalidate(&q.silent, &answer, 1, &r.desc, ND_OP_FLAG_SILENT_SUCCESS),
                           "SendAndInvalidate");
      if (!ok) break;
    }
    ep->SubmitRequestBatch();
    q.pending.clear();
    return ok;
  }

  Session& s_;
  const Plan& p_;
  const uint32_t nqp_, nwin_;
  std::vector<Qp> qps_;
};

}  // namespace

bool sendinv_client(Session& s, const Plan& p, ClientEnv& env) { return InvClient(s, p, env).run(); }
bool sendinv_server(Session& s, const Plan& p) { return InvServer(s, p).run(); }

}  // namespace ndnic::ndperf
