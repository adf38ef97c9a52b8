// Device, Cq and Qp as the application sees them. Everything that changes a shard's state
// travels to it as a ControlCmd; memory registration goes to the MemoryTable, whose readers
// are the lcores.
#include <sched.h>
#include <unistd.h>

#include <string>

#include <rte_cycles.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "ndnic/backoff.h"
#include "nic/engine.h"
#include "nic/wr_ring.h"
#include "ndnic/port.h"

namespace ndnic::nic {
namespace {

std::atomic<unsigned> g_serial{0};  ///< rte_ring and rte_rcu names are process-wide

std::string unique_name(const char* what) {
  return std::string("ndnic_") + what + "_" + std::to_string(g_serial++);
}

int worker_main(void* arg) {
  auto* s = static_cast<Shard*>(arg);
  if (s->dev->qsbr) {
    rte_rcu_qsbr_thread_register(s->dev->qsbr, s->index);
    rte_rcu_qsbr_thread_online(s->dev->qsbr, s->index);
  }
  // A worker that found nothing to do for a while offers its CPU to any thread waiting for it
  // (an application thread woken by a completion, on a machine with fewer CPUs than busy
  // threads): without this the woken thread waits out the worker's whole scheduler slice.
  Backoff backoff(Backoff::kWorkerLooks);
  Device::ShardLoad& load = s->load;
  load.lcore = s->lcore;
  const uint64_t start = rte_rdtsc();
  uint64_t t = start;
  bool now_is_t = false;  // nothing ran since t was read (no yield)
  while (s->dev->running.load(std::memory_order_relaxed)) {
    // After an iteration that found work, this one starts where it ended: the timers take that
    // clock read rather than one of their own. After an idle one the worker may have yielded.
    const unsigned work = s->poll_once(now_is_t ? t : 0);
    const uint64_t t1 = rte_rdtsc();
    s->count_iteration(t1 - t, work != 0);
    if (work)
      backoff.busy();
    else
      backoff.idle();
    now_is_t = work != 0;
    t = t1;
    load.cycles = t - start;
  }
  if (s->dev->qsbr) {
    rte_rcu_qsbr_thread_offline(s->dev->qsbr, s->index);
    rte_rcu_qsbr_thread_unregister(s->dev->qsbr, s->index);
  }
  return 0;
}

}  // namespace

void DeviceImpl::drive_blocking() {
  Backoff backoff;
  while (!try_drive()) backoff.idle();
}

unsigned DeviceImpl::drive_once() {
  unsigned work = 0;
  if (!config.count_app_load) {
    for (auto& s : shards) work += s->poll_once();
    return work;
  }
  for (auto& s : shards) {
    // The timers take this read too: one clock read per iteration more than uncounted.
    const uint64_t t0 = rte_rdtsc();
    const unsigned w = s->poll_once(t0);
    const uint64_t spent = rte_rdtsc() - t0;
    s->count_iteration(spent, w != 0);
    s->load.cycles += spent;
    work += w;
  }
  return work;
}

void DeviceImpl::quiesce_idle(void* self) {
  DeviceImpl& d = *static_cast<DeviceImpl*>(self);
  if (!d.try_drive()) return;  // the thread driving reports when its iteration ends
  // Holding the flag, no iteration is under way: every shard is quiescent now.
  for (auto& s : d.shards) rte_rcu_qsbr_quiescent(d.qsbr, s->index);
  d.stop_driving();
}

bool DeviceImpl::run_control(Shard& s, ControlCmd& cmd) {
  if (!worker_lcores) {
    // Between two iterations of whoever drives: the shard's state is ours for the moment.
    drive_blocking();
    s.apply(&cmd);
    stop_driving();
    return cmd.ok;
  }
  void* p = &cmd;
  while (rte_ring_mp_enqueue(s.control, p) != 0) sched_yield();
  while (!cmd.done.load(std::memory_order_acquire)) sched_yield();
  return cmd.ok;
}

Device::Device() = default;
Device::~Device() { close(); }

bool Device::open(const DeviceConfig& config) {
  close();
  if (config.ports.empty()) {
    error_ = "a device needs at least one port";
    return false;
  }
  const unsigned nshards = !config.lcores.empty() ? unsigned(config.lcores.size())
                          : config.shards           ? config.shards
                                                    : unsigned(config.ports.size());
  if (config.ports.size() != 1 && config.ports.size() != nshards) {
    error_ = "give one port (a queue per shard) or one port per shard";
    return false;
  }
  {
    std::lock_guard lock(qps_mutex_);
    impl_ = std::make_unique<DeviceImpl>();
    retired_ = {};
  }
  DeviceImpl& d = *impl_;
  d.config = config;
  d.worker_lcores = !config.lcores.empty();
  {
    // App-driven devices too (nic/grace_period.h).
    const size_t sz = rte_rcu_qsbr_get_memsize(nshards);
    d.qsbr = static_cast<rte_rcu_qsbr*>(rte_zmalloc("ndnic_qsbr", sz, RTE_CACHE_LINE_SIZE));
    if (!d.qsbr || rte_rcu_qsbr_init(d.qsbr, nshards) != 0) {
      error_ = "cannot allocate the RCU state";
      return false;
    }
  }
  if (!d.worker_lcores) {
    // One reader per shard, online from the start; whoever drives it reports for it.
    for (unsigned i = 0; i < nshards; i++) {
      rte_rcu_qsbr_thread_register(d.qsbr, i);
      rte_rcu_qsbr_thread_online(d.qsbr, i);
    }
    d.grace = GracePeriod(d.qsbr, &DeviceImpl::quiesce_idle, &d);
  } else {
    d.grace = GracePeriod(d.qsbr);  // each worker reports for its shard (worker_main)
  }
  if (!d.memory.init(config.max_mrs, config.max_mws, d.grace)) {
    error_ = "cannot allocate the memory tables";
    return false;
  }
  d.qp_table_size = kFirstQpn + config.max_qps;
  d.qp_table = std::make_unique<std::atomic<Qp::Impl*>[]>(d.qp_table_size);
  const bool shared_port = config.ports.size() == 1;
  for (unsigned i = 0; i < nshards; i++) {
    auto s = std::make_unique<Shard>();
    s->dev = &d;
    s->port = config.ports[shared_port ? 0 : i];
    s->queue = uint16_t(shared_port ? i : 0);
    s->index = i;
    s->tsc_hz = rte_get_tsc_hz();
    s->mbuf_data_at = s->port->mbuf_data_at();
    s->zero_copy_min = s->port->zero_copy_tx() ? config.zero_copy_min : 0;
    if (d.worker_lcores) {
      s->lcore = config.lcores[i];
      s->control = rte_ring_create(unique_name("ctl").c_str(), 64, SOCKET_ID_ANY, RING_F_SC_DEQ);
    } else {
      s->load.lcore = i;
      s->load.app_driven = true;
    }
    if (nshards > 1) {
      s->dispatch = rte_ring_create(unique_name("dsp").c_str(), 4096, SOCKET_ID_ANY, RING_F_SC_DEQ);
      if (s->queue == 0) s->resolve = rte_ring_create(unique_name("arp").c_str(), 1024, SOCKET_ID_ANY, RING_F_SC_DEQ);
    }
    if ((d.worker_lcores && !s->control) || (nshards > 1 && !s->dispatch) ||
        (nshards > 1 && s->queue == 0 && !s->resolve)) {
      error_ = "cannot create the shard rings";
      return false;
    }
    d.shards.push_back(std::move(s));
  }
  // The shard that polls queue 0 of a port answers and resolves ARP for it.
  for (auto& s : d.shards)
    for (auto& o : d.shards)
      if (o->port == s->port && o->queue == 0) s->arp_owner = o.get();
  if (d.worker_lcores) {
    d.running = true;
    for (auto& s : d.shards) {
      if (rte_eal_remote_launch(worker_main, s.get(), s->lcore) != 0) {
        error_ = "lcore " + std::to_string(s->lcore) + " is not a free worker lcore";
        close();
        return false;
      }
    }
  }
  return true;
}

void Device::close() {
  if (!impl_) return;
  DeviceImpl& d = *impl_;
  if (d.running.exchange(false)) {
    for (auto& s : d.shards) rte_eal_wait_lcore(s->lcore);
  }
  std::lock_guard lock(qps_mutex_);  // a for_each_qp on another thread finishes first
  for (auto& qp : d.qps) {
    // Closed with QPs alive: what their responders held goes back to the pool.
    qp->resp.deferred.free_all();
  }
  for (auto& s : d.shards) {
    s->flush_tx();
    // Frames the port would not take are not sent after the close either.
    for (uint16_t i = 0; i < s->ntx; i++) rte_pktmbuf_free(s->tx[i]);
    s->ntx = 0;
    s->free_spent();
    s->return_fresh();
    if (s->control) rte_ring_free(s->control);
    if (s->dispatch) {
      void* m;
      while (rte_ring_dequeue(s->dispatch, &m) == 0) rte_pktmbuf_free(static_cast<rte_mbuf*>(m));
      rte_ring_free(s->dispatch);
    }
    if (s->resolve) rte_ring_free(s->resolve);
  }
  for (auto& cq : d.cqs) cq_destroy(cq.get());
  d.shards.clear();
  d.qps.clear();
  d.cqs.clear();
  if (d.qsbr) rte_free(d.qsbr);
  impl_.reset();
}

unsigned Device::poll() { return progress(); }

unsigned Device::progress() {
  DeviceImpl& d = *impl_;
  return d.drive_if_free([&] { return d.drive_once(); });
}

bool Device::app_driven() const { return impl_ && !impl_->worker_lcores; }

unsigned Device::shards() const { return impl_ ? unsigned(impl_->shards.size()) : 0; }

cpu_set_t Device::worker_cpus() const {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (impl_ && impl_->worker_lcores)
    for (const auto& s : impl_->shards) {
      rte_cpuset_t c = rte_lcore_cpuset(s->lcore);
      CPU_OR(&cpus, &cpus, &c);
    }
  return cpus;
}

uint32_t Device::alloc_pd() { return impl_->next_pd++; }

bool Device::register_mr(uint32_t pd, const void* addr, uint64_t len, uint32_t access, MrKeys* keys) {
  uint32_t key = 0;
  if (!impl_->memory.register_mr(pd, addr, len, access, &key)) return false;
  keys->lkey = keys->rkey = key;
  return true;
}

bool Device::deregister_mr(uint32_t lkey) { return impl_->memory.deregister_mr(lkey); }

uint32_t Device::alloc_mw(uint32_t pd, uint64_t context) { return impl_->memory.alloc_mw(pd, context); }

bool Device::dealloc_mw(uint32_t rkey) { return impl_->memory.dealloc_mw(rkey); }

uint32_t Device::mw_key(uint32_t handle) const { return impl_->memory.window_key(handle); }

Cq* Device::create_cq(uint32_t entries) {
  std::lock_guard control(impl_->control);
  auto cq = std::make_unique<Cq::Impl>();
  if (!cq_create(cq.get(), entries, impl_->grace)) {
    cq_destroy(cq.get());
    return nullptr;
  }
  cq->handle.impl_ = cq.get();
  Cq* h = &cq->handle;
  impl_->cqs.push_back(std::move(cq));
  return h;
}

void Device::destroy_cq(Cq* cq) {
  std::lock_guard control(impl_->control);
  auto& v = impl_->cqs;
  for (size_t i = 0; i < v.size(); i++) {
    if (&v[i]->handle == cq) {
      cq_destroy(v[i].get());
      v.erase(v.begin() + long(i));
      return;
    }
  }
}

size_t Device::qp_count() const { return impl_->qps.size(); }

Qp* Device::create_qp(const QpCaps& caps) {
  DeviceImpl& d = *impl_;
  if (!caps.send_cq || !caps.recv_cq || caps.max_send_sge > kMaxSge || caps.max_recv_sge > kMaxSge ||
      caps.max_inline > kMaxInline || caps.max_send_wr == 0 || caps.max_recv_wr == 0 ||
      (caps.gsi && caps.type != QpType::kUd))
    return nullptr;
  std::lock_guard control(d.control);
  uint32_t qpn = 0;
  if (caps.gsi) {
    if (d.qp_table[kGsiQpn].load(std::memory_order_relaxed)) return nullptr;
    qpn = kGsiQpn;
  } else {
    // Round robin from the last one given out, wrapping, so a QPN comes back as late as
    // possible (a stale packet for an old connection then finds nobody, or a new PSN space).
    const uint32_t span = d.qp_table_size - kFirstQpn;
    for (uint32_t i = 0; i < span && qpn == 0; i++) {
      const uint32_t n = kFirstQpn + (d.next_qpn - kFirstQpn + i) % span;
      if (!d.qp_table[n].load(std::memory_order_relaxed)) qpn = n;
    }
    if (qpn == 0) return nullptr;
    d.next_qpn = qpn + 1;
  }
  auto qp = std::make_unique<Qp::Impl>();
  qp->qpn = qpn;
  qp->id = ++d.next_qp_id;
  if (qp->id == 0) qp->id = ++d.next_qp_id;  // 0 is "bound to no QP"
  qp->pd = caps.pd;
  qp->caps = caps;
  qp->send_cq = caps.send_cq;
  qp->recv_cq = caps.recv_cq;
  const uint32_t sq = rte_align32pow2(caps.max_send_wr + 1);
  qp->send_ring.allocate(sq);
  qp->recv_ring.allocate(rte_align32pow2(caps.max_recv_wr + 1));
  qp->req.sq.resize(sq);
  qp->req.mask = sq - 1;
  qp->resp.res.resize(kMaxReadResources);
  const size_t n = d.shards.size();
  Shard* owner = d.shards[caps.shard >= 0 ? size_t(caps.shard) % n : qpn % n].get();
  // A UD QP resolves each destination's MAC as its datagrams need it: on the shard that owns
  // the port's neighbour table, that is one lookup, shared by every QP sending there.
  if (caps.type == QpType::kUd) owner = owner->arp_owner;
  Shard& s = *owner;
  qp->shard.store(&s, std::memory_order_release);
  qp->handle.impl_ = qp.get();
  d.qp_table[qpn].store(qp.get(), std::memory_order_release);
  ControlCmd cmd;
  cmd.kind = ControlCmd::kAttachQp;
  cmd.qp = qp.get();
  d.run_control(s, cmd);
  Qp* h = &qp->handle;
  std::lock_guard lock(qps_mutex_);
  d.qps.push_back(std::move(qp));
  return h;
}

void Device::destroy_qp(Qp* handle) {
  DeviceImpl& d = *impl_;
  std::lock_guard control(d.control);
  Qp::Impl* qp = handle->impl_;
  d.qp_table[qp->qpn].store(nullptr, std::memory_order_release);
  ControlCmd cmd;
  cmd.kind = ControlCmd::kDetachQp;
  cmd.qp = qp;
  Shard* owner = qp->shard.load(std::memory_order_acquire);
  d.run_control(*owner, cmd);
  // Other shards look QPs up by number within one iteration only: one barrier each and none
  // can still hold this one.
  for (auto& s : d.shards) {
    if (s.get() == owner) continue;
    ControlCmd barrier;
    barrier.kind = ControlCmd::kBarrier;
    d.run_control(*s, barrier);
  }
  // Windows bound to it die with it (IBTA: a type-2 window is bound to one QP); detached, no
  // lcore can be using them through this QP any more.
  d.memory.invalidate_bound_to(qp->id);
  std::lock_guard lock(qps_mutex_);
  for (size_t i = 0; i < d.qps.size(); i++) {
    if (d.qps[i].get() == qp) {
      glue::add_counters(retired_, qp->counters);  // detached: no lcore writes them any more
      delete qp->migrate;
      d.qps.erase(d.qps.begin() + long(i));
      return;
    }
  }
}

static_assert(sizeof(Device::Counters) / sizeof(uint64_t) ==
                  std::size(Device::kCounterFields) + size_t(wire::Reject::kCount),
              "a new engine counter needs its row in Device::kCounterFields");

Device::Counters Device::counters() const {
  Counters c;
  for (const auto& s : impl_->shards) {
    c.rejected += s->rejects.total_rejected();
    for (size_t i = 0; i < size_t(wire::Reject::kCount); i++) c.rejects.count[i] += s->rejects.count[i];
    c.unknown_qp += s->unknown_qp;
    c.dispatched += s->dispatched;
    c.dispatch_dropped += s->dispatch_dropped;
    c.held_dropped += s->held_dropped;
    c.tx_dropped += s->tx_dropped;
  }
  if (impl_) c.pinned_at_deregister = impl_->memory.pinned_at_deregister();
  return c;
}

std::vector<Device::ShardLoad> Device::shard_loads() const {
  std::vector<ShardLoad> out;
  if (impl_ && (impl_->worker_lcores || impl_->config.count_app_load))
    for (const auto& s : impl_->shards) out.push_back(s->load);
  return out;
}

QpCounters Device::qp_totals() const {
  std::lock_guard lock(qps_mutex_);
  QpCounters sum = retired_;
  if (impl_)
    for (const auto& qp : impl_->qps) glue::add_counters(sum, qp->counters);
  return sum;
}

void Device::for_each_qp(const std::function<void(const Qp&)>& fn) const {
  std::lock_guard lock(qps_mutex_);
  if (!impl_) return;
  for (const auto& qp : impl_->qps) fn(qp->handle);
}

void Device::set_faults(const FaultConfig* f) {
  // Each shard swaps its switches between two iterations (a control request): a worker may be
  // in the middle of a burst through the old ones, which are freed here only afterwards.
  for (auto& s : impl_->shards) {
    ControlCmd cmd;
    cmd.kind = ControlCmd::kSetFaults;
    if (f && f->rx.any()) cmd.fault_rx = std::make_unique<FaultSwitch>(f->rx, f->seed * 2 + s->index);
    if (f && f->tx.any()) cmd.fault_tx = std::make_unique<FaultSwitch>(f->tx, f->seed * 2 + 1 + s->index);
    impl_->run_control(*s, cmd);
  }
}

// ---- Qp ------------------------------------------------------------------------------------

uint32_t Qp::qpn() const { return impl_->qpn; }

QpType Qp::type() const { return impl_->caps.type; }

QpState Qp::state() const { return impl_->state.load(std::memory_order_acquire); }

bool Qp::closed() const { return impl_->closed.load(std::memory_order_acquire); }

bool Qp::modify(QpState to, const QpAttr& attr) {
  ControlCmd cmd;
  cmd.kind = ControlCmd::kModifyQp;
  cmd.qp = impl_;
  cmd.to = to;
  cmd.attr = attr;
  Shard* s = impl_->shard.load(std::memory_order_acquire);
  return s->dev->run_control(*s, cmd);
}

namespace {

bool valid_send(const Qp::Impl& qp, const SendWr& wr) {
  if (uint8_t(wr.opcode) > uint8_t(WrOpcode::kLocalInv)) return false;
  // UD carries SEND ONLY (no immediate: the wire table has no UD_SEND_ONLY_WITH_IMMEDIATE).
  if (qp.caps.type == QpType::kUd &&
      (wr.opcode != WrOpcode::kSend || wr.ud.dest_ipv4 == 0 || wr.ud.remote_qpn > wire::kPsnMask))
    return false;
  if (wr.flags & kWrInline) {
    if (wr.inline_len > qp.caps.max_inline) return false;
  } else if (wr.num_sge > qp.caps.max_send_sge) {
    return false;
  }
  if ((wr.opcode == WrOpcode::kCompareSwap || wr.opcode == WrOpcode::kFetchAdd) &&
      (wr.flags & kWrInline))
    return false;
  if (wr.opcode == WrOpcode::kRead && (wr.flags & kWrInline)) return false;
  return qp.state.load(std::memory_order_relaxed) != QpState::kReset;
}

}  // namespace

bool Qp::post_send(const SendWr& wr) { return post_send_burst(&wr, 1); }

bool Qp::post_send_burst(const SendWr* wrs, unsigned n) {
  for (unsigned i = 0; i < n; i++)
    if (!valid_send(*impl_, wrs[i])) return false;
  return wr_enqueue(impl_->send_ring, wrs, n, impl_->caps.type == QpType::kUd);
}

unsigned Qp::open_send_slots(unsigned want) { return impl_->send_ring.free_slots(want); }

SendWr* Qp::send_slot(unsigned i) { return impl_->send_ring.slot(i); }

bool Qp::commit_send_slots(unsigned n) {
  bool ok = true;
  for (unsigned i = 0; i < n && ok; i++) ok = valid_send(*impl_, *send_slot(i));
  if (ok) impl_->send_ring.publish(n);  // the slots past n stay free
  return ok;
}

bool Qp::send_ring_empty() const { return impl_->send_ring.empty(); }

unsigned Qp::send_now() {
  Shard* s = impl_->shard.load(std::memory_order_acquire);
  return s->dev->drive_if_free([&] {
    if (!s->dev->config.count_app_load) return s->send_now(*impl_);
    const uint64_t t0 = rte_rdtsc();
    const unsigned work = s->send_now(*impl_);
    s->load.post_cycles += rte_rdtsc() - t0;
    s->load.post_turns++;
    return work;
  });
}

bool Qp::post_recv(const RecvWr& wr) { return post_recv_burst(&wr, 1); }

bool Qp::post_recv_burst(const RecvWr* wrs, unsigned n) {
  for (unsigned i = 0; i < n; i++)
    if (wrs[i].num_sge > impl_->caps.max_recv_sge) return false;
  if (impl_->state.load(std::memory_order_relaxed) == QpState::kReset) return false;
  return wr_enqueue(impl_->recv_ring, wrs, n);
}

Qp::Counters Qp::counters() const { return impl_->counters; }
uint64_t Qp::sends_completed() const { return impl_->sends_completed.load(std::memory_order_acquire); }
uint64_t Qp::recvs_completed() const { return impl_->recvs_completed.load(std::memory_order_acquire); }

// ---- names ---------------------------------------------------------------------------------

const char* wc_status_name(WcStatus s) {
  static const char* const kNames[] = {
      "success", "local_length", "local_protection", "local_qp_operation", "wr_flushed",
      "mw_bind", "remote_access", "remote_invalid_request", "remote_operation",
      "retry_exceeded", "rnr_retry_exceeded", "invalidation", "bad_response"};
  const size_t i = size_t(s);
  return i < sizeof(kNames) / sizeof(kNames[0]) ? kNames[i] : "invalid";
}

const char* qp_state_name(QpState s) {
  static const char* const kNames[] = {"RESET", "INIT", "RTR", "RTS", "ERROR"};
  const size_t i = size_t(s);
  return i < 5 ? kNames[i] : "invalid";
}

}  // namespace ndnic::nic
