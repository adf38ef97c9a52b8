// send_lat, write_lat and read_lat, as perftest's, on one QP:
//  - send_lat: ping-pong of Sends; the client times each round trip, from its post to the
//    pong's receive; latency is half of it.
//  - write_lat: ping-pong of Writes into each other's window; each end watches the last byte
//    of its window for the peer's write (perftest's way: no completion marks a Write's
//    arrival), then writes back. Half the round trip.
//  - read_lat: the client Reads and times each Read from post to completion (the whole
//    operation, as perftest).
// Waits are polled, or (events) blocked in Notify. A Write completes nothing at its target, so
// with events write_lat writes with immediate data (ndnic's extension): the immediate's
// receive is what wakes the peer, which then finds the data in its window as before.
//
// Data checks, every size: each end checks the last message it received (send_lat's last
// ping and pong, write_lat's last write each way, read_lat's last read).
#include <cstring>

#include <rte_pause.h>

#include "ndnic/backoff.h"
#include "tools/ndperf/nd/halves.h"
#include "tools/ndperf/pattern.h"
#include "tools/ndperf/progress.h"
#include "tools/ndperf/report/report.h"
#include "tools/ndperf/stats.h"

namespace ndnic::ndperf {
namespace {

constexpr uint32_t kDataRecvs = 4;
constexpr uint32_t kSetupSlot = 0, kBadSlot = 2;
constexpr unsigned kLooksPerCqCheck = 256;  ///< write_lat: memory looks between CQ looks (polling)

/// write_lat: memory looks per CQ look. Run to completion, the CQ look is also what moves the
/// device (the Write arrives only through it): every look.
unsigned looks_per_cq_check(const Options& o) { return o.drive == Drive::kThread ? 1 : kLooksPerCqCheck; }
constexpr size_t kBurst = 16;

/// write_lat's mark in the last byte of iteration i: never 0 (a cleared window) and never
/// the previous iteration's.
uint8_t tag(uint64_t i) { return uint8_t(1 + i % 255); }

bool half_rtt(Test t) { return t != Test::kReadLat; }

std::string size_text(uint32_t size) { return std::to_string(size) + " B"; }


DWORD window_rights(Test t) { return t == Test::kReadLat ? ND_OP_FLAG_ALLOW_READ : ND_OP_FLAG_ALLOW_WRITE; }

/// Either end's receives on its one QP: control receives (through ReceiveExt for write_lat
/// with events, to see the Writes with immediate) and send_lat's data receives.
struct Receives {
  Control ctrl;
  std::vector<Op> data;

  /// The session's CQ, and the receives ready to post.
  bool create(Session& s, const Plan& p, bool imm) {
    const bool send = p.test == Test::kSendLat;
    if (!s.create_cq(2 * (kCtrlRecvs + kCtrlSends + 2))) return false;
    ctrl.init(0, send ? 0 : kCtrlRecvs, imm);
    data.assign(send ? kDataRecvs : 0, Op{});
    return true;
  }
  /// Posts them all (before the connection is established).
  bool post(Session& s, const Plan& p) {
    for (Op& op : data)
      if (!post_data_recv(s, &op, data_recv_len(p))) return false;
    return post_ctrl_recvs(s, ctrl);
  }
};
constexpr Depths kDepths{kCtrlRecvs, kCtrlSends + 2};

// ---- client -----------------------------------------------------------------------------

class LatClient {
 public:
  LatClient(Session& s, const Plan& p, ClientEnv& env)
      : s_(s), p_(p), env_(env), o_(s.options()), imm_(p.test == Test::kWriteLat && o_.events) {}

