#include "tools/raw_qp/session.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

namespace ndnic::raw_qp {

uint64_t now_ns() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch()).count());
}

RcSession::~RcSession() {
  if (qp_) port_.dev().destroy_qp(qp_);
  if (send_cq_) port_.dev().destroy_cq(send_cq_);
  if (recv_cq_) port_.dev().destroy_cq(recv_cq_);
  if (mr_.lkey) port_.dev().deregister_mr(mr_.lkey);
  port_.close();
  std::free(buf_);
}

bool RcSession::fail(Step s) const {
  voice_.say(Failure{s});
  return false;
}

bool RcSession::open_port(const std::string& device, uint32_t ipv4, const std::string& capture, uint32_t mtu) {
  if (!mtu_fits(mtu)) {
    std::fprintf(stderr, "%s: path MTU %u does not fit the port's %u-byte Ethernet MTU\n", voice_.prog.c_str(), mtu,
                 kEthMtu);
    return false;
  }
  if (!port_.open(device, ipv4, capture)) {
    std::fprintf(stderr, "%s: %s\n", voice_.prog.c_str(), port_.error().c_str());
    return false;
  }
  return true;
}

bool RcSession::create(const Shape& s) {
  constexpr uint64_t kPage = 4096;
  buf_ = static_cast<uint8_t*>(std::aligned_alloc(kPage, (s.bytes + kPage - 1) / kPage * kPage));
  if (!buf_) return fail(Step::kNoMemory);
  const uint32_t pd = port_.dev().alloc_pd();
  if (!port_.dev().register_mr(pd, buf_, s.bytes, s.access, &mr_)) return fail(Step::kRegister);
  send_cq_ = port_.dev().create_cq(s.send_cq);
  if (s.recv_cq) recv_cq_ = port_.dev().create_cq(s.recv_cq);
  if (!send_cq_ || (s.recv_cq && !recv_cq_)) return fail(Step::kCq);
  nic::QpCaps caps;
  caps.send_cq = send_cq_;
  caps.recv_cq = &recv_cq();
  caps.pd = pd;
  caps.max_send_wr = s.max_send_wr;
  caps.max_recv_wr = s.max_recv_wr;
  caps.max_send_sge = caps.max_recv_sge = 1;
  qp_ = port_.dev().create_qp(caps);
  if (!qp_ || !qp_->modify(nic::QpState::kInit, {})) return fail(Step::kQp);
  std::random_device rd;
  psn_ = rd() & 0xffffff;
  return true;
}

nic::QpAttr rdma_core_attr(uint32_t mtu, uint8_t max_rd_atomic, uint8_t max_dest_rd_atomic) {
  return nic::QpAttr{.path_mtu = mtu,
                     .retry_cnt = 7,
                     .rnr_retry = 7,
                     .min_rnr_timer = 12,
                     .timeout = 14,
                     .max_rd_atomic = max_rd_atomic,
                     .max_dest_rd_atomic = max_dest_rd_atomic};
}

bool RcSession::connect(const Remote& r, nic::QpAttr a) {
  const uint32_t ip = gid_ipv4(r.gid).value_or(r.tcp_ipv4);
  a.remote_qpn = r.qpn;
  a.rq_psn = r.psn;
  a.sq_psn = psn_;
  a.dest_ipv4 = ip;
  if (!port_.resolve(ip, a.dest_mac)) {
    std::fprintf(stderr, "%s: no ARP reply from %u.%u.%u.%u%s\n", voice_.prog.c_str(), ip >> 24, (ip >> 16) & 255,
                 (ip >> 8) & 255, ip & 255, voice_.arp_hint.c_str());
    return false;
  }
  if (!qp_->modify(nic::QpState::kRtr, a)) return fail(Step::kRtr);
  if (!qp_->modify(nic::QpState::kRts, a)) return fail(Step::kRts);
  return true;
}

bool RcSession::post_recv(uint64_t wr_id, uint64_t addr, uint32_t len) {
  nic::RecvWr wr{};
  wr.wr_id = wr_id;
  wr.num_sge = len ? 1 : 0;
  wr.sge[0] = {addr, len, mr_.lkey};
  if (qp_->post_recv(wr)) return true;
  voice_.say(Failure{Step::kPostRecv, wr_id});
  return false;
}

bool RcSession::post(const Request& r) {
  nic::SendWr wr{};
  wr.wr_id = r.wr_id;
  wr.opcode = r.op;
  wr.flags = nic::kWrSignaled;
  if (r.inline_small && r.len <= nic::kMaxInline) {
    wr.flags |= nic::kWrInline;
    wr.inline_len = r.len;
    std::memcpy(wr.inline_data, reinterpret_cast<const void*>(r.addr), r.len);
  } else {
    wr.num_sge = 1;
    wr.sge[0] = {r.addr, r.len, mr_.lkey};
  }
  wr.remote_addr = r.remote_addr;
  wr.rkey = r.rkey;
  if (qp_->post_send(wr)) return true;
  voice_.say(Failure{Step::kPostSend, r.wr_id});
  return false;
}

bool RcSession::check(const nic::Completion& c, const char* what) const {
  if (c.status == nic::WcStatus::kSuccess) return true;
  voice_.say(Failure{Step::kStatus, 0, &c, what});
  return false;
}

bool RcSession::stalled(uint64_t last_progress_ns, const char* what) const {
  if (now_ns() - last_progress_ns < uint64_t(std::chrono::nanoseconds(voice_.stall).count())) return false;
  voice_.say(Failure{Step::kStall, 0, nullptr, what});
  return true;
}

std::string RcSession::counters() const {
  if (!qp_) return "no QP";
  const nic::Qp::Counters c = qp_->counters();
  char b[256];
  std::snprintf(b, sizeof b,
                "tx %" PRIu64 " rx %" PRIu64 " packets, retransmits %" PRIu64 ", timeouts %" PRIu64
                ", duplicates %" PRIu64 ", out of sequence %" PRIu64 ", rnr naks sent %" PRIu64,
                c.tx_packets, c.rx_packets, c.retransmits, c.timeouts, c.duplicates, c.out_of_sequence,
                c.rnr_naks_sent);
  return b;
}

}  // namespace ndnic::raw_qp
