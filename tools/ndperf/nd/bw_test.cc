// send_bw, write_bw, read_bw and atomic_bw, as perftest's: the client keeps -t requests in
// flight on each QP and counts completions; the server is passive except for send_bw, where it
// keeps receives posted and grants credits for them (a Send needs a receive: without credits
// the client would run into RNR NAKs whenever the server's thread is late to repost). The
// requests go in batches (StartRequestBatch / SubmitRequestBatch, one ring operation each),
// and only every signal_every()-th one and the last of each batch is signaled: completions
// come in order on a QP, so one result retires the unsignaled ones before it.
//
// Data checks, every size: the server checks the bytes a send_bw or write_bw size left in its
// buffer (the last message's), the client the bytes its last Read brought, and for atomic_bw
// that the counter its QP incremented holds exactly the number of FetchAndAdds (one more
// FetchAndAdd of 0 reads it).
#include <algorithm>
#include <cstring>

#include "tools/ndperf/nd/halves.h"
#include "tools/ndperf/pattern.h"
#include "tools/ndperf/progress.h"
#include "tools/ndperf/report/report.h"
#include "tools/ndperf/stats.h"

namespace ndnic::ndperf {
namespace {

constexpr uint32_t kCreditLen = 4;  ///< a credit message: the number of receives it grants
/// The server grants credits for every receives/kGrantParts it has reposted: small grants
/// keep the client's pipeline going while the server's thread works through a batch.
constexpr uint32_t kGrantParts = 16;
constexpr uint32_t kSetupSlot = 0, kCreditSlot = 1, kBadSlot = 2;
constexpr uint32_t kCheckSlot = Layout::kSlotsPerQp - 1;  ///< where atomic_bw's check lands
constexpr size_t kBurst = 64;

DWORD window_rights(Test t) {
  switch (t) {
    case Test::kWriteBw: return ND_OP_FLAG_ALLOW_WRITE;
    case Test::kReadBw: return ND_OP_FLAG_ALLOW_READ;
    case Test::kAtomicBw: return NDNIC_OP_FLAG_ALLOW_ATOMIC | ND_OP_FLAG_ALLOW_READ | ND_OP_FLAG_ALLOW_WRITE;
    default: return 0;
  }
}

/// What the server's window covers: the largest message, or one 8-byte counter per QP.
size_t window_len(const Plan& p) {
  return p.test == Test::kAtomicBw ? test_qps(p) * sizeof(uint64_t) : size_t(p.last_size);
}

std::string size_text(uint32_t size) { return std::to_string(size) + " B"; }

// ---- client -----------------------------------------------------------------------------

class BwClient {
 public:
  BwClient(Session& s, const Plan& p, ClientEnv& env)
      : s_(s), p_(p), env_(env), o_(s.options()), nqp_(test_qps(p)), depth_(p.depth),
        every_(signal_every(p.depth)), qps_(nqp_) {}

  bool run() {
    const bool send = p_.test == Test::kSendBw;
    if (!s_.create_cq(std::min<size_t>(kMaxCqEntries, nqp_ * (kCtrlRecvs + depth_ + kCtrlSends + 1))))
      return false;
    for (uint32_t i = 0; i < nqp_; i++) {
      Qp& q = qps_[i];
      q.data.assign(depth_, Op{});
      for (Op& op : q.data) op.qp = uint16_t(i);
      q.silent.kind = OpKind::kDataSilent;
      q.silent.qp = uint16_t(i);
      q.check.kind = OpKind::kCheck;
      q.check.qp = uint16_t(i);
      q.ctrl.init(i, kCtrlRecvs);
    }
    const Depths d{kCtrlRecvs, depth_ + kCtrlSends};
    if (!connect_all(s_, env_, p_, d, [&](uint32_t qp) { return post_ctrl_recvs(s_, qps_[qp].ctrl); })) return false;
    std::vector<Setup> setups;
    if (!wait_setups(s_, nqp_, &setups, [&](Op* op) { return post_ctrl_recv(s_, op); })) return false;
    for (uint32_t i = 0; i < nqp_; i++) {
      qps_[i].setup = setups[i];
      qps_[i].credits = setups[i].receives;
      if (send && qps_[i].credits < 2) return s_.fail("the server keeps too few receives posted");
    }
    // Every message is a prefix of one pattern: one fill serves the whole sweep.
    fill_pattern(s_.buf() + s_.send_area(), p_.last_size, pattern_seed(p_.test, Direction::kToServer));
    // A split test's first group speaks for all of them (groups.h).
    const bool lead = p_.group == 0;
    if (lead) print_test_banner(s_, p_, env_, every_);
    for (uint32_t size : sizes(p_)) {
      Row row;
      bool stop = false;
      if (!measure(size, &row, &stop) || !sync(size) || !verify(size)) return false;
      if (lead) keep_row(p_, env_, row);
      if (stop) break;
    }
    if (lead) print_end();
    return s_.disconnect();
  }

