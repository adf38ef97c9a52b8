// MAD I/O on QP1: what used to sit inside the agent between the thread and the state machine.
#include "cm/mad_io.h"

#include <algorithm>
#include <array>
#include <cstring>

namespace ndnic::cm {
namespace ib = wire::cm;

namespace {

constexpr uint32_t kMad = ib::kMadLen;
constexpr unsigned kPollBurst = 32;

}  // namespace

MadIo::MadIo(nic::Device& dev, const Config& cfg, DropTx drop_tx)
    : dev_(dev), recv_depth_(cfg.recv_depth), send_depth_(cfg.send_depth), path_mtu_(cfg.path_mtu),
      drop_tx_(std::move(drop_tx)) {}

bool MadIo::open(std::string* error) {
  pd_ = dev_.alloc_pd();
  send_cq_ = dev_.create_cq(send_depth_);
  recv_cq_ = dev_.create_cq(recv_depth_);
  buf_.assign(size_t(recv_depth_ + send_depth_) * kMad, 0);
  if (!send_cq_ || !recv_cq_ ||
      !dev_.register_mr(pd_, buf_.data(), buf_.size(), nic::kAccessLocalWrite, &mr_)) {
    *error = "cm agent: no CQs, buffers or eventfd";
    close();
    return false;
  }
  nic::QpCaps caps;
  caps.type = nic::QpType::kUd;
  caps.gsi = true;
  caps.send_cq = send_cq_;
  caps.recv_cq = recv_cq_;
  caps.max_send_wr = send_depth_;
  caps.max_recv_wr = recv_depth_;
  caps.pd = pd_;
  qp1_ = dev_.create_qp(caps);
  nic::QpAttr at;
  at.path_mtu = std::max<uint32_t>(path_mtu_, kMad);
  if (!qp1_ || !qp1_->modify(nic::QpState::kInit, at) || !qp1_->modify(nic::QpState::kRtr, at) ||
      !qp1_->modify(nic::QpState::kRts, at)) {
    *error = "cm agent: cannot create QP1 (one GSI QP per device)";
    close();
    return false;
  }
  for (uint32_t i = 0; i < recv_depth_; i++) post_recv(i);
  for (uint32_t i = 0; i < send_depth_; i++) free_send_.push_back(recv_depth_ + i);
  return true;
}

void MadIo::close() {
  if (qp1_) dev_.destroy_qp(qp1_);
  if (mr_.lkey) dev_.deregister_mr(mr_.lkey);
  if (send_cq_) dev_.destroy_cq(send_cq_);
  if (recv_cq_) dev_.destroy_cq(recv_cq_);
  qp1_ = nullptr;
  mr_ = {};
  send_cq_ = recv_cq_ = nullptr;
  free_send_.clear();
}

void MadIo::arm() {
  recv_cq_->arm(false);
  send_cq_->arm(false);
}

unsigned MadIo::drain_recv(const std::function<void(uint32_t, const ib::CmMad&)>& on_mad) {
  unsigned total = 0;
  nic::Completion c[kPollBurst];
  for (unsigned n; (n = recv_cq_->poll(c, kPollBurst)) > 0;) {
    total += n;
    for (unsigned i = 0; i < n; i++) {
      const uint32_t slot = uint32_t(c[i].wr_id);
      if (c[i].status == nic::WcStatus::kSuccess) {
        counters_.mads_received++;
        ib::CmMad mad;
        if (ib::decode_cm_mad(buf_.data() + size_t(slot) * kMad, c[i].byte_len, &mad) == ib::CmError::kOk)
          on_mad(c[i].src_ipv4, mad);
        else
          counters_.bad_mads++;
      }
      if (c[i].status != nic::WcStatus::kWrFlushed) post_recv(slot);
    }
  }
  return total;
}

unsigned MadIo::drain_send(const std::function<void(ConnId)>& on_error) {
  unsigned total = 0;
  nic::Completion c[kPollBurst];
  for (unsigned n; (n = send_cq_->poll(c, kPollBurst)) > 0;) {
    total += n;
    for (unsigned i = 0; i < n; i++) {
      free_send_.push_back(uint32_t(c[i].wr_id));
      if (c[i].status != nic::WcStatus::kSuccess) on_error(ConnId(c[i].wr_id >> 32));
    }
  }
  return total;
}

void MadIo::post_recv(uint32_t slot) {
  nic::RecvWr wr{};
  wr.wr_id = slot;
  wr.num_sge = 1;
  wr.sge[0] = {reinterpret_cast<uint64_t>(buf_.data() + size_t(slot) * kMad), kMad, mr_.lkey};
  qp1_->post_recv(wr);
}

void MadIo::send(uint32_t dest_ipv4, const uint8_t* mad, ConnId owner) {
  if (drop_tx_) {
    ib::CmMad m;
    if (ib::decode_cm_mad(mad, kMad, &m) == ib::CmError::kOk && drop_tx_(m)) {
      counters_.dropped_tx++;
      return;
    }
  }
  if (free_send_.empty() || !qp1_) {
    counters_.dropped_tx++;  // the peer's retransmission, or ours, covers it
    return;
  }
  const uint32_t slot = free_send_.back();
  uint8_t* at = buf_.data() + size_t(slot) * kMad;
  std::memcpy(at, mad, kMad);
  nic::SendWr wr{};
  wr.wr_id = uint64_t(owner) << 32 | slot;
  wr.opcode = nic::WrOpcode::kSend;
  wr.flags = nic::kWrSignaled;  // every slot comes back through a completion
  wr.num_sge = 1;
  wr.ud = {};
  wr.ud.dest_ipv4 = dest_ipv4;
  wr.ud.remote_qpn = ib::kGsiQpn;
  wr.ud.qkey = ib::kGsiQkey;
  wr.sge[0] = {reinterpret_cast<uint64_t>(at), kMad, mr_.lkey};
  if (!qp1_->post_send(wr)) {
    counters_.dropped_tx++;
    return;
  }
  free_send_.pop_back();
  counters_.mads_sent++;
}

}  // namespace ndnic::cm
