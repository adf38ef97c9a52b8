// ndnic's NIC: a RoCEv2 RC transport (and UD datagrams, for the GSI QP1) on DPDK poll-mode lcores.
//
// The application side (the ND frontend, tests, tools) creates memory regions, windows,
// completion queues and QPs through Device; it posts work requests to a QP's rings and reads
// completions from a CQ's ring. The lcore that owns a QP drains its rings, runs the requester,
// responder and completer, and is the only thread that touches the QP's transport state.
#pragma once

#include <sched.h>

#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ndnic/verbs.h"
#include "ndnic/counters.h"
#include "ndnic/wire/packet.h"

namespace ndnic::glue {
class Port;
}

namespace ndnic::nic {

class Cq;
class Qp;
struct DeviceImpl;
struct FaultConfig;

/// A QP's transport counters (Qp::Counters). Written by the lcore that owns the QP with plain
/// stores; another thread reading them may see values a few packets old.
struct QpCounters {
  uint64_t tx_packets = 0, rx_packets = 0;  ///< every packet, ACKs and retransmissions included
  uint64_t tx_bytes = 0;          ///< whole frames as built (Ethernet header to ICRC)
  uint64_t tx_zero_copy = 0;      ///< packets whose payload went out where it lies
  uint64_t rx_bytes = 0;          ///< whole frames as decoded (Ethernet header to ICRC)
  uint64_t retransmits = 0;       ///< packets sent again (timeout, NAK or RNR)
  uint64_t timeouts = 0;          ///< retransmission timer expiries
  uint64_t naks_sent[4] = {};     ///< PSN sequence, invalid request, remote access, remote op
  uint64_t naks_received[4] = {};
  uint64_t rnr_naks_sent = 0, rnr_naks_received = 0;
  uint64_t duplicates = 0;        ///< duplicate requests received (re-ACKed or replayed)
  uint64_t out_of_sequence = 0;   ///< requests received past the expected PSN
  uint64_t invalidations = 0;     ///< windows invalidated by the peer's SEND WITH INVALIDATE
  uint64_t qkey_drops = 0;        ///< UD: datagrams with the wrong Q_Key
  uint64_t no_recv_drops = 0;     ///< UD: datagrams that found no receive posted (no RNR)
};
/// QpCounters as reported, but for the arrays by NAK kind and the UD drops, which go apart.
inline constexpr glue::CounterField kQpCounterFields[] = {
    {"tx_packets", offsetof(QpCounters, tx_packets)},
    {"tx_bytes", offsetof(QpCounters, tx_bytes)},
    {"tx_zero_copy", offsetof(QpCounters, tx_zero_copy)},
    {"rx_packets", offsetof(QpCounters, rx_packets)},
    {"rx_bytes", offsetof(QpCounters, rx_bytes)},
    {"retransmits", offsetof(QpCounters, retransmits)},
    {"timeouts", offsetof(QpCounters, timeouts)},
    {"rnr_naks_sent", offsetof(QpCounters, rnr_naks_sent)},
    {"rnr_naks_received", offsetof(QpCounters, rnr_naks_received)},
    {"duplicates", offsetof(QpCounters, duplicates)},
    {"out_of_sequence", offsetof(QpCounters, out_of_sequence)},
    {"invalidations", offsetof(QpCounters, invalidations)},
};
// The rest: naks_sent[4], naks_received[4], qkey_drops, no_recv_drops.
static_assert(sizeof(QpCounters) / sizeof(uint64_t) == std::size(kQpCounterFields) + 10,
              "a new QP counter needs its row in kQpCounterFields");

/// Shards: one poll loop each. With one port and N shards, shard i polls RX/TX queue i of it
/// (open the port with N queues); with N ports, shard i polls queue 0 of port i. QPs are
/// spread over the shards; a frame that arrives at the wrong shard travels to its owner on a
/// dispatch ring (the ports here cannot steer by QP number).
struct DeviceConfig {
  std::vector<glue::Port*> ports;    ///< one port, or one per shard (opened by the caller)
  std::vector<unsigned> lcores;      ///< a worker lcore per shard; empty: Device::poll() runs them
  unsigned shards = 0;               ///< without lcores: 0 = one per port
  uint32_t max_qps = 1024;
  uint32_t max_mrs = 4096;
  uint32_t max_mws = 4096;
  uint32_t send_ring = 1024;         ///< entries per QP send ring (power of two)
  uint32_t recv_ring = 1024;         ///< entries per QP receive ring (power of two)
  /// A packet's payload of at least this many bytes, from one piece of a registered region,
  /// goes out where it lies (zero-copy) on a port that allows it (glue::Port::zero_copy_tx);
  /// smaller ones are copied into the frame. 0: always copy.
  uint32_t zero_copy_min = kZeroCopyMinDefault;
  static constexpr uint32_t kZeroCopyMinDefault = 2048;
  /// Without lcores: time the application threads' turns at the engine (Device::progress()
  /// and Qp::send_now()) so that shard_loads() tells where their time went, as it does for
  /// worker lcores. A counted progress() reads the clock once more than an uncounted one (the
  /// timers take its first read), a counted send_now() twice more. Off, a turn reads no clock
  /// for it.
  bool count_app_load = false;
};

/// A registered region: local key for SGEs, remote key for peers.
struct MrKeys {
  uint32_t lkey = 0;
  uint32_t rkey = 0;
};

enum class QpType : uint8_t { kRc, kUd };

struct QpCaps {
  QpType type = QpType::kRc;
  bool gsi = false;                  ///< the UD QP numbered 1 (type must be kUd); one per device
  Cq* send_cq = nullptr;
  Cq* recv_cq = nullptr;
  uint32_t max_send_wr = 256;
  uint32_t max_recv_wr = 256;
  uint32_t max_send_sge = kMaxSge;
  uint32_t max_recv_sge = kMaxSge;
  uint32_t max_inline = kMaxInline;
  uint32_t pd = 0;                   ///< protection domain (Device::alloc_pd)
  /// The shard (worker lcore) that serves the QP, modulo shards(); kAnyShard: by QPN. An
  /// application thread that keeps its QPs on one shard talks to one worker only.
  int shard = kAnyShard;
  static constexpr int kAnyShard = -1;
};

class Device {
 public:
  Device();
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  /// Starts the engine: one worker per lcore in config.lcores (or none: call poll()).
  bool open(const DeviceConfig& config);
  void close();
  const std::string& error() const { return error_; }