 private:
  struct Qp {
    std::vector<Op> data;  ///< signaled requests, by sequence number modulo the depth
    Op silent, check;
    Control ctrl;
    Setup setup;
    uint64_t posted = 0, completed = 0;  ///< this size
    uint64_t total = 0;                  ///< every size so far (atomic_bw's counter)
    uint32_t credits = 0;                ///< send_bw
    bool answered = false, bad = false;
  };

  /// One size's figures (every group's, in a split test); `stop`: end after this size.
  bool measure(uint32_t size, Row* row, bool* stop) {
    const uint64_t iters = iterations(o_, p_.test, size);
    if (env_.groups && !env_.groups->start()) return false;
    if (p_.test == Test::kReadBw) std::memset(s_.buf() + s_.recv_area(), 0, size);
    for (Qp& q : qps_) q.posted = q.completed = 0;
    BwMeter meter;
    Progress progress(p_.test, size, o_.duration_s);
    meter.start();
    bool stopping = false;
    uint64_t done = 0;
    for (;;) {
      stopping = stopping || (!iters && run_over(o_, meter.started(), 0, 0)) || nd_app::sigint_requested();
      bool finished = true;
      for (uint32_t i = 0; i < nqp_; i++) {
        Qp& q = qps_[i];
        if (!stopping && !post_more(i, size, iters)) return false;
        finished = finished && q.completed == q.posted && (stopping || q.posted == iters);
      }
      if (finished) break;
      Op* room[kBurst];
      const std::span<Op*> ops = s_.reap_ops(room);
      if (ops.empty()) return false;
      for (Op* op : ops) {
        if (op->kind == OpKind::kData) {
          // The description only for a failure: built for every result, it cost send_bw 3-17%.
          if (op->Status != ND_SUCCESS &&
              !s_.succeeded(op, std::string(name(p_.test)) + " " + size_text(size) + ": request " +
                                    std::to_string(op->seq + 1)))
            return false;
          Qp& q = qps_[op->qp];
          done += op->seq + 1 - q.completed;
          q.completed = op->seq + 1;
        } else if (!control(op)) {
          return false;
        }
      }
      meter.sample(done);
      if (p_.group == 0) progress.show_bw(meter, done);
    }
    *row = meter.finish(size, done, 2ull * depth_ * nqp_);
    for (Qp& q : qps_) q.total += q.completed;
    *stop = nd_app::sigint_requested();
    return !env_.groups || env_.groups->finish(p_.group, *row, meter.started(), meter.ended(), stop, row);
  }

  /// Fills the QP's pipeline: up to the depth, the iterations and (send_bw) the credits, less
  /// the one credit kept for the SYNC.
  bool post_more(uint32_t i, uint32_t size, uint64_t iters) {
    Qp& q = qps_[i];
    uint64_t n = depth_ - (q.posted - q.completed);
    if (iters) n = std::min(n, iters - q.posted);
    if (p_.test == Test::kSendBw) n = std::min<uint64_t>(n, q.credits - 1);
    if (n == 0) return true;
    INDEndpoint* ep = s_.ep(i);
    ep->StartRequestBatch();
    bool ok = true;
    for (uint64_t k = 0; k < n && ok; k++) {
      const uint64_t seq = q.posted;
      // The last of a batch is always signaled, so no unsignaled request is ever left
      // without a later signaled one to retire it.
      const bool signaled = (seq + 1) % every_ == 0 || k + 1 == n;
      Op* op = signaled ? &q.data[seq % depth_] : &q.silent;
      op->seq = seq;
      ok = issue(i, size, op, signaled ? 0 : ND_OP_FLAG_SILENT_SUCCESS);
      q.posted++;
      if (p_.test == Test::kSendBw) q.credits--;
    }
    ep->SubmitRequestBatch();
    return ok;
  }

