#include <algorithm>
#include <cctype>

#include <rte_arp.h>
#include <rte_bitops.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "pmd_glue/arp.h"
#include "pmd_glue/capture.h"
#include "pmd_glue/classify.h"
#include "pmd_glue/neighbour.h"
#include "pmd_glue/ring_pair.h"
#include "ndnic/port.h"
#include "pmd_glue/rss.h"

namespace ndnic::glue {
namespace {

constexpr uint32_t kNeighbours = 256;
constexpr uint32_t kInFlightMbufs = 4096;     ///< held by the transport between RX and TX
constexpr uint16_t kPollBurst = 32;
/// How far ahead of the frame being sorted its successors' lines are asked for: the mbuf
/// header twice as far as the frame's first two lines (whose address the header holds).
constexpr uint16_t kRxPrefetch = 4;
constexpr unsigned kIdleSleepUs = 100;        ///< resolve_wait yields the core to the kernel side

/// A frame's first two lines at `data`: Ethernet to BTH, the extension headers and the
/// payload's start.
inline void prefetch_at(const char* data) {
  rte_prefetch0(data);
  rte_prefetch0(data + RTE_CACHE_LINE_SIZE);
}

/// The frame's first two lines, found through data_off.
inline void prefetch_headers(const rte_mbuf* m) { prefetch_at(rte_pktmbuf_mtod(m, const char*)); }

/// Both lines of the mbuf's header: the second holds next and pool, which freeing it reads.
inline void prefetch_mbuf(const rte_mbuf* m) {
  rte_prefetch0(m);
  rte_prefetch0(reinterpret_cast<const char*>(m) + RTE_CACHE_LINE_SIZE);
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

uint64_t ms_to_tsc(uint32_t ms) { return rte_get_tsc_hz() / 1000 * ms; }

// The port fills in the header checksum; the mbuf guide asks for the field zeroed first.
void request_ip_checksum(rte_mbuf* m) {
  if (m->data_len < sizeof(rte_ether_hdr) + sizeof(rte_ipv4_hdr)) return;
  auto* eth = rte_pktmbuf_mtod(m, rte_ether_hdr*);
  if (eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4)) return;
  auto* ip = reinterpret_cast<rte_ipv4_hdr*>(eth + 1);
  m->l2_len = sizeof(rte_ether_hdr);
  m->l3_len = rte_ipv4_hdr_len(ip);
  m->ol_flags |= RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM;
  ip->hdr_checksum = 0;
}

}  // namespace

Port::Port() = default;
Port::~Port() { close(); }

bool Port::find_device() {
  const std::string& dev = config_.device;
  if (all_digits(dev)) {
    port_id_ = uint16_t(std::stoul(dev));
    if (!rte_eth_dev_is_valid_port(port_id_)) {
      error_ = "no ethdev port " + dev;
      return false;
    }
    return true;
  }
  const std::string name = dev.substr(0, dev.find(','));
  if (rte_eth_dev_get_port_by_name(name.c_str(), &port_id_) == 0) return true;
  // Not probed yet: a vdev spec, or a PCI device EAL was not told about.
  const int rc = rte_dev_probe(dev.c_str());
  if (rc != 0) {
    error_ = "cannot create device '" + dev + "': " + rte_strerror(-rc);
    return false;
  }
  created_vdev_ = true;
  vdev_name_ = name;
  if (rte_eth_dev_get_port_by_name(name.c_str(), &port_id_) != 0) {
    error_ = "device '" + name + "' has no ethdev port";
    return false;
  }
  return true;
}

bool Port::configure() {
  rte_eth_dev_info info;
  int rc = rte_eth_dev_info_get(port_id_, &info);
  if (rc != 0) {
    error_ = std::string("rte_eth_dev_info_get: ") + rte_strerror(-rc);
    return false;
  }
  driver_ = info.driver_name;
  if (config_.rx_queues > info.max_rx_queues || config_.tx_queues > info.max_tx_queues) {
    error_ = driver_ + " has at most " + std::to_string(info.max_rx_queues) + " RX and " +
             std::to_string(info.max_tx_queues) + " TX queues";
    return false;
  }

  rte_eth_conf conf{};
  conf.rxmode.mtu = config_.mtu;
  tx_ip_cksum_ = info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
  rx_ip_cksum_ = info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_IPV4_CKSUM;
  if (tx_ip_cksum_) conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
  if (rx_ip_cksum_) conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_IPV4_CKSUM;
  // Several RX queues: spread RoCE flows by their UDP 4-tuple with a key we know, so the
  // engine can compute each QP's queue (rss_queue) and place the QP on the shard polling it.
  const bool rss = config_.rx_queues > 1 && (info.flow_type_rss_offloads & RTE_ETH_RSS_NONFRAG_IPV4_UDP) &&
                   info.hash_key_size == kRssKeyLen && info.reta_size > 0;
  if (rss) {
    conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
    conf.rx_adv_conf.rss_conf.rss_key = const_cast<uint8_t*>(kRssKey);
    conf.rx_adv_conf.rss_conf.rss_key_len = kRssKeyLen;
    conf.rx_adv_conf.rss_conf.rss_hf = RTE_ETH_RSS_NONFRAG_IPV4_UDP;
  }
  // The transport may chain a header mbuf to payload mbufs.
  conf.txmode.offloads |= info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
  zero_copy_tx_ = (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) && driver_ == "net_ring";
  if (driver_ == "net_ring") {
    char name[RTE_ETH_NAME_MAX_LEN];
    if (rte_eth_dev_get_name_by_port(port_id_, name) == 0) tx_rings_ = ring_pair_tx_rings(name, config_.tx_queues);
  }
  rc = rte_eth_dev_configure(port_id_, config_.rx_queues, config_.tx_queues, &conf);
  if (rc != 0) {
    error_ = std::string("rte_eth_dev_configure: ") + rte_strerror(-rc);
    return false;
  }
  uint16_t rx_desc = config_.rx_ring_size;
  uint16_t tx_desc = config_.tx_ring_size;
  rte_eth_dev_adjust_nb_rx_tx_desc(port_id_, &rx_desc, &tx_desc);

  int socket = rte_eth_dev_socket_id(port_id_);
  if (socket < 0) socket = SOCKET_ID_ANY;
  uint32_t mbufs = config_.mbufs;
  if (mbufs == 0) {
    mbufs = uint32_t(config_.rx_queues) * rx_desc + uint32_t(config_.tx_queues) * tx_desc +
            rte_lcore_count() * config_.mbuf_cache + kInFlightMbufs;
    // A ring-backed mempool of 2^k - 1 objects uses its whole ring.
    mbufs = rte_align32pow2(mbufs + 1) - 1;
  }
  const std::string pool_name = "ndnic_mbuf_" + std::to_string(port_id_);
  pool_ = rte_pktmbuf_pool_create(pool_name.c_str(), mbufs, config_.mbuf_cache, 0,
                                  config_.mbuf_data_room, socket);
  if (pool_ == nullptr) {
    error_ = "mempool of " + std::to_string(mbufs) + " mbufs: " + rte_strerror(rte_errno);
    return false;
  }
  data_at_ = sizeof(rte_mbuf) + rte_pktmbuf_priv_size(pool_) + RTE_PKTMBUF_HEADROOM;
  for (uint16_t q = 0; q < config_.rx_queues; q++) {
    rc = rte_eth_rx_queue_setup(port_id_, q, rx_desc, socket, nullptr, pool_);
    if (rc != 0) {
      error_ = std::string("rte_eth_rx_queue_setup: ") + rte_strerror(-rc);
      return false;
    }
  }
  for (uint16_t q = 0; q < config_.tx_queues; q++) {
    rc = rte_eth_tx_queue_setup(port_id_, q, tx_desc, socket, nullptr);
    if (rc != 0) {
      error_ = std::string("rte_eth_tx_queue_setup: ") + rte_strerror(-rc);
      return false;
    }
  }

  if (rte_is_zero_ether_addr(&config_.mac)) {
    rte_eth_macaddr_get(port_id_, &mac_);
  } else {
    mac_ = config_.mac;
    // A port that cannot take our address still delivers frames for it in promiscuous mode;
    // the software MAC check in classify() keeps the rest out.
    if (rte_eth_dev_default_mac_addr_set(port_id_, &mac_) != 0) promiscuous_ = true;
  }
  if (config_.promiscuous) promiscuous_ = true;
  if (promiscuous_) rte_eth_promiscuous_enable(port_id_);

  rc = rte_eth_dev_start(port_id_);
  if (rc != 0) {
    error_ = std::string("rte_eth_dev_start: ") + rte_strerror(-rc);
    return false;
  }
  started_ = true;
  if (rss && !read_reta(info.reta_size)) reta_.clear();  // no table: the engine dispatches in software

  neighbours_ = std::make_unique<NeighbourTable>();
  if (!neighbours_->init("ndnic_nb_" + std::to_string(port_id_), kNeighbours, socket)) {
    error_ = std::string("neighbour table: ") + rte_strerror(rte_errno);
    return false;
  }
  return true;
}

bool Port::open(const PortConfig& config) {
  close();
  config_ = config;
  ipv4_ = config.ipv4;
  error_.clear();
  if (config_.rx_queues == 0 || config_.tx_queues == 0) {
    error_ = "a port needs at least one RX and one TX queue";
    return false;
  }
  if (!find_device() || !configure()) {
    close();
    return false;
  }
  counters_.assign(std::max(config_.rx_queues, config_.tx_queues), QueueCounters{});
  if (!config_.capture_path.empty()) {
    capture_ = std::make_unique<Capture>();
    if (!capture_->open(config_.capture_path)) {
      error_ = "cannot write capture file " + config_.capture_path;
      close();
      return false;
    }
  }
  return true;
}

void Port::close() {
  for (rte_mbuf* m : backlog_) rte_pktmbuf_free(m);
  backlog_.clear();
  if (port_id_ != UINT16_MAX) {
    rte_eth_dev_info info{};
    const bool have_info = rte_eth_dev_info_get(port_id_, &info) == 0;
    if (started_) rte_eth_dev_stop(port_id_);
    if (pool_ != nullptr || started_) rte_eth_dev_close(port_id_);
    if (created_vdev_ && have_info && info.device != nullptr) rte_dev_remove(info.device);
  }
  rte_mempool_free(pool_);
  pool_ = nullptr;
  neighbours_.reset();
  capture_.reset();
  started_ = created_vdev_ = promiscuous_ = false;
  tx_ip_cksum_ = rx_ip_cksum_ = false;
  reta_.clear();
  port_id_ = UINT16_MAX;
  next_timer_tsc_ = UINT64_MAX;
}

bool Port::read_reta(uint16_t size) {
  std::vector<rte_eth_rss_reta_entry64> conf(size / RTE_ETH_RETA_GROUP_SIZE + 1);
  for (auto& c : conf) c.mask = ~0ull;
  if (rte_eth_dev_rss_reta_query(port_id_, conf.data(), size) != 0) return false;
  reta_.resize(size);
  for (uint16_t i = 0; i < size; i++)
    reta_[i] = conf[i / RTE_ETH_RETA_GROUP_SIZE].reta[i % RTE_ETH_RETA_GROUP_SIZE];
  return true;
}

int Port::rss_queue(uint32_t src_ip, uint32_t dst_ip, uint16_t src_port, uint16_t dst_port) const {
  if (reta_.empty()) return -1;
  return reta_[rss_hash_ipv4_udp(src_ip, dst_ip, src_port, dst_port) % reta_.size()];
}

PortCounters Port::counters() const {
  PortCounters sum;
  for (const QueueCounters& q : counters_) {
    const PortCounters& c = q.c;
    add_counters(sum, c);
  }
  return sum;
}

uint16_t Port::poll(rte_mbuf** pkts, uint16_t n, uint16_t queue) {
  const uint16_t nb = rte_eth_rx_burst(port_id_, queue, pkts, n);
  if (nb == 0) return 0;
  // A lone frame's headers (an exchange's request or answer, or its ACK and the answer) are
  // asked for at once, where a pool mbuf keeps them (this port's pool layout; over a net_ring
  // pair the peer's, which is the same): found through data_off, they were a second miss after
  // the mbuf's own, one after the other on every exchange's path (ndperf raw_lat 8 B 0.81 ->
  // 0.69 us, send_lat 1.25 -> 1.17 us typical where the VM's processors sit far apart). A wrong
  // guess costs two prefetches. Not for longer bursts, whose frames the loop below asks for
  // ahead: asked for here as well, the first cost raw_bw 64 B 10-20% in the same placement.
  if (nb <= 2) {
    prefetch_at(reinterpret_cast<const char*>(pkts[0]) + data_at_);
    if (nb == 2) prefetch_at(reinterpret_cast<const char*>(pkts[1]) + data_at_);
  }
  PortCounters& c = counters_[queue].c;
  c.rx_frames += nb;
  if (unlikely(capture_ != nullptr) && !capture_->write(pkts, nb)) c.capture_errors += nb;

  const Identity us{mac_, ipv4_, config_.promiscuous};
  uint16_t roce = 0;
  uint64_t bytes = 0;
  bool chained = false;
  // A received frame was written by another core (the NIC's DMA, or the peer lcore of a
  // net_ring pair): its mbuf and headers miss in our cache, and sorting is their first read.
  // Asking for the next few while this one is sorted overlaps those misses instead of taking
  // them one after another; the transport then finds them in cache. Never for the first: it is
  // read at once, and a prefetch only delays it (a lone frame's exchange took 30 ns longer).
  for (uint16_t i = 1; i < std::min<uint16_t>(nb, 2 * kRxPrefetch); i++) prefetch_mbuf(pkts[i]);
  for (uint16_t i = 1; i < std::min<uint16_t>(nb, kRxPrefetch); i++) prefetch_headers(pkts[i]);
  for (uint16_t i = 0; i < nb; i++) {
    if (i + 2 * kRxPrefetch < nb) prefetch_mbuf(pkts[i + 2 * kRxPrefetch]);
    if (i + kRxPrefetch < nb) prefetch_headers(pkts[i + kRxPrefetch]);
    rte_mbuf* m = pkts[i];
    bytes += rte_pktmbuf_pkt_len(m);
    const Classified k = classify(m, us);
    if (likely(k.verdict == Verdict::kRoce)) {
      pkts[roce++] = m;
      if (unlikely(m->nb_segs > 1)) {
        prefetch_mbuf(m->next);  // see below
        chained = true;
      }
    } else if (k.verdict == Verdict::kArp) {
      handle_arp(m, c);
    } else {
      c.drops[size_t(k.drop)]++;
      rte_pktmbuf_free(m);
    }
  }
  // A chain (a zero-copy sender's headers, payload and trailer) is read segment by segment,
  // each found through the one before: taken in turn by the transport, those are misses one
  // after another. Its second segment was asked for as it was sorted; the third now, for the
  // whole burst at once (a burst without chains skips the walk).
  if (unlikely(chained))
    for (uint16_t i = 0; i < roce; i++)
      if (pkts[i]->nb_segs > 2) prefetch_mbuf(pkts[i]->next->next);
  c.rx_roce += roce;
  c.rx_bytes += bytes;
  return roce;
}

uint16_t Port::rx_burst(rte_mbuf** pkts, uint16_t n, uint16_t queue) {
  if (unlikely(!backlog_.empty()) && queue == 0) {
    const uint16_t take = uint16_t(std::min<size_t>(n, backlog_.size()));
    std::copy_n(backlog_.begin(), take, pkts);
    backlog_.erase(backlog_.begin(), backlog_.begin() + take);
    return take;
  }
  const uint16_t nb = poll(pkts, n, queue);
  if (queue == 0 && unlikely(next_timer_tsc_ != UINT64_MAX) && rte_rdtsc() >= next_timer_tsc_)
    run_timers();
  return nb;
}

uint16_t Port::tx_burst(rte_mbuf** pkts, uint16_t n, uint16_t queue) {
  if (tx_ip_cksum_) {
    for (uint16_t i = 0; i < n; i++) request_ip_checksum(pkts[i]);
    n = rte_eth_tx_prepare(port_id_, queue, pkts, n);
  }
  if (unlikely(capture_ != nullptr)) capture_->stage(pkts, n);
  // Summed before the burst: a frame the PMD took is no longer ours to read (net_ring hands it
  // to the peer's lcore at once); the ones it left are, and come off again.
  uint64_t bytes = 0;
  for (uint16_t i = 0; i < n; i++) bytes += rte_pktmbuf_pkt_len(pkts[i]);
  const uint16_t sent = rte_eth_tx_burst(port_id_, queue, pkts, n);
  for (uint16_t i = sent; i < n; i++) bytes -= rte_pktmbuf_pkt_len(pkts[i]);
  PortCounters& c = counters_[queue].c;
  if (unlikely(capture_ != nullptr) && !capture_->commit(sent)) c.capture_errors += sent;
  c.tx_frames += sent;
  c.tx_bytes += bytes;
  return sent;
}

void Port::send_arp(uint16_t op, const rte_ether_addr& dst, uint32_t target_ip) {
  static constexpr rte_ether_addr kBroadcast = {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}};
  const bool request = op == RTE_ARP_OP_REQUEST;
  ArpMessage msg{op, mac_, ipv4_, request ? rte_ether_addr{} : dst, target_ip};
  PortCounters& c = counters_[0].c;
  rte_mbuf* m = arp_build(pool_, mac_, request ? kBroadcast : dst, msg);
  if (m == nullptr || tx_burst(&m, 1, 0) != 1) {
    rte_pktmbuf_free(m);
    c.tx_errors++;
    return;
  }
  (request ? c.tx_arp_requests : c.tx_arp_replies)++;
}