  /// Runs one iteration of the engine on the calling thread (when no worker lcores were given).
  /// Returns the number of packets and work requests it processed. Same as progress().
  unsigned poll();
  /// Run-to-completion progress: the engine runs on whichever application thread calls this
  /// (no worker lcores were given). Any thread may call it; one drives at a time, and a call
  /// that finds another thread driving returns 0 at once (that thread does the work).
  unsigned progress();
  /// True when no worker lcore runs the engine: the application's threads drive it through
  /// progress() (the ND frontend does in GetResults and in its waits; a post to an idle QP
  /// runs Qp::send_now).
  bool app_driven() const;
  /// Shards the engine runs (one per worker lcore; QpCaps::shard picks among them).
  unsigned shards() const;
  /// The processors the worker lcores run on (none when the application drives the device).
  cpu_set_t worker_cpus() const;

  uint32_t alloc_pd();

  /// Registers [addr, addr+len) with the given Access rights. Returns false for a bad
  /// argument or a full table.
  bool register_mr(uint32_t pd, const void* addr, uint64_t len, uint32_t access, MrKeys* keys);
  /// Removes a region: its keys stop matching at once; returns after no lcore can still use it.
  bool deregister_mr(uint32_t lkey);

  /// Allocates a type-2 memory window; `context` is returned as wr_id of the window's
  /// kRemoteInvalidate completion. Returns its initial R_Key (unbound), 0 on failure.
  uint32_t alloc_mw(uint32_t pd, uint64_t context);
  bool dealloc_mw(uint32_t rkey);
  /// The R_Key window `handle` (what alloc_mw returned) has in the engine now: binds posted
  /// and not yet run have not changed it. 0 for no such window.
  uint32_t mw_key(uint32_t handle) const;

  Cq* create_cq(uint32_t entries);
  void destroy_cq(Cq* cq);

  /// A QP in RESET; nullptr for bad caps, a full table, or a second GSI QP.
  Qp* create_qp(const QpCaps& caps);
  /// QPs that exist (QP1 included).
  size_t qp_count() const;
  void destroy_qp(Qp* qp);