  bool issue(uint32_t i, uint32_t size, Op* op, DWORD flags) {
    INDEndpoint* ep = s_.ep(i);
    const ND_MW_DESCRIPTOR* w = &qps_[i].setup.window;
    switch (p_.test) {
      case Test::kSendBw: {
        const ND_SGE sge = s_.sge(s_.send_area(), size);
        return s_.posted(ep->Send(op, &sge, 1, flags), "Send");
      }
      case Test::kWriteBw: {
        const ND_SGE sge = s_.sge(s_.send_area(), size);
        return s_.posted(ep->Write(op, &sge, 1, w, 0, flags), "Write");
      }
      case Test::kReadBw: {
        const ND_SGE sge = s_.sge(s_.recv_area(), size);
        return s_.posted(ep->Read(op, &sge, 1, w, 0, flags), "Read");
      }
      default: {
        // Each QP adds to its own counter; the originals land in a ring of 8-byte slots.
        const ND_SGE sge = s_.sge(s_.recv_area() + (size_t(i) * depth_ + op->seq % depth_) * sizeof(uint64_t), 8);
        INDEndpointExt* x = s_.ext(i);
        return x && s_.posted(x->FetchAndAdd(op, &sge, w, i * sizeof(uint64_t), 1, flags), "FetchAndAdd");
      }
    }
  }

  /// A result that is not a data request's: a control receive (credit, SYNC answer), or an
  /// unsignaled request that failed.
  bool control(Op* op) {
    Qp& q = qps_[op->qp];
    switch (op->kind) {
      case OpKind::kCtrlRecv: {
        if (op->Status == ND_CANCELED) return s_.fail("the server went away (receive canceled)");
        if (!s_.succeeded(op, "receive")) return false;
        const SIZE_T len = op->BytesTransferred;
        if (len == kCreditLen) {
          uint32_t grant = 0;
          std::memcpy(&grant, op->addr, sizeof grant);
          q.credits += grant;
        } else if (len == 0 || len == kSyncBad) {
          if (q.answered) return s_.fail("a second SYNC answer");
          q.answered = true;
          q.bad = len == kSyncBad;
        } else {
          return s_.fail("a " + std::to_string(len) + "-byte message from the server");
        }
        return post_ctrl_recv(s_, op);
      }
      case OpKind::kCheck: return s_.succeeded(op, "FetchAndAdd (check)");
      default:
        // Unsignaled requests are reported only when they fail.
        return s_.unexpected(op, std::string(name(p_.test)) + ": an unsignaled request");
    }
  }

  /// The size's SYNC on every QP, then every answer.
  bool sync(uint32_t size) {
    for (Qp& q : qps_) {
      q.answered = q.bad = false;
      if (!send_empty(s_, q.ctrl)) return false;
      if (p_.test == Test::kSendBw) q.credits--;
    }
    for (;;) {
      bool all = true;
      for (Qp& q : qps_) all = all && q.answered;
      if (all) break;
      Op* room[kBurst];
      const std::span<Op*> ops = s_.reap_ops(room);
      if (ops.empty()) return false;
      for (Op* op : ops)
        if (!control(op)) return false;
    }
    for (Qp& q : qps_)
      if (q.bad)
        return s_.fail(std::string(name(p_.test)) + " " + size_text(size) + ": the server found the data wrong");
    return true;
  }

  bool verify(uint32_t size) {
    if (p_.test == Test::kReadBw) {
      const uint8_t seed = pattern_seed(p_.test, Direction::kToClient);
      const int64_t bad = check_pattern(s_.buf() + s_.recv_area(), size, seed);
      if (bad >= 0)
        return s_.fail("read_bw " + size_text(size) + ": the data read differs at byte " + std::to_string(bad));
    }
    if (p_.test != Test::kAtomicBw) return true;
    for (uint32_t i = 0; i < nqp_; i++) {
      Qp& q = qps_[i];
      const size_t off = s_.control_out(i, kCheckSlot);
      uint64_t* value = reinterpret_cast<uint64_t*>(s_.buf() + off);
      *value = ~uint64_t(0);
      const ND_SGE sge = s_.sge(off, sizeof(uint64_t));
      INDEndpointExt* x = s_.ext(i);
      if (!x || !s_.posted(x->FetchAndAdd(&q.check, &sge, &q.setup.window, i * sizeof(uint64_t), 0, 0), "FetchAndAdd"))
        return false;
      ND_RESULT* out[1];
      if (s_.reap(out, 1) == 0) return false;
      if (out[0] != &q.check) return control(op_of(out[0])) && s_.fail("an unexpected result after atomic_bw");
      if (!s_.succeeded(&q.check, "FetchAndAdd (check)")) return false;
      if (*value != q.total)
        return s_.fail("atomic_bw: QP " + std::to_string(i) + "'s counter is " + std::to_string(*value) + " after " +
                       std::to_string(q.total) + " FetchAndAdds of 1");
    }
    return true;
  }