void Port::handle_arp(rte_mbuf* m, PortCounters& c) {
  ArpMessage msg;
  const bool parsed = arp_parse(m, &msg);
  rte_pktmbuf_free(m);
  if (!parsed) {
    c.drops[size_t(Drop::kArpMalformed)]++;
    return;
  }
  auto learn = [](NeighbourTable::Entry* e, const rte_ether_addr& mac) {
    e->mac = mac;
    e->state = NeighbourTable::State::kResolved;
  };
  // RFC 826: refresh a sender we already know whoever the packet is for; add a new one only
  // when it talks to us, so a broadcast domain's chatter does not fill the table.
  bool merged = false;
  if (msg.spa != 0) {
    if (NeighbourTable::Entry* e = neighbours_->find(msg.spa)) {
      learn(e, msg.sha);
      merged = true;
    }
  }
  if (ipv4_ == 0 || msg.tpa != ipv4_) {
    if (merged)
      c.rx_arp++;
    else
      c.drops[size_t(Drop::kArpNotForUs)]++;
    return;
  }
  c.rx_arp++;
  if (!merged && msg.spa != 0) {
    if (NeighbourTable::Entry* e = neighbours_->find_or_add(msg.spa)) learn(e, msg.sha);
  }
  if (msg.op == RTE_ARP_OP_REQUEST) send_arp(RTE_ARP_OP_REPLY, msg.sha, msg.spa);
}

