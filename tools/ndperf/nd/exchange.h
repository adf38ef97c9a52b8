// What every test's two halves do around their measurement: connect the test's QPs (the
// client) or accept them (the server), control messages in 64-byte slots (setup, credits,
// SYNC and its answer), data receives, binding a window. The protocol of a test:
//
//   client                                 server
//   Connect(plan, qp i) for each QP  --->  Accept each (receives posted first)
//                                    <---  Setup on each QP (its window, its receive depth)
//   per size: the measured requests, then a zero-byte SYNC on each QP
//                                    <---  the answer when every QP's SYNC is in: zero bytes
//                                          when the size's data checked out, one byte when not
//   Disconnect                       --->  (the server's receives complete as canceled)
#pragma once

#include <chrono>
#include <functional>
#include <vector>

#include "tools/ndperf/nd/groups.h"
#include "tools/ndperf/results.h"
#include "tools/ndperf/nd/session.h"

namespace ndnic::ndperf {

constexpr uint32_t kCtrlRecvs = 16;  ///< control receives each QP keeps posted
constexpr uint32_t kCtrlSends = 16;  ///< control messages in flight per QP at most
constexpr uint32_t kSyncBad = 1;     ///< the length of a SYNC answer that reports bad data
/// A CQ holds at most this many (the adapter's MaxCqEntries); far fewer results are ever
/// outstanding, since most requests go unsignaled.
constexpr size_t kMaxCqEntries = 65535;

/// Where the client runs: the server, how long to wait for it, where rows go.
struct ClientEnv {
  uint32_t server_ipv4 = 0;
  uint16_t port = 0;
  std::chrono::steady_clock::duration retry{};
  TestResult* result = nullptr;
  std::string link;  ///< for the banner
  GroupSync* groups = nullptr;  ///< a split test (Plan::groups): where the groups meet
  uint32_t whole_qps = 0;       ///< a split test: every group's QPs (for the banner)
};

/// A QP's control receives (slots 0..n-1 of its control area) and its one result for control
/// sends, which go unsignaled (seen only when one fails).
struct Control {
  std::vector<Op> recvs;
  Op send;
  /// `extended`: the receives go through ReceiveExt (to see a Write with immediate).
  void init(uint32_t qp, uint32_t n, bool extended = false);
};

bool post_ctrl_recv(Session& s, Op* op);
bool post_ctrl_recvs(Session& s, Control& c);
/// How much a data receive takes: the largest message, or a control message (a setup may
/// come first on a QP that receives data).
size_t data_recv_len(const Plan& p);
/// A receive into the recv area (offset 0) of up to `len` bytes.
bool post_data_recv(Session& s, Op* op, size_t len);
/// Posts a receive that completed again where it was: a data receive of data_recv_len(p), or a
/// control receive in its slot.
bool repost(Session& s, const Plan& p, Op* op);
/// A control message from slot `slot` of the QP's outgoing control area, unsignaled.
bool send_ctrl(Session& s, Control& c, uint32_t slot, const void* data, size_t len);
/// A zero-byte Send (a SYNC or its good answer), unsignaled.
bool send_empty(Session& s, Control& c);
/// Binds `mw` over [off, off+len) of our buffer through the QP's endpoint and waits for the
/// bind (nothing else may complete meanwhile).
bool bind_wait(Session& s, uint32_t qp, INDMemoryWindow* mw, size_t off, size_t len, DWORD flags,
               ND_MW_DESCRIPTOR* desc);

/// Server: accepts the pending request (plan `first`, QP 0) and the requests for the test's
/// other QPs. `post` posts a QP's receives before its Accept.
bool accept_all(Session& s, const Plan& first, const Depths& d, const std::function<bool(uint32_t)>& post);
/// Client: connects the test's QPs.
bool connect_all(Session& s, const ClientEnv& env, const Plan& plan, const Depths& d,
                 const std::function<bool(uint32_t)>& post);
/// Server: reaps until every QP's SYNC of each size of the plan has come in. Every result must
/// be a receive (otherwise `other` names what failed, or the result was unexpected), and one
/// canceled before a size's first SYNC is the client's clean early end (Ctrl-C: it
/// disconnected between two sizes). Each successful receive, a SYNC (zero bytes, counted here)
/// or not, goes to `received(op, size)`, which checks it and posts it again; `burst(size)` runs
/// after each burst of results, and `answer(size)` once every QP's SYNC of the size is in.
template <class Received, class Burst, class Answer>
bool serve_sizes(Session& s, const Plan& p, uint32_t nqp, const char* other, Received received, Burst burst,
                 Answer answer) {
  const std::vector<uint32_t> sz = sizes(p);
  size_t round = 0;
  uint32_t syncs = 0;
  while (round < sz.size()) {
    Op* room[Session::kMaxReap];
    const std::span<Op*> ops = s.reap_ops(room);
    if (ops.empty()) return false;
    // The burst's receives go back as one batch per endpoint (one ring operation each).
    for (uint32_t i = 0; i < nqp; i++) s.ep(i)->StartRequestBatch();
    bool ok = true, disconnected = false;
    for (Op* op : ops) {
      if (op->kind != OpKind::kDataRecv && op->kind != OpKind::kCtrlRecv) {
        ok = s.unexpected(op, other);
      } else if (op->Status == ND_CANCELED && syncs == 0) {
        disconnected = true;
      } else if (!s.succeeded(op, "receive")) {
        ok = false;
      } else {
        if (op->BytesTransferred == 0) syncs++;
        ok = received(op, sz[round]);
      }
      if (!ok || disconnected) break;
    }
    for (uint32_t i = 0; i < nqp; i++) s.ep(i)->SubmitRequestBatch();
    if (disconnected) return s.wait_disconnect();
    if (!ok) return false;
    if (!burst(sz[round])) return false;
    if (syncs == nqp) {
      if (!answer(sz[round])) return false;
      round++;
      syncs = 0;
    }
  }
  return s.wait_disconnect();
}

/// Reaps until `n` Setup messages came in (the first on each QP), each on a receive of kind
/// kCtrlRecv or kDataRecv, which `repost` posts again.
bool wait_setups(Session& s, uint32_t n, std::vector<Setup>* setups, const std::function<bool(Op*)>& repost);

}  // namespace ndnic::ndperf