  /// Engine counters summed over the shards (exact once they are quiet).
  struct Counters {
    uint64_t rejected = 0;          ///< frames the decoder refused (wire::Reject reasons)
    wire::RejectCounters rejects;   ///< ... by reason
    uint64_t unknown_qp = 0;        ///< frames for no QP of ours, or one not ready for them
    uint64_t dispatched = 0;        ///< frames handed from the receiving shard to the owner
    uint64_t dispatch_dropped = 0;  ///< ... that found the owner's ring full
    uint64_t tx_dropped = 0;        ///< frames the port did not take in time
    uint64_t held_dropped = 0;      ///< requests dropped because too many wait behind READ replies
    /// deregistrations that stopped waiting for zero-copy frames still out (a peer gone quiet)
    uint64_t pinned_at_deregister = 0;
  };
  /// Counters as reported (the rejects by reason go by wire::reject_name).
  static constexpr glue::CounterField kCounterFields[] = {
      {"rejected", offsetof(Counters, rejected)},
      {"unknown_qp", offsetof(Counters, unknown_qp)},
      {"dispatched", offsetof(Counters, dispatched)},
      {"dispatch_dropped", offsetof(Counters, dispatch_dropped)},
      {"tx_dropped", offsetof(Counters, tx_dropped)},
      {"held_dropped", offsetof(Counters, held_dropped)},
      {"pinned_at_deregister", offsetof(Counters, pinned_at_deregister)},
  };
  Counters counters() const;
  /// How busy each worker lcore was (exact once they are quiet): where a run's time went,
  /// without a profiler. Run to completion (DeviceConfig::count_app_load), the same for the
  /// application threads' turns at each shard.
  struct ShardLoad {
    unsigned lcore = 0;        ///< the worker lcore; app_driven: the shard's index
    bool app_driven = false;   ///< the application's threads ran it (run to completion)
    uint64_t cycles = 0;       ///< TSC cycles its loop ran (app_driven: inside progress())
    uint64_t busy_cycles = 0;  ///< ... in iterations that found work
    uint64_t polls = 0;        ///< iterations
    uint64_t busy_polls = 0;   ///< ... that found work
    uint64_t rx_frames = 0;    ///< frames its RX bursts brought
    uint64_t rx_bursts = 0;    ///< RX bursts that brought any
    uint64_t post_cycles = 0;  ///< app_driven: TSC cycles in Qp::send_now() (sent as posted)
    uint64_t post_turns = 0;   ///< ... and its calls that ran the shard
  };
  /// One per shard; empty when the application's threads drive the device without
  /// DeviceConfig::count_app_load.
  std::vector<ShardLoad> shard_loads() const;
  /// Transport counters summed over every QP since open(), destroyed ones included.
  QpCounters qp_totals() const;
  /// Calls fn for each QP that exists. Safe from any thread (a telemetry thread) while the
  /// device is open: it holds the lock create_qp and destroy_qp take to change the QP list,
  /// so no QP is freed under fn; fn must not create or destroy QPs. The lcores never take
  /// that lock, and the counters fn reads may lag them by a few packets.
  void for_each_qp(const std::function<void(const Qp&)>& fn) const;

  /// Installs (or with nullptr removes) the fault-injection switch on the packet path, also
  /// while the workers run (each takes the new switch between two of its iterations).
  void set_faults(const FaultConfig* faults);

  DeviceImpl* impl() { return impl_.get(); }