  bool run() {
    if (!recvs_.create(s_, p_, imm_)) return false;
    op_.kind = OpKind::kData;
    if (!connect_all(s_, env_, p_, kDepths, [&](uint32_t) { return recvs_.post(s_, p_); })) return false;
    std::vector<Setup> setups;
    if (!wait_setups(s_, 1, &setups, [&](Op* op) { return repost(s_, p_, op); })) return false;
    peer_ = setups[0].window;
    uint8_t* recv = s_.buf() + s_.layout().recv();
    std::memset(recv, 0, p_.last_size);
    if (p_.test == Test::kWriteLat) {
      // Our window for the server's writes, told to it the way it told us its own.
      INDMemoryWindow* mw = s_.create_window(&invalidated_);
      Setup mine;
      uint8_t msg[kSetupLen];
      if (!mw || !bind_wait(s_, 0, mw, s_.layout().recv(), p_.last_size, ND_OP_FLAG_ALLOW_WRITE, &mine.window))
        return false;
      encode(mine, msg);
      if (!send_ctrl(s_, recvs_.ctrl, kSetupSlot, msg, sizeof msg)) return false;
    }
    fill_pattern(s_.buf() + s_.layout().send(), p_.last_size, pattern_seed(p_.test, Direction::kToServer));
    print_test_banner(s_, p_, env_, 0, imm_ ? "Writes with immediate data (events: they wake the peer)" : "");
    for (uint32_t size : sizes(p_)) {
      LatencyRecorder ticks;
      if (!measure(size, &ticks) || !verify(size, ticks.count()) || !sync(size)) return false;
      const Row row = ticks.row(size, half_rtt(p_.test) ? 2.0 : 1.0);
      keep_row(p_, env_, row);
      if (nd_app::sigint_requested()) break;
    }
    print_end();
    return s_.disconnect();
  }

 private:
  bool measure(uint32_t size, LatencyRecorder* ticks) {
    const uint64_t iters = iterations(o_, p_.test, size);
    Progress progress(p_.test, size, o_.duration_s);
    const uint64_t t0 = now_tsc();
    for (uint64_t i = 0; !run_over(o_, t0, i, iters); i++) {
      const uint64_t start = now_tsc();
      if (!one(size, i)) return false;
      const uint64_t end = now_tsc();
      ticks->add(end - start);
      progress.show_lat(end, i + 1, ticks->sum(), half_rtt(p_.test) ? 2 : 1);
    }
    return true;
  }

  /// One iteration: a ping and its pong, or one Read.
  bool one(uint32_t size, uint64_t i) {
    INDEndpoint* ep = s_.ep(0);
    const Layout& l = s_.layout();
    switch (p_.test) {
      case Test::kSendLat: {
        const ND_SGE sge = s_.sge(l.send(), size);
        if (!s_.posted(ep->Send(&op_, &sge, 1, ND_OP_FLAG_SILENT_SUCCESS), "Send")) return false;
        return wait_data(size);
      }
      case Test::kReadLat: {
        const ND_SGE sge = s_.sge(l.recv(), size);
        if (!s_.posted(ep->Read(&op_, &sge, 1, &peer_, 0, 0), "Read")) return false;
        return wait_op(size);
      }
      default: {
        uint8_t* out = s_.buf() + l.send();
        out[size - 1] = tag(i);
        const ND_SGE sge = s_.sge(l.send(), size);
        if (imm_) {
          INDEndpointExt* x = s_.ext(0);
          return x &&
                 s_.posted(x->WriteWithImmediate(&op_, &sge, 1, &peer_, 0, tag(i), ND_OP_FLAG_SILENT_SUCCESS),
                           "WriteWithImmediate") &&
                 wait_write_imm(size, tag(i));
        }
        if (!s_.posted(ep->Write(&op_, &sge, 1, &peer_, 0, ND_OP_FLAG_SILENT_SUCCESS), "Write")) return false;
        return watch(size, tag(i));
      }
    }
  }

  /// send_lat: the pong.
  bool wait_data(uint32_t size) {
    for (;;) {
      Op* room[kBurst];
      const std::span<Op*> ops = s_.reap_ops(room);
      if (ops.empty()) return false;
      bool got = false;
      for (Op* op : ops) {
        if (op->kind != OpKind::kDataRecv) return s_.unexpected(op, "Send");
        if (op->Status == ND_CANCELED) return s_.fail("the server went away (receive canceled)");
        if (!s_.succeeded(op, "receive")) return false;
        if (op->BytesTransferred != size)
          return s_.fail("a " + std::to_string(op->BytesTransferred) + "-byte pong to a " + size_text(size) + " ping");
        if (!repost(s_, p_, op)) return false;
        got = true;
      }
      if (got) return true;
    }
  }