void Port::run_timers() {
  const uint64_t now = rte_rdtsc();
  const uint64_t interval = ms_to_tsc(config_.arp_retry_ms);
  uint64_t next = UINT64_MAX;
  neighbours_->for_each_pending([&](NeighbourTable::Entry& e) {
    if (e.requests == 0) return;  // added by an ARP exchange, never asked for
    if (now >= e.deadline_tsc) {
      if (e.requests >= config_.arp_retries) {
        e.state = NeighbourTable::State::kFailed;
        e.deadline_tsc = now + interval;  // failed for one interval, then asked for afresh
        return;
      }
      send_arp(RTE_ARP_OP_REQUEST, rte_ether_addr{}, e.ipv4);
      e.requests++;
      e.deadline_tsc = now + interval;
    }
    next = std::min(next, e.deadline_tsc);
  });
  next_timer_tsc_ = next;
}

Resolve Port::resolve(uint32_t ipv4, rte_ether_addr* mac) {
  NeighbourTable::Entry* e = neighbours_ ? neighbours_->find_or_add(ipv4) : nullptr;
  if (e == nullptr) return Resolve::kFailed;
  switch (e->state) {
    case NeighbourTable::State::kResolved:
      *mac = e->mac;
      return Resolve::kResolved;
    case NeighbourTable::State::kFailed:
      // A peer that did not answer may have come up since (a host booting, a link back): after
      // a short hold, a new demand starts a new round of requests, as a kernel's FAILED entry.
      if (rte_rdtsc() < e->deadline_tsc) return Resolve::kFailed;
      e->state = NeighbourTable::State::kPending;
      e->requests = 0;
      break;
    case NeighbourTable::State::kPending:
      break;
  }
  if (e->requests == 0) {
    send_arp(RTE_ARP_OP_REQUEST, rte_ether_addr{}, ipv4);
    e->requests = 1;
    e->deadline_tsc = rte_rdtsc() + ms_to_tsc(config_.arp_retry_ms);
    next_timer_tsc_ = std::min(next_timer_tsc_, e->deadline_tsc);
  }
  return Resolve::kPending;
}

Resolve Port::resolve_wait(uint32_t ipv4, rte_ether_addr* mac, uint32_t timeout_ms) {
  if (neighbours_ == nullptr) return Resolve::kFailed;
  // Asking again is the caller's explicit retry of a peer that failed before.
  if (NeighbourTable::Entry* e = neighbours_->find(ipv4);
      e != nullptr && e->state == NeighbourTable::State::kFailed) {
    e->state = NeighbourTable::State::kPending;
    e->requests = 0;
  }
  const uint64_t deadline = rte_rdtsc() + ms_to_tsc(timeout_ms);
  Resolve r = resolve(ipv4, mac);
  while (r == Resolve::kPending && rte_rdtsc() < deadline) {
    rte_mbuf* burst[kPollBurst];
    const uint16_t nb = poll(burst, kPollBurst, 0);
    backlog_.insert(backlog_.end(), burst, burst + nb);
    if (rte_rdtsc() >= next_timer_tsc_) run_timers();
    r = resolve(ipv4, mac);
    if (nb == 0 && r == Resolve::kPending) rte_delay_us_sleep(kIdleSleepUs);
  }
  return r;
}

}  // namespace ndnic::glue