 private:
  std::unique_ptr<DeviceImpl> impl_;
  std::string error_;
  mutable std::mutex qps_mutex_;   ///< the QP list against readers on other threads
  QpCounters retired_;             ///< counters of the QPs destroyed since open()
};

/// A completion queue. Producers are lcores; one consumer (the application).
class Cq {
 public:
  /// Takes up to n completions. Never blocks.
  unsigned poll(Completion* out, unsigned n);
  /// Arms the CQ: the next completion (any), or the next solicited or error completion
  /// (solicited_only), makes the event fd readable once.
  void arm(bool solicited_only);
  /// Arms the CQ for the next error completion only.
  void arm_errors();
  /// An eventfd to wait on (poll/epoll/read) after arm().
  int event_fd() const;
  /// Still armed: no completion has signalled since arm() (a signal disarms it). A watching
  /// waiter's cheap look.
  bool armed() const;
  /// A waiter that watches armed() itself starts (+1) or stops (-1): while one does, signals
  /// leave the event fd alone. Whoever stops watching looks at armed() once more after it, and
  /// delivers a signal it finds (the fd was not written for it).
  void add_watcher(int delta);
  /// Waiters that watch now.
  uint32_t watchers() const;
  /// A watcher that would rather sleep than spin: add_sleeper(+1), then in a loop read
  /// signal_seq(), look at what it waits for (armed(), its own state), and sleep(seq) if
  /// nothing changed; add_sleeper(-1) after. Signals wake it directly (a futex).
  uint32_t signal_seq() const;
  void add_sleeper(int delta);
  uint32_t sleepers() const;
  /// Sleeps until signal_seq() moves past seq (or a spurious wake-up); at once if it has.
  void sleep(uint32_t seq);
  /// Wakes the sleepers to look again: after anything else they wait for changed (a cancel).
  void wake_sleepers();
  /// Signals that wrote the event fd (none while a waiter watched).
  uint64_t fd_signals() const;
  /// Blocks until armed-for completion arrives or timeout_ms passes; false on timeout.
  bool wait(int timeout_ms);
  uint32_t capacity() const;
  /// Completions waiting to be polled.
  uint32_t queued() const;
  /// A completion found the CQ full and was lost (its QP went to ERROR): sticky.
  bool overrun() const;
  /// Gives the CQ room for `entries` (more or fewer) while lcores keep producing into it:
  /// queued completions stay, in order. False when fewer than those queued (or no memory).
  bool resize(uint32_t entries);

  struct Impl;
  Impl* impl() { return impl_; }

 private:
  friend class Device;
  Impl* impl_ = nullptr;
};

/// A reliable-connection or unreliable-datagram QP. Posting is single-producer: one
/// application thread per QP.
class Qp {
 public:
  uint32_t qpn() const;
  QpType type() const;
  /// Moves the QP through RESET -> INIT -> RTR -> RTS (or to ERROR / RESET). Applied by the
  /// owning lcore; returns when it has been.
  bool modify(QpState to, const QpAttr& attr);
  QpState state() const;
  /// In ERROR because modify() took it there (its owner ended it). A QP that failed by itself
  /// (a request's error) is not closed: requests posted to it still complete, flushed.
  bool closed() const;

  /// Posts a send-side work request. False (nothing posted) when the ring is full or the
  /// request is malformed (too many SGEs, inline too long, unknown opcode).
  bool post_send(const SendWr& wr);
  /// Posts n requests as one ring operation (one doorbell): all of them or none.
  bool post_send_burst(const SendWr* wrs, unsigned n);
  /// A batch of send requests built where the engine reads them, not copied there:
  /// open_send_slots() says how many of the send ring's slots are free, send_slot(i) is the
  /// i-th, and commit_send_slots(n) posts the first n as one ring operation, checked as
  /// post_send checks them (false, and none posted, when one is malformed); the rest stay free.
  /// The count is as the poster last saw the engine's progress: it looks again only when fewer
  /// than `want` are known free, so a batch that fills what it was told calls again with more
  /// (the slots already built stay as they are). One batch open per QP at a time, from the
  /// thread that posts to it, and no post_send or post_send_burst while it is open (they would
  /// publish its unfinished slots).
  unsigned open_send_slots(unsigned want = 1);
  SendWr* send_slot(unsigned i);
  bool commit_send_slots(unsigned n);
  bool post_recv(const RecvWr& wr);
  /// Posts n receives as one ring operation: all of them or none.
  bool post_recv_burst(const RecvWr* wrs, unsigned n);
  /// Nothing posted waits for the engine to fetch it.
  bool send_ring_empty() const;
  /// Run-to-completion: sends what was posted to this QP now, on the calling thread (the
  /// requester's part of an engine iteration, for this QP only; nothing is received). Returns
  /// the packets and requests it processed: 0 where worker lcores run the engine, or where
  /// another thread is driving it (that thread sends them).
  unsigned send_now();
  /// Transport counters of this QP (exact once its lcore is quiet).
  using Counters = QpCounters;
  Counters counters() const;
  /// Send-side requests and receives completed so far, signaled or not (an application that
  /// suppresses success completions still needs to know when a slot frees up).
  uint64_t sends_completed() const;
  uint64_t recvs_completed() const;

  struct Impl;
  Impl* impl() { return impl_; }

 private:
  friend class Device;
  Impl* impl_ = nullptr;
};

}  // namespace ndnic::nic