  /// read_lat: the Read's completion.
  bool wait_op(uint32_t size) {
    ND_RESULT* out[kBurst];
    const size_t k = s_.reap(out, kBurst);
    if (k == 0) return false;
    if (k != 1 || out[0] != &op_) return s_.fail("an unexpected result");
    if (!s_.succeeded(&op_, "Read")) return false;
    if (op_.BytesTransferred != size) return s_.fail("a Read of " + std::to_string(op_.BytesTransferred) + " bytes");
    return true;
  }

  /// write_lat with events: the receive the server's Write with immediate consumed.
  bool wait_write_imm(uint32_t size, uint8_t want) {
    for (;;) {
      Op* room[kBurst];
      const std::span<Op*> ops = s_.reap_ops(room);
      if (ops.empty()) return false;
      for (Op* op : ops) {
        if (op->kind != OpKind::kCtrlRecv) return s_.unexpected(op, "Write");
        if (op->Status == ND_CANCELED) return s_.fail("the server went away (receive canceled)");
        if (!s_.succeeded(op, "receive")) return false;
        if (!(op->Flags & NDNIC_RESULT_WRITE) || op->BytesTransferred != size || op->ImmediateData != want)
          return s_.fail("a message where the server's Write with immediate belongs");
        if (s_.buf()[s_.layout().recv() + size - 1] != want)
          return s_.fail("the Write's immediate came before its data");
        return post_ctrl_recv(s_, op);
      }
    }
  }

  /// write_lat: the server's write arriving in our window. Unsignaled Writes report only
  /// failures, so the CQ is looked at too.
  bool watch(uint32_t size, uint8_t want) {
    const volatile uint8_t* last = s_.buf() + s_.layout().recv() + size - 1;
    const uint64_t give_up = now_tsc() + uint64_t(o_.timeout_s * tsc_hz());
    nic::Backoff backoff;
    for (unsigned looks = 0;; looks++) {
      if (__atomic_load_n(last, __ATOMIC_ACQUIRE) == want) return true;
      if (looks % looks_per_cq_check(o_) == 0) {
        ND_RESULT* out[kBurst];
        const size_t k = s_.poll(out, kBurst);
        for (size_t j = 0; j < k; j++)
          if (!s_.succeeded(out[j], "Write") || !s_.fail("an unexpected result")) return false;
        if (now_tsc() > give_up)
          return s_.fail("write_lat: the server's write did not arrive in " + std::to_string(o_.timeout_s) + " s");
      }
      rte_pause();
      backoff.idle();
    }
  }

  bool verify(uint32_t size, uint64_t done) {
    uint8_t* recv = s_.buf() + s_.layout().recv();
    const uint8_t seed = pattern_seed(p_.test, Direction::kToClient);
    int64_t bad = -1;
    if (done) {
      if (p_.test == Test::kWriteLat) {
        bad = check_pattern(recv, size - 1, seed);
        if (bad < 0 && recv[size - 1] != tag(done - 1)) bad = size - 1;
        s_.buf()[s_.layout().send() + size - 1] = pattern_byte(size - 1, pattern_seed(p_.test, Direction::kToServer));
      } else {
        bad = check_pattern(recv, size, seed);
      }
    }
    std::memset(recv, 0, size);
    if (bad >= 0)
      return s_.fail(std::string(name(p_.test)) + " " + size_text(size) + ": the last message differs at byte " +
                     std::to_string(bad));
    return true;
  }

