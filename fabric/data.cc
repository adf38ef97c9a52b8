// The data operations of an endpoint: messages (fi_send/recv and their v/msg/data/inject forms)
// and RMA (fi_read/write and theirs), each one engine work request on the endpoint's QP.
#include <endian.h>

#include <cstring>

#include "fabric/enosys.h"
#include "fabric/objects.h"

namespace ndnic::fabric {
namespace {

Ep* as_ep(fid_ep* f) { return reinterpret_cast<Ep*>(f); }

/// A send-side request as libfabric describes it.
struct Request {
  nic::WrOpcode opcode = nic::WrOpcode::kSend;
  const iovec* iov = nullptr;
  void** desc = nullptr;
  size_t count = 0;
  uint64_t remote_addr = 0;
  uint64_t key = 0;
  uint64_t data = 0;
  uint64_t flags = 0;       ///< FI_INJECT, FI_REMOTE_CQ_DATA, FI_FENCE
  bool completion = true;   ///< a success completion is wanted
  void* context = nullptr;
};

/// Completion on success unless the binding is selective and the call did not ask for one.
bool wants_completion(const Ep* ep, uint64_t flags) { return !ep->tx_selective || (flags & FI_COMPLETION); }

uint32_t lkey_of(void* desc) { return desc ? static_cast<Mr*>(desc)->lkey : 0; }

ssize_t post_send(Ep* ep, const Request& r) {
  if (!ep->qp) return -FI_EOPBADSTATE;
  if (r.count > nic::kMaxSge) return -FI_EINVAL;
  size_t total = 0;
  for (size_t i = 0; i < r.count; i++) total += r.iov[i].iov_len;
  if (total > nic::kMaxMessage) return -FI_EMSGSIZE;
  nic::SendWr wr{};
  wr.wr_id = reinterpret_cast<uint64_t>(r.context);
  wr.opcode = r.opcode;
  if (r.flags & FI_REMOTE_CQ_DATA) {
    if (r.opcode == nic::WrOpcode::kSend) wr.opcode = nic::WrOpcode::kSendImm;
    if (r.opcode == nic::WrOpcode::kWrite) wr.opcode = nic::WrOpcode::kWriteImm;
    wr.imm = htobe32(uint32_t(r.data));
  }
  wr.flags = (r.completion ? nic::kWrSignaled : 0) | ((r.flags & FI_FENCE) ? nic::kWrFence : 0);
  wr.remote_addr = r.remote_addr;
  wr.rkey = uint32_t(r.key);
  // Inline: what the application asked to inject, or a small buffer it gave no descriptor for.
  bool no_desc = !r.desc;
  for (size_t i = 0; r.desc && i < r.count; i++) no_desc |= r.iov[i].iov_len && !r.desc[i];
  const bool inject = (r.flags & FI_INJECT) || no_desc;
  if (inject && r.opcode != nic::WrOpcode::kRead) {
    if (total > nic::kMaxInline) return -FI_EINVAL;
    wr.flags |= nic::kWrInline;
    wr.inline_len = uint32_t(total);
    size_t at = 0;
    for (size_t i = 0; i < r.count; i++) {
      std::memcpy(wr.inline_data + at, r.iov[i].iov_base, r.iov[i].iov_len);
      at += r.iov[i].iov_len;
    }
  } else {
    if (no_desc) return -FI_EINVAL;  // a READ lands in registered memory only
    for (size_t i = 0; i < r.count; i++)
      wr.sge[i] = {reinterpret_cast<uint64_t>(r.iov[i].iov_base), uint32_t(r.iov[i].iov_len), lkey_of(r.desc[i])};
    wr.num_sge = uint8_t(r.count);
  }
  const bool posted = ep->qp->post_send(wr);
  ep->rt->progress();  // run to completion: the post moves the engine (and frees ring slots)
  return posted ? 0 : -FI_EAGAIN;
}

ssize_t post_recv(Ep* ep, const iovec* iov, void** desc, size_t count, void* context) {
  if (!ep->qp) return -FI_EOPBADSTATE;
  if (count > nic::kMaxSge) return -FI_EINVAL;
  nic::RecvWr wr{};
  wr.wr_id = reinterpret_cast<uint64_t>(context);
  wr.num_sge = uint32_t(count);
  for (size_t i = 0; i < count; i++) {
    if (iov[i].iov_len && (!desc || !desc[i])) return -FI_EINVAL;  // FI_MR_LOCAL: receives need one
    wr.sge[i] = {reinterpret_cast<uint64_t>(iov[i].iov_base), uint32_t(iov[i].iov_len), desc ? lkey_of(desc[i]) : 0};
  }
  const bool posted = ep->qp->post_recv(wr);
  ep->rt->progress();
  return posted ? 0 : -FI_EAGAIN;
}

/// Any send-side call: the request's fields in libfabric's order.
ssize_t post(fid_ep* f, nic::WrOpcode op, const iovec* iov, void** desc, size_t count, uint64_t addr, uint64_t key,
             uint64_t data, uint64_t flags, bool completion, void* context) {
  Request r;
  r.opcode = op;
  r.iov = iov;
  r.desc = desc;
  r.count = count;
  r.remote_addr = addr;
  r.key = key;
  r.data = data;
  r.flags = flags;
  r.completion = completion;
  r.context = context;
  return post_send(as_ep(f), r);
}

/// A message send (no remote address).
ssize_t send_common(fid_ep* f, const iovec* iov, void** desc, size_t count, uint64_t data, uint64_t flags,
                    bool completion, void* context) {
  return post(f, nic::WrOpcode::kSend, iov, desc, count, 0, 0, data, flags, completion, context);
}

// ---- messages -----------------------------------------------------------------------------

ssize_t msg_recvv(fid_ep* f, const iovec* iov, void** desc, size_t count, fi_addr_t, void* context) {
  return post_recv(as_ep(f), iov, desc, count, context);
}

ssize_t msg_recv(fid_ep* f, void* buf, size_t len, void* desc, fi_addr_t src, void* context) {
  const iovec iov{buf, len};
  return msg_recvv(f, &iov, &desc, 1, src, context);
}

ssize_t msg_recvmsg(fid_ep* f, const fi_msg* m, uint64_t) {
  return post_recv(as_ep(f), m->msg_iov, m->desc, m->iov_count, m->context);
}

ssize_t msg_sendv(fid_ep* f, const iovec* iov, void** desc, size_t count, fi_addr_t, void* context) {
  return send_common(f, iov, desc, count, 0, 0, wants_completion(as_ep(f), 0), context);
}

ssize_t msg_send(fid_ep* f, const void* buf, size_t len, void* desc, fi_addr_t dest, void* context) {
  const iovec iov{const_cast<void*>(buf), len};
  return msg_sendv(f, &iov, &desc, 1, dest, context);
}

ssize_t msg_sendmsg(fid_ep* f, const fi_msg* m, uint64_t flags) {
  return send_common(f, m->msg_iov, m->desc, m->iov_count, m->data, flags, wants_completion(as_ep(f), flags),
                     m->context);
}

ssize_t msg_senddata(fid_ep* f, const void* buf, size_t len, void* desc, uint64_t data, fi_addr_t, void* context) {
  const iovec iov{const_cast<void*>(buf), len};
  return send_common(f, &iov, &desc, 1, data, FI_REMOTE_CQ_DATA, wants_completion(as_ep(f), 0), context);
}

ssize_t msg_inject(fid_ep* f, const void* buf, size_t len, fi_addr_t) {
  const iovec iov{const_cast<void*>(buf), len};
  return send_common(f, &iov, nullptr, 1, 0, FI_INJECT, false, nullptr);
}

ssize_t msg_injectdata(fid_ep* f, const void* buf, size_t len, uint64_t data, fi_addr_t) {
  const iovec iov{const_cast<void*>(buf), len};
  return send_common(f, &iov, nullptr, 1, data, FI_INJECT | FI_REMOTE_CQ_DATA, false, nullptr);
}

// ---- RMA ----------------------------------------------------------------------------------

ssize_t rma_readv(fid_ep* f, const iovec* iov, void** desc, size_t count, fi_addr_t, uint64_t addr, uint64_t key,
                  void* context) {
  return post(f, nic::WrOpcode::kRead, iov, desc, count, addr, key, 0, 0, wants_completion(as_ep(f), 0),
                    context);
}

ssize_t rma_read(fid_ep* f, void* buf, size_t len, void* desc, fi_addr_t src, uint64_t addr, uint64_t key,
                 void* context) {
  const iovec iov{buf, len};
  return rma_readv(f, &iov, &desc, 1, src, addr, key, context);
}

/// The one remote range of a *msg call (rma_iov_limit is 1).
bool one_range(const fi_msg_rma* m) { return m->rma_iov_count == 1 && m->rma_iov; }

ssize_t rma_readmsg(fid_ep* f, const fi_msg_rma* m, uint64_t flags) {
  if (!one_range(m)) return -FI_EINVAL;
  return post(f, nic::WrOpcode::kRead, m->msg_iov, m->desc, m->iov_count, m->rma_iov[0].addr,
                    m->rma_iov[0].key, 0, flags, wants_completion(as_ep(f), flags), m->context);
}

ssize_t rma_writev(fid_ep* f, const iovec* iov, void** desc, size_t count, fi_addr_t, uint64_t addr, uint64_t key,
                   void* context) {
  return post(f, nic::WrOpcode::kWrite, iov, desc, count, addr, key, 0, 0, wants_completion(as_ep(f), 0),
                    context);
}

ssize_t rma_write(fid_ep* f, const void* buf, size_t len, void* desc, fi_addr_t dest, uint64_t addr, uint64_t key,
                  void* context) {
  const iovec iov{const_cast<void*>(buf), len};
  return rma_writev(f, &iov, &desc, 1, dest, addr, key, context);
}

ssize_t rma_writemsg(fid_ep* f, const fi_msg_rma* m, uint64_t flags) {
  if (!one_range(m)) return -FI_EINVAL;
  return post(f, nic::WrOpcode::kWrite, m->msg_iov, m->desc, m->iov_count, m->rma_iov[0].addr,
                    m->rma_iov[0].key, m->data, flags, wants_completion(as_ep(f), flags), m->context);
}

ssize_t rma_writedata(fid_ep* f, const void* buf, size_t len, void* desc, uint64_t data, fi_addr_t, uint64_t addr,
                      uint64_t key, void* context) {
  const iovec iov{const_cast<void*>(buf), len};
  return post(f, nic::WrOpcode::kWrite, &iov, &desc, 1, addr, key, data, FI_REMOTE_CQ_DATA,
                    wants_completion(as_ep(f), 0), context);
}

ssize_t rma_inject(fid_ep* f, const void* buf, size_t len, fi_addr_t, uint64_t addr, uint64_t key) {
  const iovec iov{const_cast<void*>(buf), len};
  return post(f, nic::WrOpcode::kWrite, &iov, nullptr, 1, addr, key, 0, FI_INJECT, false, nullptr);
}

ssize_t rma_injectdata(fid_ep* f, const void* buf, size_t len, uint64_t data, fi_addr_t, uint64_t addr,
                       uint64_t key) {
  const iovec iov{const_cast<void*>(buf), len};
  return post(f, nic::WrOpcode::kWrite, &iov, nullptr, 1, addr, key, data, FI_INJECT | FI_REMOTE_CQ_DATA,
                    false, nullptr);
}

}  // namespace

fi_ops_msg g_msg_ops{sizeof(fi_ops_msg), msg_recv,    msg_recvv,   msg_recvmsg,   msg_send,
                     msg_sendv,          msg_sendmsg, msg_inject,  msg_senddata,  msg_injectdata};
fi_ops_rma g_rma_ops{sizeof(fi_ops_rma), rma_read,     rma_readv,      rma_readmsg,   rma_write,
                     rma_writev,         rma_writemsg, rma_inject,     rma_writedata, rma_injectdata};

}  // namespace ndnic::fabric
