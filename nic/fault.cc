// One burst through the fault switch, in two passes so the burst never needs a second array:
// pass 1 compacts the burst in place (drops, corruption, frames held back), then duplicates
// and released frames are appended while there is room under the cap.
#include <rte_mbuf.h>

#include <algorithm>
#include <array>

#include "nic/fault.h"

namespace ndnic::nic {
namespace {

constexpr uint32_t kEthHeader = 14;
constexpr uint16_t kEtherIpv4 = 0x0800;
constexpr uint16_t kEtherIpv6 = 0x86dd;
constexpr uint16_t kEtherVlan = 0x8100;
constexpr uint16_t kEtherQinQ = 0x88a8;
constexpr uint32_t kVlanTag = 4;
constexpr uint32_t kIpv6Header = 40;
constexpr uint8_t kIpProtoUdp = 17;
constexpr uint32_t kUdpHeader = 8;
constexpr uint32_t kBthResv8a = 4;          ///< BTH byte the ICRC masks (FECN/BECN and reserved bits)
/// Enough of the frame to find every masked byte: Ethernet + 2 tags + IPv6 + UDP + BTH.
constexpr uint32_t kParseBytes = kEthHeader + 2 * kVlanTag + kIpv6Header + kUdpHeader + 12;
constexpr size_t kMaxMasked = 8;
/// Held frames the switch makes room for up front: a few bursts' worth at high reorder rates.
constexpr size_t kHeldReserve = 256;

/// Where a flipped byte would go unnoticed, and where flipping may start.
struct CorruptLayout {
  uint32_t first = kEthHeader;              ///< first byte after the Ethernet header and tags
  std::array<uint32_t, kMaxMasked> masked;  ///< ascending frame offsets to leave alone
  size_t num_masked = 0;