  bool sync(uint32_t size) {
    if (!send_empty(s_, recvs_.ctrl)) return false;
    for (;;) {
      Op* room[kBurst];
      const std::span<Op*> ops = s_.reap_ops(room);
      if (ops.empty()) return false;
      for (Op* op : ops) {
        if (op->kind != OpKind::kDataRecv && op->kind != OpKind::kCtrlRecv) return s_.unexpected(op, "a request");
        if (!s_.succeeded(op, "receiving the SYNC answer")) return false;
        if (op->BytesTransferred == kSyncBad)
          return s_.fail(std::string(name(p_.test)) + " " + size_text(size) + ": the server found the data wrong");
        if (op->BytesTransferred != 0) return s_.fail("a message where the SYNC answer belongs");
        return repost(s_, p_, op);
      }
    }
  }

  Session& s_;
  const Plan& p_;
  ClientEnv& env_;
  const Options& o_;
  const bool imm_;  ///< write_lat with events: Writes with immediate data
  Receives recvs_;  ///< on the one QP
  Op op_, invalidated_;
  ND_MW_DESCRIPTOR peer_{};
};

// ---- server -----------------------------------------------------------------------------

class LatServer {
 public:
  LatServer(Session& s, const Plan& p)
      : s_(s), p_(p), events_(s.options().events), imm_(p.test == Test::kWriteLat && events_) {}

  bool run() {
    const bool send = p_.test == Test::kSendLat;
    if (!recvs_.create(s_, p_, imm_)) return false;
    invalidated_.kind = OpKind::kInvalidate;
    if (!accept_all(s_, p_, kDepths, [&](uint32_t) { return recvs_.post(s_, p_); })) return false;
    uint8_t* recv = s_.buf() + s_.layout().recv();
    if (p_.test == Test::kReadLat)
      fill_pattern(recv, p_.last_size, pattern_seed(p_.test, Direction::kToClient));
    else
      std::memset(recv, 0, p_.last_size);
    fill_pattern(s_.buf() + s_.layout().send(), p_.last_size, pattern_seed(p_.test, Direction::kToClient));
    Setup setup;
    if (!send) {
      INDMemoryWindow* mw = s_.create_window(&invalidated_);
      if (!mw || !bind_wait(s_, 0, mw, s_.layout().recv(), p_.last_size, window_rights(p_.test), &setup.window))
        return false;
    }
    uint8_t msg[kSetupLen];
    encode(setup, msg);
    if (!send_ctrl(s_, recvs_.ctrl, kSetupSlot, msg, sizeof msg)) return false;
    if (p_.test == Test::kWriteLat) {
      std::vector<Setup> theirs;
      if (!wait_setups(s_, 1, &theirs, [&](Op* op) { return post_ctrl_recv(s_, op); })) return false;
      peer_ = theirs[0].window;
    }
    return serve();
  }

 private:
  bool serve() {
    const std::vector<uint32_t> sz = sizes(p_);
    nic::Backoff backoff;
    for (size_t round = 0; round < sz.size(); round++) {
      uint64_t pings = 0;
      for (bool synced = false; !synced;) {
        ND_RESULT* out[kBurst];
        size_t k = 0;
        if (p_.test == Test::kWriteLat && !imm_) {
          // write_lat watches memory and looks at the CQ in passing.
          const uint64_t before = pings;
          if (!watch_write(sz[round], &pings)) return false;
          k = s_.poll(out, kBurst);
          if (k == 0 && pings != before) {
            backoff.busy();
            continue;
          }
          if (k == 0) {
            if (s_.stop_requested()) return false;
            rte_pause();
            backoff.idle();
            continue;
          }
          backoff.busy();
        } else if ((k = s_.reap(out, kBurst)) == 0) {
          return false;
        }
        for (size_t j = 0; j < k && !synced; j++) {
          Op* op = op_of(out[j]);
          if (op->kind != OpKind::kDataRecv && op->kind != OpKind::kCtrlRecv) return s_.unexpected(op, "a request");
          // The client disconnected. Between two sizes it stopped early (Ctrl-C): a clean end.
          if (op->Status == ND_CANCELED && pings == 0) return s_.wait_disconnect();
          if (!s_.succeeded(op, "receive")) return false;
          const SIZE_T len = op->BytesTransferred;
          const bool write_imm = imm_ && (op->Flags & NDNIC_RESULT_WRITE);
          const uint32_t imm = op->ImmediateData;
          if (!repost(s_, p_, op)) return false;
          if (write_imm) {
            if (len != sz[round] || imm != tag(pings)) return s_.fail("a Write with immediate out of turn");
            if (!watch_write(sz[round], &pings)) return false;
          } else if (len == 0) {
            synced = true;
          } else if (op->kind == OpKind::kDataRecv && len == sz[round]) {
            const ND_SGE sge = s_.sge(s_.layout().send(), len);
            if (!s_.posted(s_.ep(0)->Send(&recvs_.ctrl.send, &sge, 1, ND_OP_FLAG_SILENT_SUCCESS), "Send (pong)"))
              return false;
            pings++;
          } else {
            return s_.fail("a " + std::to_string(len) + "-byte message where " + name(p_.test) + " sends " +
                           std::to_string(sz[round]));
          }
        }
      }
      if (!answer(sz[round], pings)) return false;
    }
    return s_.wait_disconnect();
  }

