#include "tools/ndperf/nd/exchange.h"

#include <algorithm>
#include <cstring>

namespace ndnic::ndperf {

void Control::init(uint32_t qp, uint32_t n, bool extended) {
  recvs.assign(n, Op{});
  for (uint32_t i = 0; i < n; i++) {
    recvs[i].kind = OpKind::kCtrlRecv;
    recvs[i].extended = extended;
    recvs[i].qp = uint16_t(qp);
    recvs[i].slot = i;
  }
  send = Op{};
  send.kind = OpKind::kCtrlSend;
  send.qp = uint16_t(qp);
}

bool post_ctrl_recv(Session& s, Op* op) {
  const size_t off = s.control_in(op->qp, op->slot);
  op->addr = s.buf() + off;
  const ND_SGE sge = s.sge(off, Layout::kSlot);
  if (op->extended) {
    INDEndpointExt* x = s.ext(op->qp);
    return x && s.posted(x->ReceiveExt(op, &sge, 1), "ReceiveExt (control)");
  }
  return s.posted(s.ep(op->qp)->Receive(op, &sge, 1), "Receive (control)");
}

bool post_ctrl_recvs(Session& s, Control& c) {
  for (Op& op : c.recvs)
    if (!post_ctrl_recv(s, &op)) return false;
  return true;
}

size_t data_recv_len(const Plan& p) { return std::max<size_t>(p.last_size, Layout::kSlot); }

bool post_data_recv(Session& s, Op* op, size_t len) {
  op->kind = OpKind::kDataRecv;
  op->addr = s.buf() + s.recv_area();
  const ND_SGE sge = s.sge(s.recv_area(), len);
  return s.posted(s.ep(op->qp)->Receive(op, &sge, 1), "Receive");
}

bool repost(Session& s, const Plan& p, Op* op) {
  return op->kind == OpKind::kDataRecv ? post_data_recv(s, op, data_recv_len(p)) : post_ctrl_recv(s, op);
}

bool send_ctrl(Session& s, Control& c, uint32_t slot, const void* data, size_t len) {
  const size_t off = s.control_out(c.send.qp, slot);
  std::memcpy(s.buf() + off, data, len);
  const ND_SGE sge = s.sge(off, len);
  return s.posted(s.ep(c.send.qp)->Send(&c.send, &sge, 1, ND_OP_FLAG_SILENT_SUCCESS), "Send (control)");
}

bool send_empty(Session& s, Control& c) {
  return s.posted(s.ep(c.send.qp)->Send(&c.send, nullptr, 0, ND_OP_FLAG_SILENT_SUCCESS), "Send (SYNC)");
}

bool bind_wait(Session& s, uint32_t qp, INDMemoryWindow* mw, size_t off, size_t len, DWORD flags,
               ND_MW_DESCRIPTOR* desc) {
  Op bind;
  bind.kind = OpKind::kBind;
  bind.qp = uint16_t(qp);
  if (!s.posted(s.ep(qp)->Bind(&bind, s.mr(), mw, s.buf() + off, len, flags, desc), "Bind")) return false;
  ND_RESULT* out[1];
  if (s.reap(out, 1) == 0) return false;
  if (out[0] != &bind) return s.fail("an unexpected result while binding a window");
  return s.succeeded(&bind, "Bind");
}

bool accept_all(Session& s, const Plan& first, const Depths& d, const std::function<bool(uint32_t)>& post) {
  if (first.qp != 0) return s.fail("the client's first connection is for QP " + std::to_string(first.qp));
  if (!s.accept(d, post)) return false;
  for (uint32_t i = 1; i < test_qps(first); i++) {
    Plan p;
    if (!s.get_request(&p)) return false;
    if (p.test != first.test || p.qp != i || p.index != first.index) {
      s.reject();
      return s.fail("the client's connection for QP " + std::to_string(i) + " does not belong to this test");
    }
    if (!s.accept(d, post)) return false;
  }
  return true;
}

bool connect_all(Session& s, const ClientEnv& env, const Plan& plan, const Depths& d,
                 const std::function<bool(uint32_t)>& post) {
  for (uint32_t i = 0; i < test_qps(plan); i++) {
    Plan p = plan;
    p.qp = uint16_t(i);
    // Only the first connection may find the server still starting (or between two tests).
    if (!s.connect(env.server_ipv4, env.port, p, d, post, i == 0 ? env.retry : std::chrono::seconds(0)))
      return false;
  }
  return true;
}

bool wait_setups(Session& s, uint32_t n, std::vector<Setup>* setups, const std::function<bool(Op*)>& repost) {
  setups->assign(n, Setup{});
  std::vector<bool> got(n, false);
  for (uint32_t have = 0; have < n;) {
    // One at a time: what comes after a setup (the peer may start right away) is the
    // caller's to handle.
    ND_RESULT* out[1];
    const size_t k = s.reap(out, 1);
    if (k == 0) return false;
    for (size_t i = 0; i < k; i++) {
      Op* op = op_of(out[i]);
      if (op->kind != OpKind::kCtrlRecv && op->kind != OpKind::kDataRecv)
        return s.succeeded(op, "a request before the test began") && s.fail("an unexpected result before the test");
      if (!s.succeeded(op, "receiving the peer's setup")) return false;
      const std::optional<Setup> setup = decode_setup(op->addr, op->BytesTransferred);
      if (!setup || op->qp >= n || got[op->qp]) return s.fail("the peer's first message is not its setup");
      (*setups)[op->qp] = *setup;
      got[op->qp] = true;
      have++;
      if (!repost(op)) return false;
    }
  }
  return true;
}

}  // namespace ndnic::ndperf
