// pmd_glue: ndnic on DPDK ethdev ports. EAL start-up, one Port per ethdev port (PCI or
// virtual) that hands IPv4/UDP 4791 frames to the transport, answers and resolves ARP itself,
// drops and counts everything else, and can capture every frame to a pcap file.
#pragma once

#include <cstdint>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <rte_ether.h>
#include <rte_mbuf_core.h>
#include <rte_prefetch.h>
#include <rte_ring.h>

#include "ndnic/counters.h"

struct rte_mbuf;
struct rte_mempool;

namespace ndnic::glue {

// ---- EAL ----------------------------------------------------------------------------------

struct EalDefaults {
  /// EAL options the program adds unless the user gave an option of the same name, e.g.
  /// {"-l", "0"}, {"--no-pci", ""}. Empty value: the option takes none.
  std::vector<std::pair<std::string, std::string>> options;
  /// -m for the automatic memory choice (hugepages or --no-huge).
  unsigned memory_mb = 256;
  /// Print the memory line on stdout (the tools do); a library inside someone else's program
  /// (the libfabric provider) keeps its output clean and logs EalResult::memory_line itself.
  bool announce = true;
};

struct EalResult {
  bool ok = false;
  std::string error;               ///< why not, when !ok
  std::vector<std::string> args;   ///< the program's own arguments (after "--")
  bool hugepages = false;          ///< EAL runs on hugepages
  std::string memory_line;         ///< the one "ndnic: memory: ..." line (printed if announced)
};

/// Starts EAL once per process. argv is `prog [EAL args] -- [program args]` as in testpmd and
/// perftest; without "--" every argument is the program's. When the user chose no memory option
/// (--no-huge, --in-memory, -m, --socket-mem, --file-prefix, ...) this picks hugepages
/// (--in-memory) if enough free 2 MiB pages exist, --no-huge with a unique --file-prefix
/// otherwise, and prints one line saying which and why (EalDefaults::announce).
EalResult eal_init(int argc, char** argv, const EalDefaults& defaults = {});

/// Releases EAL and the runtime directory a generated --file-prefix left behind.
void eal_cleanup();

/// Creates two net_ring ports wired back to back (A's TX queue q is B's RX queue q and the
/// reverse), for in-process tests and the demo. Returns false when EAL refused.
bool make_ring_pair(const std::string& name, uint16_t* port_a, uint16_t* port_b, unsigned queues = 1);

// ---- ports --------------------------------------------------------------------------------

struct PortConfig {
  /// An ethdev port: its number ("0"), its name as probed by EAL ("0000:03:00.0", "net_tap0"),
  /// or a virtual device to create ("net_af_packet0,iface=veth0", "net_tap0,iface=nd0").
  std::string device;
  uint16_t rx_queues = 1;
  uint16_t tx_queues = 1;
  uint16_t rx_ring_size = 1024;
  uint16_t tx_ring_size = 1024;
  uint32_t mbufs = 0;              ///< 0: sized from the rings and queue counts
  uint16_t mbuf_cache = 256;
  uint16_t mbuf_data_room = RTE_MBUF_DEFAULT_BUF_SIZE;  ///< bytes per mbuf, headroom included
  uint16_t mtu = 1500;
  rte_ether_addr mac{};            ///< all zero: the port's own address
  uint32_t ipv4 = 0;               ///< our address, host order
  std::string capture_path;        ///< non-empty: every frame sent and received goes here
  uint32_t arp_retry_ms = 200;     ///< between ARP requests for one unresolved peer
  uint32_t arp_retries = 5;        ///< requests before resolve gives up
  bool promiscuous = false;        ///< accept frames for other MACs at the port level
};

/// Why a received frame did not go to the transport.
enum class Drop : uint8_t {
  kRuntFrame,        ///< shorter than the headers it claims
  kNotOurMac,        ///< unicast to another MAC
  kVlan,             ///< 802.1Q tagged (no VLAN is configured)
  kIpv6,             ///< IPv6 (ndnic speaks RoCEv2 over IPv4)
  kOtherEtherType,   ///< neither IPv4 nor ARP
  kIpHeader,         ///< bad version, header length or total length
  kIpFragment,       ///< fragments are never RoCE
  kNotUdp,           ///< IPv4 but not UDP
  kNotRocePort,      ///< UDP to a port other than 4791
  kNotOurIp,         ///< RoCE to another IPv4 address
  kArpMalformed,     ///< ARP that is not Ethernet/IPv4
  kArpNotForUs,      ///< an ARP request for another address
  kCount,
};
const char* drop_name(Drop d);

/// Written by the lcore polling each queue with plain stores (no atomics on the datapath);
/// another thread reading them may see values a few frames old.
struct PortCounters {
  uint64_t rx_frames = 0;          ///< everything the PMD delivered
  uint64_t rx_bytes = 0;           ///< ... their bytes (Ethernet header to the end, no FCS)
  uint64_t rx_roce = 0;            ///< handed to the caller
  uint64_t rx_arp = 0;             ///< ARP frames handled here
  uint64_t tx_frames = 0;          ///< accepted by the PMD, ARP included
  uint64_t tx_bytes = 0;           ///< ... their bytes (Ethernet header to the end, no FCS)
  uint64_t tx_arp_requests = 0;
  uint64_t tx_arp_replies = 0;
  uint64_t tx_errors = 0;          ///< ARP frames the PMD or the mempool refused
  uint64_t capture_errors = 0;     ///< frames the capture file did not take
  uint64_t drops[static_cast<size_t>(Drop::kCount)] = {};
  uint64_t dropped() const;
  uint64_t operator[](Drop d) const { return drops[static_cast<size_t>(d)]; }
};
/// PortCounters as reported (the drops by reason go by drop_name).
inline constexpr CounterField kPortCounterFields[] = {
    {"rx_packets", offsetof(PortCounters, rx_frames)},
    {"rx_bytes", offsetof(PortCounters, rx_bytes)},
    {"tx_packets", offsetof(PortCounters, tx_frames)},
    {"tx_bytes", offsetof(PortCounters, tx_bytes)},
    {"rx_roce", offsetof(PortCounters, rx_roce)},
    {"rx_arp", offsetof(PortCounters, rx_arp)},
    {"tx_arp_requests", offsetof(PortCounters, tx_arp_requests)},
    {"tx_arp_replies", offsetof(PortCounters, tx_arp_replies)},
    {"tx_errors", offsetof(PortCounters, tx_errors)},
    {"capture_errors", offsetof(PortCounters, capture_errors)},
};
static_assert(sizeof(PortCounters) / sizeof(uint64_t) ==
                  std::size(kPortCounterFields) + static_cast<size_t>(Drop::kCount),
              "a new port counter needs its row in kPortCounterFields");

enum class Resolve : uint8_t { kResolved, kPending, kFailed };

class NeighbourTable;
class Capture;

/// One ethdev port. The control plane is single-threaded: ARP retries run while polling queue 0
/// (where RSS puts non-IP frames), so the lcore polling queue 0 owns the neighbour table and is
/// the one to call resolve(). Each queue is polled by one lcore; counters are kept per queue.
class Port {
 public:
  Port();
  ~Port();
  Port(const Port&) = delete;
  Port& operator=(const Port&) = delete;

