// INDEndpoint over a nic::Qp: every request is one work request on the QP's ring; a batch
// (StartRequestBatch .. SubmitRequestBatch) is one ring operation.
#include <endian.h>

#include <cassert>
#include <cstddef>
#include <cstring>

#include "nd_frontend/objects.h"
#include "nic/memory.h"

namespace ndnic::nd {
namespace {

uint32_t op_flags(DWORD flags) {
  uint32_t f = 0;
  if (!(flags & ND_OP_FLAG_SILENT_SUCCESS)) f |= nic::kWrSignaled;
  if (flags & ND_OP_FLAG_READ_FENCE) f |= nic::kWrFence;
  if (flags & ND_OP_FLAG_SEND_AND_SOLICIT_EVENT) f |= nic::kWrSolicited;
  return f;
}

}  // namespace

NdEndpoint::NdEndpoint(NdAdapter* adapter, nic::Qp* qp, NdCq* in, NdCq* out, const EndpointLimits& lim)
    : adapter_(adapter), qp_(qp), in_(in), out_(out), lim_(lim) {
  adapter_->AddRef();
  in_->AddRef();
  out_->AddRef();
}

NdEndpoint::~NdEndpoint() {
  adapter_->dev()->destroy_qp(qp_);
  in_->Release();
  out_->Release();
  adapter_->Release();
}

HRESULT NdEndpoint::Flush() {
  // Every outstanding request completes with ND_CANCELED.
  return qp_->modify(nic::QpState::kError, {}) ? ND_SUCCESS : ND_INVALID_DEVICE_STATE;
}

void NdEndpoint::StartRequestBatch() {
  if (batching_) return;  // the batch open goes on
  batching_ = true;
  nbatch_ = 0;
  batch_slots_ = qp_->open_send_slots();
}

void NdEndpoint::SubmitRequestBatch() {
  if (!batching_) return;
  batching_ = false;
  // Receives first: a request of the batch may be what makes the peer send to them.
  if (nrecv_batch_ != 0 && qp_->post_recv_burst(recv_batch_.data(), unsigned(nrecv_batch_)))
    recvs_posted_ += nrecv_batch_;
  nrecv_batch_ = 0;
  // Room was checked per request; the batch counts as posted like single requests do. The
  // slots left over go back to the ring.
  const size_t n = nbatch_;
  nbatch_ = batch_slots_ = 0;
  if (qp_->commit_send_slots(unsigned(n))) sends_posted_ += n;
  if (n != 0 && adapter_->app_driven()) qp_->send_now();  // as post() does
}

HRESULT NdEndpoint::fill_sgl(nic::Sge* out, const ND_SGE* sgl, SIZE_T n, SIZE_T max_sge, bool* too_long) {
  if (n > max_sge) return ND_DATA_OVERRUN;
  if (n && !sgl) return ND_INVALID_PARAMETER;
  uint64_t total = 0;
  for (SIZE_T i = 0; i < n; i++) {
    const auto* mr = reinterpret_cast<const MrRecord*>(sgl[i].hMr);
    if (!mr) return ND_INVALID_PARAMETER;
    out[i] = {reinterpret_cast<uint64_t>(sgl[i].pAddr), uint32_t(sgl[i].Length), mr->lkey};
    total += sgl[i].Length;
    if (sgl[i].Length > nic::kMaxMessage) *too_long = true;
  }
  if (total > nic::kMaxMessage) *too_long = true;
  return ND_SUCCESS;
}

HRESULT NdEndpoint::post(nic::SendWr& wr, ND_RESULT* r, const ND_SGE* sgl, SIZE_T n, DWORD flags, bool rdma,
                         uint8_t wr_flags) {
  if (!r) return ND_INVALID_PARAMETER;
  // Connected, or failed by itself: then the request completes ND_CANCELED behind the failure
  // (the ND_RESULT page), as it would have had the engine not yet seen the failure.
  const nic::QpState st = qp_->state();
  if (st != nic::QpState::kRts && (st != nic::QpState::kError || qp_->closed())) return ND_CONNECTION_INVALID;
  bool too_long = false;
  if (sgl || n) {
    const HRESULT hr = fill_sgl(wr.sge, sgl, n, lim_.outbound_sge, &too_long);
    if (FAILED(hr)) return hr;
    wr.num_sge = uint8_t(n);
  }
  if (too_long) return ND_BUFFER_OVERFLOW;
  if (rdma && (flags & ~(ND_OP_FLAG_SILENT_SUCCESS | ND_OP_FLAG_READ_FENCE))) return ND_INVALID_PARAMETER;
  // The engine's count is read only when the one last seen says full: it is a line the lcore
  // writes at every completion, and a post that read it each time missed on it.
  if (sends_posted_ + nbatch_ - sends_completed_seen_ >= lim_.outbound_entries) {
    sends_completed_seen_ = qp_->sends_completed();
    if (sends_posted_ + nbatch_ - sends_completed_seen_ >= lim_.outbound_entries) return ND_NO_MORE_ENTRIES;
  }
  wr.wr_id = reinterpret_cast<uint64_t>(r);
  wr.flags = uint8_t(op_flags(flags) | wr_flags);
  r->Status = ND_PENDING;
  if (batching_) {
    // new_wr built it in the batch's next slot; past the slots reserved, the ring is full
    // (the outbound limit keeps a batch inside them, but never write past them).
    if (nbatch_ == batch_slots_) return ND_NO_MORE_ENTRIES;
    assert(&wr == qp_->send_slot(unsigned(nbatch_)));
    nbatch_++;
    return ND_SUCCESS;
  }
  // Run to completion: a request to an idle QP leaves now, not at the next look at a CQ. One
  // behind others waits for that look, which then sends them as one burst (a whole engine
  // iteration per post halved the message rate). Only the requester runs: what arrived waits
  // for that look too.
  const bool idle = adapter_->app_driven() && qp_->send_ring_empty();
  if (!qp_->post_send(wr)) return ND_NO_MORE_ENTRIES;
  sends_posted_++;
  if (idle) qp_->send_now();
  return ND_SUCCESS;
}

// The SGE array (~130 bytes) is left for fill_sgl, which writes as many as are used: zeroing it
// all was a sizeable part of a small Send. What comes before it is copied from a zero
// constant: GCC (at the -march=corei7 DPDK asks for) makes a memset a `rep stosq`, which takes
// ~30 cycles to start on AMD, on every post; the copy is a few stores. The fields after the
// SGEs are left too: only binds and atomics read them, and those set what they read.
nic::SendWr& NdEndpoint::new_wr(nic::WrOpcode op) {
  static constexpr nic::SendWr kEmpty{};
  // The slots the batch was told of are used up: ask for one more (the ring may have more).
  if (batching_ && nbatch_ == batch_slots_) batch_slots_ = qp_->open_send_slots(unsigned(nbatch_) + 1);
  nic::SendWr* wr = batching_ && nbatch_ < batch_slots_ ? qp_->send_slot(unsigned(nbatch_)) : &scratch_;
  std::memcpy(static_cast<void*>(wr), &kEmpty, offsetof(nic::SendWr, sge));
  wr->opcode = op;
  return *wr;
}

HRESULT NdEndpoint::Send(ND_RESULT* r, const ND_SGE* sgl, SIZE_T n, DWORD flags) {
  nic::SendWr& wr = new_wr(nic::WrOpcode::kSend);
  return post(wr, r, sgl, n, flags, false);
}

HRESULT NdEndpoint::SendAndInvalidate(ND_RESULT* r, const ND_SGE* sgl, SIZE_T n, const ND_MW_DESCRIPTOR* mw,
                                      DWORD flags) {
  if (!mw) return ND_INVALID_PARAMETER;
  nic::SendWr& wr = new_wr(nic::WrOpcode::kSendInv);
  wr.invalidate_rkey = be32toh(mw->Token);
  return post(wr, r, sgl, n, flags, false);
}

HRESULT NdEndpoint::rdma(nic::WrOpcode op, ND_RESULT* r, const ND_SGE* sgl, SIZE_T n, const ND_MW_DESCRIPTOR* mw,
                         ULONGLONG offset, DWORD flags) {
  if (!mw) return ND_INVALID_PARAMETER;
  nic::SendWr& wr = new_wr(op);
  wr.remote_addr = be64toh(mw->Base) + offset;  // the descriptor is in network order
  wr.rkey = be32toh(mw->Token);
  return post(wr, r, sgl, n, flags, true);
}

HRESULT NdEndpoint::Read(ND_RESULT* r, const ND_SGE* sgl, SIZE_T n, const ND_MW_DESCRIPTOR* mw,
                         ULONGLONG offset, DWORD flags) {
  return rdma(nic::WrOpcode::kRead, r, sgl, n, mw, offset, flags);
}

HRESULT NdEndpoint::Write(ND_RESULT* r, const ND_SGE* sgl, SIZE_T n, const ND_MW_DESCRIPTOR* mw,
                          ULONGLONG offset, DWORD flags) {
  return rdma(nic::WrOpcode::kWrite, r, sgl, n, mw, offset, flags);
}

HRESULT NdEndpoint::Receive(ND_RESULT* r, const ND_SGE* sgl, SIZE_T n) {
  return receive(reinterpret_cast<uint64_t>(r), r, sgl, n);
}

HRESULT NdEndpoint::ReceiveExt(NDNIC_RESULT* r, const ND_SGE* sgl, SIZE_T n) {
  if (r) {
    r->Flags = 0;
    r->ImmediateData = 0;
    r->InvalidatedToken = 0;
  }
  return receive(reinterpret_cast<uint64_t>(r) | kExtResultTag, r, sgl, n);
}

HRESULT NdEndpoint::receive(uint64_t wr_id, ND_RESULT* r, const ND_SGE* sgl, SIZE_T n) {
  if (!r) return ND_INVALID_PARAMETER;
  // Filled in place, only as far as the SGEs go: a zeroed work request and a copy of it were
  // a third of the time a receive took to post. In a batch, in the batch's next slot: the
  // batch is one ring operation (a server reposting a burst of receives).
  nic::RecvWr scratch;
  nic::RecvWr* slot = &scratch;
  if (batching_) {
    if (nrecv_batch_ == recv_batch_.size()) recv_batch_.emplace_back();
    slot = &recv_batch_[nrecv_batch_];
  }
  nic::RecvWr& wr = *slot;
  bool too_long = false;
  const HRESULT hr = fill_sgl(wr.sge, sgl, n, lim_.inbound_sge, &too_long);
  if (FAILED(hr)) return hr;
  // As for Send: SGEs the adapter cannot take whole (an SGE's length would be cut to 32 bits,
  // the total past the largest message) are refused, never shortened.
  if (too_long) return ND_BUFFER_OVERFLOW;
  if (recvs_posted_ + nrecv_batch_ - recvs_completed_seen_ >= lim_.inbound_entries) {  // as for sends
    recvs_completed_seen_ = qp_->recvs_completed();
    if (recvs_posted_ + nrecv_batch_ - recvs_completed_seen_ >= lim_.inbound_entries) return ND_NO_MORE_ENTRIES;
  }
  wr.wr_id = wr_id;
  wr.num_sge = uint32_t(n);
  if (batching_) {
    // What post_recv would refuse, refused now rather than lost with the batch.
    if (qp_->state() == nic::QpState::kReset) return ND_NO_MORE_ENTRIES;
    r->Status = ND_PENDING;
    nrecv_batch_++;
    return ND_SUCCESS;
  }
  r->Status = ND_PENDING;
  if (!qp_->post_recv(wr)) return ND_NO_MORE_ENTRIES;
  recvs_posted_++;
  return ND_SUCCESS;
}

HRESULT NdEndpoint::Bind(ND_RESULT* r, ND_MR_HANDLE hmr, INDMemoryWindow* pmw, const void* buf, SIZE_T size,
                         DWORD flags, ND_MW_DESCRIPTOR* desc) {
  if (!r || !hmr || !pmw || !buf || !desc) return ND_INVALID_PARAMETER;
  if (!(flags & (ND_OP_FLAG_ALLOW_READ | ND_OP_FLAG_ALLOW_WRITE | NDNIC_OP_FLAG_ALLOW_ATOMIC)))
    return ND_INVALID_PARAMETER;
  const auto* mr = reinterpret_cast<const MrRecord*>(hmr);
  auto* mw = static_cast<NdMemoryWindow*>(pmw);
  const auto* b = static_cast<const uint8_t*>(buf);
  // The buffer must lie inside the registration (a bind outside it is refused here rather
  // than failing later as an access violation).
  if (size == 0 || b < mr->base || size > mr->length || SIZE_T(b - mr->base) > mr->length - size)
    return ND_INVALID_PARAMETER;
  uint32_t access = 0;
  if (flags & ND_OP_FLAG_ALLOW_READ) access |= nic::kAccessRemoteRead;
  if (flags & ND_OP_FLAG_ALLOW_WRITE) access |= nic::kAccessRemoteWrite;
  if (flags & NDNIC_OP_FLAG_ALLOW_ATOMIC) access |= nic::kAccessRemoteAtomic;
  nic::SendWr& wr = new_wr(nic::WrOpcode::kBindMw);
  // Every bind gives the window a new key byte, so a descriptor from an earlier bind is stale;
  // a random one, so a peer cannot predict the next token from the last. The window is named
  // by its handle: should this bind fail or be flushed, the window keeps its key, and the next
  // Bind, Invalidate or Release still finds it. The byte differs from the last Bind posted and
  // from the engine's, which a flushed or failed Bind left older: the engine refuses a bind
  // that would keep its key.
  const uint8_t next =
      nic::random_key_byte(nic::key_byte(mw->rkey()), nic::key_byte(adapter_->dev()->mw_key(mw->handle())));
  wr.bind = {mw->handle(), mr->lkey, reinterpret_cast<uint64_t>(buf), size, access, next};
  const uint32_t new_key = nic::make_key(nic::key_index(mw->handle()), next);
  HRESULT hr = post(wr, r, nullptr, 0, flags & ND_OP_FLAG_SILENT_SUCCESS, false, nic::kWrWindowHandle);
  if (FAILED(hr)) return hr;
  mw->set_rkey(new_key);
  desc->Base = htobe64(reinterpret_cast<uint64_t>(buf));
  desc->Length = htobe64(size);
  desc->Token = htobe32(new_key);
  return ND_SUCCESS;
}

HRESULT NdEndpoint::Invalidate(ND_RESULT* r, INDMemoryWindow* pmw, DWORD flags) {
  if (!pmw) return ND_INVALID_PARAMETER;
  nic::SendWr& wr = new_wr(nic::WrOpcode::kLocalInv);
  wr.invalidate_rkey = static_cast<NdMemoryWindow*>(pmw)->handle();  // whatever it is bound as
  return post(wr, r, nullptr, 0, flags & ND_OP_FLAG_SILENT_SUCCESS, false, nic::kWrWindowHandle);
}

// ---- INDEndpointExt -------------------------------------------------------------------------

HRESULT NdEndpoint::SendWithImmediate(ND_RESULT* r, const ND_SGE* sgl, SIZE_T n, UINT32 imm, DWORD flags) {
  nic::SendWr& wr = new_wr(nic::WrOpcode::kSendImm);
  wr.imm = imm;
  return post(wr, r, sgl, n, flags, false);
}

HRESULT NdEndpoint::WriteWithImmediate(ND_RESULT* r, const ND_SGE* sgl, SIZE_T n, const ND_MW_DESCRIPTOR* mw,
                                       ULONGLONG offset, UINT32 imm, DWORD flags) {
  if (!mw) return ND_INVALID_PARAMETER;
  nic::SendWr& wr = new_wr(nic::WrOpcode::kWriteImm);
  wr.remote_addr = be64toh(mw->Base) + offset;
  wr.rkey = be32toh(mw->Token);
  wr.imm = imm;
  return post(wr, r, sgl, n, flags, true);
}

HRESULT NdEndpoint::atomic(nic::SendWr& wr, ND_RESULT* r, const ND_SGE* result, const ND_MW_DESCRIPTOR* mw,
                           ULONGLONG offset, DWORD flags) {
  // The target must be 8-byte aligned (IBTA o9-21): refused here with a clear error rather than
  // by the peer. A result SGE shorter than the 8-byte original completes with ND_LOCAL_LENGTH.
  if (!mw || !result) return ND_INVALID_PARAMETER;
  wr.remote_addr = be64toh(mw->Base) + offset;
  if (wr.remote_addr % sizeof(uint64_t)) return ND_INVALID_PARAMETER;
  wr.rkey = be32toh(mw->Token);
  return post(wr, r, result, 1, flags, true);
}

HRESULT NdEndpoint::CompareAndSwap(ND_RESULT* r, const ND_SGE* result, const ND_MW_DESCRIPTOR* mw, ULONGLONG offset,
                                   UINT64 compare, UINT64 swap, DWORD flags) {
  nic::SendWr& wr = new_wr(nic::WrOpcode::kCompareSwap);
  wr.compare_add = compare;
  wr.swap = swap;
  return atomic(wr, r, result, mw, offset, flags);
}

HRESULT NdEndpoint::FetchAndAdd(ND_RESULT* r, const ND_SGE* result, const ND_MW_DESCRIPTOR* mw, ULONGLONG offset,
                                UINT64 add, DWORD flags) {
  nic::SendWr& wr = new_wr(nic::WrOpcode::kFetchAdd);
  wr.compare_add = add;
  return atomic(wr, r, result, mw, offset, flags);
}

}  // namespace ndnic::nd