  /// write_lat: answers each of the client's writes that has arrived with one of ours.
  bool watch_write(uint32_t size, uint64_t* pings) {
    const volatile uint8_t* last = s_.buf() + s_.layout().recv() + size - 1;
    uint8_t* out = s_.buf() + s_.layout().send();
    const bool arrived = __atomic_load_n(last, __ATOMIC_ACQUIRE) == tag(*pings);
    if (imm_ && !arrived) return s_.fail("the Write's immediate came before its data");
    if (!arrived) return true;
    out[size - 1] = tag(*pings);
    const ND_SGE sge = s_.sge(s_.layout().send(), size);
    if (imm_) {
      INDEndpointExt* x = s_.ext(0);
      if (!x || !s_.posted(x->WriteWithImmediate(&recvs_.ctrl.send, &sge, 1, &peer_, 0, tag(*pings),
                                                 ND_OP_FLAG_SILENT_SUCCESS),
                           "WriteWithImmediate"))
        return false;
    } else if (!s_.posted(s_.ep(0)->Write(&recvs_.ctrl.send, &sge, 1, &peer_, 0, ND_OP_FLAG_SILENT_SUCCESS), "Write")) {
      return false;
    }
    (*pings)++;
    return true;
  }

  /// The size's SYNC is in: check the last message, clear for the next size, answer.
  bool answer(uint32_t size, uint64_t pings) {
    uint8_t* recv = s_.buf() + s_.layout().recv();
    const uint8_t seed = pattern_seed(p_.test, Direction::kToServer);
    int64_t bad = -1;
    if (pings && p_.test == Test::kSendLat) bad = check_pattern(recv, size, seed);
    if (pings && p_.test == Test::kWriteLat) {
      bad = check_pattern(recv, size - 1, seed);
      if (bad < 0 && recv[size - 1] != tag(pings - 1)) bad = size - 1;
      s_.buf()[s_.layout().send() + size - 1] = pattern_byte(size - 1, pattern_seed(p_.test, Direction::kToClient));
    }
    if (p_.test != Test::kReadLat) std::memset(recv, 0, size);
    if (bad >= 0) {
      s_.fail(std::string(name(p_.test)) + " " + size_text(size) + ": the last message differs at byte " +
              std::to_string(bad));
      const uint8_t bad_answer = 0xBA;
      return send_ctrl(s_, recvs_.ctrl, kBadSlot, &bad_answer, kSyncBad);
    }
    return send_empty(s_, recvs_.ctrl);
  }

  Session& s_;
  const Plan& p_;
  const bool events_;
  const bool imm_;  ///< write_lat with events: Writes with immediate data
  Receives recvs_;  ///< on the one QP
  Op invalidated_;
  ND_MW_DESCRIPTOR peer_{};
};

}  // namespace

bool lat_client(Session& s, const Plan& p, ClientEnv& env) { return LatClient(s, p, env).run(); }
bool lat_server(Session& s, const Plan& p) { return LatServer(s, p).run(); }

}  // namespace ndnic::ndperf