  /// Creates or finds the device, its mempool and queues, starts it. False with error().
  bool open(const PortConfig& config);
  void close();
  const std::string& error() const { return error_; }

  /// Received RoCEv2 frames for us, at most n. Also answers ARP and runs the ARP retry timers
  /// (on queue 0). The caller owns the returned mbufs.
  uint16_t rx_burst(rte_mbuf** pkts, uint16_t n, uint16_t queue = 0);
  /// Sends frames built by the caller; uses the port's IPv4 checksum offload when it has one.
  /// Returns how many the PMD took; the caller still owns the rest (as rte_eth_tx_burst).
  uint16_t tx_burst(rte_mbuf** pkts, uint16_t n, uint16_t queue = 0);

  /// Non-blocking: the MAC of `ipv4` if known; otherwise starts (or keeps) resolving it with
  /// ARP requests, retried from rx_burst on queue 0.
  Resolve resolve(uint32_t ipv4, rte_ether_addr* mac);
  /// Polls queue 0 until `ipv4` resolves or fails or `timeout_ms` passes. RoCE frames that
  /// arrive meanwhile are kept for the next rx_burst, never dropped.
  Resolve resolve_wait(uint32_t ipv4, rte_ether_addr* mac, uint32_t timeout_ms);

  /// The RX queue the port's RSS puts a frame with this IPv4/UDP 4-tuple (host order) on, or -1
  /// when the port does not spread by RSS (one queue, or no IPv4/UDP RSS).
  int rss_queue(uint32_t src_ip, uint32_t dst_ip, uint16_t src_port, uint16_t dst_port) const;