  void mask(uint32_t off, uint32_t frame_len) {
    if (off >= first && off < frame_len && num_masked < kMaxMasked) masked[num_masked++] = off;
  }
};

uint16_t be16(const uint8_t* p) { return uint16_t(p[0] << 8 | p[1]); }

// The ICRC covers the IP, UDP and IB headers except fields routers may rewrite (IPv4 TOS, TTL
// and checksum, IPv6 class/flow label and hop limit, the UDP checksum, BTH resv8a). A flip
// there could survive every check (the port recomputes an IPv4 checksum it offloads), so
// corruption avoids them and lands where the ICRC or the IP checksum catches it.
CorruptLayout corrupt_layout(const rte_mbuf* m) {
  CorruptLayout l;
  const uint32_t len = rte_pktmbuf_pkt_len(m);
  uint8_t buf[kParseBytes] = {};
  const uint32_t have = std::min(len, kParseBytes);
  const auto* p = static_cast<const uint8_t*>(rte_pktmbuf_read(m, 0, have, buf));
  if (p == nullptr || have < kEthHeader) return l;
  uint16_t type = be16(p + 12);
  while ((type == kEtherVlan || type == kEtherQinQ) && l.first + kVlanTag <= have) {
    type = be16(p + l.first + 2);
    l.first += kVlanTag;
  }
  const uint32_t l3 = l.first;
  uint32_t l4 = 0;
  if (type == kEtherIpv4 && l3 + 20 <= have) {
    for (uint32_t off : {1u, 8u, 10u, 11u}) l.mask(l3 + off, len);
    if (p[l3 + 9] == kIpProtoUdp) l4 = l3 + (p[l3] & 0xfu) * 4;
  } else if (type == kEtherIpv6 && l3 + kIpv6Header <= have) {
    // Bytes 0-3 mix the version with the masked class and flow label: leave all four.
    for (uint32_t off : {0u, 1u, 2u, 3u, 7u}) l.mask(l3 + off, len);
    if (p[l3 + 6] == kIpProtoUdp) l4 = l3 + kIpv6Header;
  }
  if (l4 != 0) {
    l.mask(l4 + 6, len);
    l.mask(l4 + 7, len);
    l.mask(l4 + kUdpHeader + kBthResv8a, len);
  }
  std::sort(l.masked.begin(), l.masked.begin() + l.num_masked);
  return l;
}

bool is_shared(const rte_mbuf* m) {
  for (const rte_mbuf* s = m; s != nullptr; s = s->next)
    if (rte_mbuf_refcnt_read(s) > 1 || !RTE_MBUF_DIRECT(s)) return true;
  return false;
}

uint8_t* byte_at(rte_mbuf* m, uint32_t off) {
  for (rte_mbuf* s = m; s != nullptr; s = s->next) {
    if (off < s->data_len) return rte_pktmbuf_mtod_offset(s, uint8_t*, off);
    off -= s->data_len;
  }
  return nullptr;
}

}  // namespace

FaultSwitch::FaultSwitch(const FaultRates& rates, uint64_t seed) : rates_(rates), rng_(seed) {
  if (rates_.reorder > 0) held_.reserve(kHeldReserve);  // no allocation on the packet path
}

FaultSwitch::~FaultSwitch() {
  for (const Held& h : held_) rte_pktmbuf_free(h.m);
}

size_t FaultSwitch::held() const { return held_.size(); }

uint16_t FaultSwitch::apply(rte_mbuf** pkts, uint16_t n, uint16_t cap, rte_mempool* pool) {
  if (!rates_.any() && held_.empty()) return n;
  auto hit = [this](double rate) { return rate > 0 && unit_(rng_) < rate; };
  counters_.frames += n;
  // Frames held in earlier bursts move one burst closer to release; this burst's holds don't.
  for (Held& h : held_)
    if (h.bursts_left > 0) h.bursts_left--;

  uint16_t out = 0;
  for (uint16_t i = 0; i < n; i++) {
    rte_mbuf* m = pkts[i];
    if (hit(rates_.drop)) {
      rte_pktmbuf_free(m);
      counters_.dropped++;
      continue;
    }
    if (hit(rates_.corrupt)) {
      const uint32_t len = rte_pktmbuf_pkt_len(m);
      const CorruptLayout l = corrupt_layout(m);
      const uint32_t candidates = len > l.first ? len - l.first - uint32_t(l.num_masked) : 0;
      const uint32_t pick = uint32_t(rng_() % std::max(candidates, 1u));
      const auto flip = uint8_t(1 + rng_() % 255);  // never 0: the byte must change
      if (candidates > 0 && is_shared(m) && pool != nullptr) {
        // Another holder (a retransmission queue, a capture) sees the original bytes.
        if (rte_mbuf* copy = rte_pktmbuf_copy(m, pool, 0, UINT32_MAX)) {
          rte_pktmbuf_free(m);
          m = copy;
        }
      }
      if (candidates > 0 && !is_shared(m)) {
        uint32_t off = l.first + pick;
        for (size_t k = 0; k < l.num_masked && l.masked[k] <= off; k++) off++;
        *byte_at(m, off) ^= flip;
        counters_.corrupted++;
      }
    }
    if (hit(rates_.reorder)) {
      const auto hold = unsigned(1 + rng_() % kMaxHoldBursts);
      held_.push_back({m, hold});
      counters_.reordered++;
      continue;
    }
    pkts[out++] = m;
  }

  const uint16_t kept = out;
  for (uint16_t i = 0; i < kept; i++) {
    if (!hit(rates_.duplicate) || out >= cap || pool == nullptr) continue;
    if (rte_mbuf* copy = rte_pktmbuf_copy(pkts[i], pool, 0, UINT32_MAX)) {
      pkts[out++] = copy;
      counters_.duplicated++;
    }
  }

  // Released in the order they were held; those that find no room wait for a later burst.
  size_t still = 0;
  for (size_t i = 0; i < held_.size(); i++) {
    if (held_[i].bursts_left == 0 && out < cap)
      pkts[out++] = held_[i].m;
    else
      held_[still++] = held_[i];
  }
  held_.resize(still);
  return out;
}

}  // namespace ndnic::nic