  Session& s_;
  const Plan& p_;
  ClientEnv& env_;
  const Options& o_;
  const uint32_t nqp_, depth_, every_;
  std::vector<Qp> qps_;
};

// ---- server -----------------------------------------------------------------------------

class BwServer {
 public:
  BwServer(Session& s, const Plan& p)
      : s_(s), p_(p), nqp_(test_qps(p)), send_(p.test == Test::kSendBw),
        receives_(send_ ? send_bw_receives(p) : kCtrlRecvs), grant_(std::max<uint32_t>(1, receives_ / kGrantParts)),
        qps_(nqp_) {}

  bool run() {
    if (!s_.create_cq(nqp_ * (receives_ + kCtrlSends + 1))) return false;
    for (uint32_t i = 0; i < nqp_; i++) {
      Qp& q = qps_[i];
      q.ctrl.init(i, send_ ? 0 : kCtrlRecvs);
      q.data.assign(send_ ? receives_ : 0, Op{});
      for (Op& op : q.data) op.qp = uint16_t(i);
      q.invalidated.kind = OpKind::kInvalidate;
      q.invalidated.qp = uint16_t(i);
    }
    auto post = [&](uint32_t qp) {
      for (Op& op : qps_[qp].data)
        if (!post_data_recv(s_, &op, data_recv_len(p_))) return false;
      return post_ctrl_recvs(s_, qps_[qp].ctrl);
    };
    if (!accept_all(s_, p_, {receives_, kCtrlSends}, post)) return false;
    uint8_t* area = s_.buf() + s_.recv_area();
    if (p_.test == Test::kReadBw)
      fill_pattern(area, p_.last_size, pattern_seed(p_.test, Direction::kToClient));
    else
      std::memset(area, 0, window_len(p_));
    for (uint32_t i = 0; i < nqp_; i++) {
      Setup setup;
      setup.receives = send_ ? receives_ : 0;
      if (!send_) {
        INDMemoryWindow* mw = s_.create_window(&qps_[i].invalidated);
        if (!mw || !bind_wait(s_, i, mw, s_.recv_area(), window_len(p_), window_rights(p_.test), &setup.window))
          return false;
      }
      uint8_t msg[kSetupLen];
      encode(setup, msg);
      if (!send_ctrl(s_, qps_[i].ctrl, kSetupSlot, msg, sizeof msg)) return false;
    }
    return serve();
  }

 private:
  struct Qp {
    std::vector<Op> data;  ///< send_bw's receives
    Control ctrl;
    Op invalidated;        ///< the window's invalidation result (never expected)
    uint32_t since_grant = 0;
  };

  bool serve() {
    auto received = [&](Op* op, uint32_t size) {
      const SIZE_T len = op->BytesTransferred;
      if (len != 0 && (op->kind != OpKind::kDataRecv || len != size))
        return s_.fail("a " + std::to_string(len) + "-byte message where " + name(p_.test) + " sends " +
                       std::to_string(size));
      if (!repost(s_, p_, op)) return false;
      if (send_ && ++qps_[op->qp].since_grant == grant_) {
        qps_[op->qp].since_grant = 0;
        const uint32_t grant = grant_;
        if (!send_ctrl(s_, qps_[op->qp].ctrl, kCreditSlot, &grant, kCreditLen)) return false;
      }
      return true;
    };
    return serve_sizes(s_, p_, nqp_, "a control message", received, [](uint32_t) { return true; },
                       [&](uint32_t size) { return answer(size); });
  }

  /// Every QP's SYNC is in: the size's data is complete. Check it, clear it for the next
  /// size, answer.
  bool answer(uint32_t size) {
    bool good = true;
    if (send_ || p_.test == Test::kWriteBw) {
      uint8_t* area = s_.buf() + s_.recv_area();
      const int64_t bad = check_pattern(area, size, pattern_seed(p_.test, Direction::kToServer));
      if (bad >= 0) {
        s_.fail(std::string(name(p_.test)) + " " + size_text(size) + ": the data differs at byte " +
                std::to_string(bad));
        good = false;
      }
      std::memset(area, 0, size);
    }
    for (Qp& q : qps_) {
      const uint8_t bad_answer = 0xBA;
      if (!(good ? send_empty(s_, q.ctrl) : send_ctrl(s_, q.ctrl, kBadSlot, &bad_answer, kSyncBad))) return false;
    }
    return true;
  }

  Session& s_;
  const Plan& p_;
  const uint32_t nqp_;
  const bool send_;
  const uint32_t receives_, grant_;
  std::vector<Qp> qps_;
};

}  // namespace

bool bw_client(Session& s, const Plan& p, ClientEnv& env) { return BwClient(s, p, env).run(); }
bool bw_server(Session& s, const Plan& p) { return BwServer(s, p).run(); }

}  // namespace ndnic::ndperf