  rte_mempool* mempool() const { return pool_; }
  uint16_t port_id() const { return port_id_; }
  const rte_ether_addr& mac() const { return mac_; }
  uint32_t ipv4() const { return ipv4_; }
  const std::string& driver() const { return driver_; }
  bool tx_ip_checksum_offload() const { return tx_ip_cksum_; }
  bool rx_ip_checksum_offload() const { return rx_ip_cksum_; }
  /// Whether a frame may carry bytes where they lie in the application's memory (a chained
  /// mbuf over an external buffer): the PMD takes chains and hands each frame to a consumer
  /// that frees it once read (net_ring: the peer's receive). A PMD that frees sent mbufs only
  /// when its ring wraps would keep regions pinned; one that DMAs needs the memory mapped.
  bool zero_copy_tx() const { return zero_copy_tx_; }
  /// Where a pool mbuf's frame starts (after its header, private area and headroom), from the
  /// mbuf's address: its data lines can be asked for before data_off is read.
  size_t mbuf_data_at() const { return data_at_; }
  /// Sums the per-queue counters; exact once the lcores polling the port are quiet.
  PortCounters counters() const;
  /// The ring queue `queue` sends on, on a make_ring_pair port; nullptr on any other.
  const rte_ring* tx_ring(uint16_t queue) const { return queue < tx_rings_.size() ? tx_rings_[queue] : nullptr; }
  /// Called when a burst has arrived on `queue`, whose answer (an ACK, a READ response) this
  /// core is about to send: on a make_ring_pair port, asks for the line of the TX ring's
  /// producer state (head and tail), which every enqueue reads and writes first and which the
  /// peer's lcore reads each time it polls. ndperf send_lat 8 B polled, run to completion,
  /// 2-CPU VM with its processors far apart, on and off in one binary, alternated run by run:
  /// 1.06-1.15 -> 0.98-1.06 us typical (medians, three sets of 30-40 pairs, lower in 25-32 of
  /// them; off against off 13-15), with Notify 1.23 -> 1.10 us (20 of 20; off against off 9);
  /// send_bw, write_bw and sendinv within the noise. That the line is no longer here by then
  /// is inferred, not shown (no CPU counters in the VM). Asking for it to write, or for the
  /// consumer's tail, made the exchange slower; asking before a lone send, no difference.
  void prepare_send(uint16_t queue) const {
    if (queue >= tx_rings_.size()) return;
    rte_prefetch0(&tx_rings_[queue]->prod);
  }

 private:
  uint16_t poll(rte_mbuf** pkts, uint16_t n, uint16_t queue);
  void handle_arp(rte_mbuf* m, PortCounters& c);
  void run_timers();
  void send_arp(uint16_t op, const rte_ether_addr& dst, uint32_t target_ip);
  bool find_device();
  bool configure();
  bool read_reta(uint16_t size);

  std::string error_;
  PortConfig config_;
  uint16_t port_id_ = UINT16_MAX;
  bool created_vdev_ = false;
  bool started_ = false;
  std::string driver_;
  std::string vdev_name_;
  rte_mempool* pool_ = nullptr;
  size_t data_at_ = 0;  ///< mbuf_data_at()
  rte_ether_addr mac_{};
  uint32_t ipv4_ = 0;
  bool tx_ip_cksum_ = false;
  bool rx_ip_cksum_ = false;
  bool zero_copy_tx_ = false;
  bool promiscuous_ = false;
  uint64_t next_timer_tsc_ = UINT64_MAX;
  std::unique_ptr<NeighbourTable> neighbours_;
  std::unique_ptr<Capture> capture_;
  std::vector<rte_mbuf*> backlog_;  ///< RoCE frames received during resolve_wait
  std::vector<rte_ring*> tx_rings_;  ///< per TX queue, on a make_ring_pair port (tx_ring)
  std::vector<uint16_t> reta_;      ///< RSS redirection table; empty without RSS
  struct alignas(64) QueueCounters { PortCounters c; };  ///< one cache line per queue's lcore
  std::vector<QueueCounters> counters_;
};

}  // namespace ndnic::glue
