#include "pmd_glue/capture.h"

#include <cstring>

#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>

namespace ndnic::glue {
namespace {

// A frame whose IPv4 checksum the port will compute leaves with a zero checksum field in the
// mbuf; the capture shows the header as it goes on the wire.
void fill_offloaded_checksum(const rte_mbuf* m, uint8_t* frame, uint32_t len) {
  if (!(m->ol_flags & RTE_MBUF_F_TX_IP_CKSUM) || len < m->l2_len + sizeof(rte_ipv4_hdr)) return;
  auto* ip = reinterpret_cast<rte_ipv4_hdr*>(frame + m->l2_len);
  ip->hdr_checksum = 0;
  ip->hdr_checksum = rte_ipv4_cksum(ip);
}

void copy_frame(const rte_mbuf* m, std::vector<uint8_t>* out) {
  out->resize(m->pkt_len);
  const void* data = rte_pktmbuf_read(m, 0, m->pkt_len, out->data());
  if (data != out->data()) std::memcpy(out->data(), data, m->pkt_len);
  fill_offloaded_checksum(m, out->data(), m->pkt_len);
}

}  // namespace

bool Capture::open(const std::string& path) { return writer_.open(path); }

bool Capture::append(const rte_mbuf* m, std::vector<uint8_t>* scratch) {
  const uint8_t* data = rte_pktmbuf_mtod(m, const uint8_t*);
  if (m->data_len < m->pkt_len) {  // chained: gather the segments first
    scratch->resize(m->pkt_len);
    data = static_cast<const uint8_t*>(rte_pktmbuf_read(m, 0, m->pkt_len, scratch->data()));
  }
  return data != nullptr && writer_.write(data, m->pkt_len);
}

bool Capture::write(rte_mbuf* const* pkts, uint16_t n) {
  bool ok = true;
  rte_spinlock_lock(&lock_);
  for (uint16_t i = 0; i < n; i++) ok &= append(pkts[i], &rx_scratch_);
  writer_.flush();
  rte_spinlock_unlock(&lock_);
  return ok;
}

void Capture::stage(rte_mbuf* const* pkts, uint16_t n) {
  rte_spinlock_lock(&lock_);
  if (staged_.size() < n) staged_.resize(n);
  for (uint16_t i = 0; i < n; i++) copy_frame(pkts[i], &staged_[i]);
  staged_n_ = n;
}

bool Capture::commit(uint16_t accepted) {
  bool ok = true;
  for (uint16_t i = 0; i < accepted && i < staged_n_; i++)
    ok &= writer_.write(staged_[i].data(), uint32_t(staged_[i].size()));
  writer_.flush();
  staged_n_ = 0;
  rte_spinlock_unlock(&lock_);
  return ok;
}

}  // namespace ndnic::glue
