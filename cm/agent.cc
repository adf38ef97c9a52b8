// The CM agent: its thread and lock, the wake-up fd, the loop that feeds QP1's MADs and the
// timers to the state machine, and the application API over both. What a MAD or a call does
// to a connection is the state machine's (state_machine.h); QP1 is MadIo's (mad_io.h).
#include "cm/agent.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <random>

#include "cm/mads.h"
#include "ndnic/port.h"

namespace ndnic::cm {

namespace {

/// With no timer due the thread still wakes now and then; nothing depends on it.
constexpr int kIdleWaitMs = 1000;
// How often established connections' QPs are looked at for a transport failure (a peer that
// vanished). Against the ~0.5 s an RC QP's retries take with rdma_cm's defaults, small.
constexpr int kTransportWatchMs = 20;
// Run to completion: when no application thread is inside an ND call, this thread is the only
// one that moves the device (its MADs, and the ACKs and timers of every QP), this often.
constexpr int kDriveTickMs = 1;

/// Comm IDs, TIDs and starting PSNs are what a host off the path would have to guess to forge
/// a MAD or a packet of a connection: from the kernel's CSPRNG (getrandom blocks only until
/// it is seeded, early at boot), never from a generator seeded by the clock.
uint32_t secure_random32() {
  uint32_t v = 0;
  auto* p = reinterpret_cast<uint8_t*>(&v);
  for (size_t got = 0; got < sizeof v;) {
    const ssize_t n = getrandom(p + got, sizeof v - got, 0);
    if (n > 0) {
      got += size_t(n);
    } else if (n < 0 && errno != EINTR) {
      return std::random_device{}();  // no getrandom(2): libstdc++ reads the kernel's pool
    }
  }
  return v;
}

/// The configuration with an MTU the CM can name (1024 when it cannot).
Config usable(Config c) {
  if (mads::mtu_code(c.path_mtu) == 0) c.path_mtu = 1024;
  return c;
}

/// The application's RC QP as the state machine moves it.
class NicQp : public AppQp {
 public:
  explicit NicQp(nic::Qp* qp) : qp_(qp) {}
  uint32_t qpn() const override { return qp_->qpn(); }
  bool to_rtr(const Connection& c) override {
    if (qp_->state() == nic::QpState::kReset && !qp_->modify(nic::QpState::kInit, {})) return false;
    return qp_->state() == nic::QpState::kInit && qp_->modify(nic::QpState::kRtr, attr(c));
  }
  bool to_rts(const Connection& c) override {
    return qp_->state() == nic::QpState::kRtr && qp_->modify(nic::QpState::kRts, attr(c));
  }
  void to_error() override { qp_->modify(nic::QpState::kError, {}); }
  bool failed() const override { return qp_->state() == nic::QpState::kError; }

 private:
  static nic::QpAttr attr(const Connection& c) {
    nic::QpAttr a;
    a.remote_qpn = c.peer_qpn;
    a.rq_psn = c.rq_psn;
    a.sq_psn = c.sq_psn;
    a.path_mtu = c.mtu;
    a.dest_ipv4 = c.peer_ipv4;
    // Both ends derive the RC flows' UDP source port from the REQ's flow label, as rxe does.
    a.udp_src_port = mads::udp_sport(c.flow_label);
    a.retry_cnt = c.retry_count;
    a.rnr_retry = c.rnr_retry_count;
    a.timeout = c.ack_timeout;
    a.max_rd_atomic = c.initiator_depth;
    a.max_dest_rd_atomic = c.responder_resources;
    return a;
  }
  nic::Qp* qp_;
};

}  // namespace

// ---- the state machine's world (called under mu_) ------------------------------------------

void Agent::World::send(uint32_t dest_ipv4, const uint8_t* mad, ConnId owner) { a_.io_.send(dest_ipv4, mad, owner); }
void Agent::World::post(std::function<void()> f) { a_.pending_.push_back(std::move(f)); }
void Agent::World::requests_changed() { a_.requests_cv_.notify_all(); }
Clock::time_point Agent::World::now() { return Clock::now(); }
uint32_t Agent::World::random32() { return secure_random32(); }

// ---- start, stop -----------------------------------------------------------------------------

Agent::Agent(nic::Device& dev, const glue::Port& port, Config config, DropTx drop_tx)
    : dev_(dev), cfg_(usable(std::move(config))), io_(dev, cfg_, std::move(drop_tx)),
      sm_(cfg_, port.ipv4(), mads::ca_guid(port.mac().addr_bytes), world_) {}

Agent::~Agent() { stop(); }

bool Agent::start() {
  if (thread_.joinable()) return true;
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    error_ = "cm agent: no CQs, buffers or eventfd";
    stop();
    return false;
  }
  bool opened;
  {
    std::lock_guard lk(mu_);
    opened = io_.open(&error_);
  }
  if (!opened) {
    stop();
    return false;
  }
  stopping_ = false;
  thread_ = std::thread(&Agent::run, this);
  return true;
}

void Agent::stop() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) {
    wake();
    thread_.join();
  }
  std::lock_guard lk(mu_);
  io_.close();
  if (wake_fd_ >= 0) close(wake_fd_);
  wake_fd_ = -1;
  sm_.clear();
  pending_.clear();
  requests_cv_.notify_all();
}

void Agent::wake() {
  const uint64_t one = 1;
  if (wake_fd_ >= 0) {
    [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof one);
  }
}

// ---- the thread --------------------------------------------------------------------------

void Agent::run() {
  pollfd fds[3] = {{io_.recv_fd(), POLLIN, 0}, {io_.send_fd(), POLLIN, 0}, {wake_fd_, POLLIN, 0}};
  const bool drive = dev_.app_driven();
  for (;;) {
    if (drive) dev_.progress();
    const int wait_ms = step(drive);
    if (wait_ms < 0) break;
    deliver();
    if (wait_ms > 0) ::poll(fds, 3, wait_ms);
    uint64_t v;
    for (const pollfd& p : fds) {
      [[maybe_unused]] ssize_t n = read(p.fd, &v, sizeof v);
    }
  }
}

int Agent::step(bool drive) {
  std::lock_guard lk(mu_);
  if (stopping_) return -1;
  drain();
  sm_.fire_timers(Clock::now());
  const bool watching = sm_.watch_transport();
  // Arm, then look once more: a completion that landed before arm() would not wake us.
  io_.arm();
  if (drain() != 0 || !pending_.empty()) return 0;
  const auto next = sm_.next_deadline();
  const auto now = Clock::now();
  int wait_ms = next == Clock::time_point::max()
                    ? kIdleWaitMs
                    : int(std::clamp<int64_t>(
                          std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count() + 1, 0,
                          kIdleWaitMs));
  if (watching) wait_ms = std::min(wait_ms, kTransportWatchMs);
  if (drive) wait_ms = std::min(wait_ms, kDriveTickMs);
  return wait_ms;
}

unsigned Agent::drain() {
  return io_.drain_recv([this](uint32_t src, const wire::cm::CmMad& mad) { sm_.on_mad(src, mad); }) +
         io_.drain_send([this](ConnId owner) { sm_.on_send_error(owner); });
}

void Agent::deliver() {
  std::vector<std::function<void()>> todo;
  {
    std::lock_guard lk(mu_);
    todo.swap(pending_);
  }
  for (auto& f : todo) f();
}

// ---- application API -------------------------------------------------------------------

uint16_t Agent::listen(uint16_t port, std::function<void(uint16_t)> on_request, size_t backlog) {
  std::lock_guard lk(mu_);
  return sm_.listen(port, std::move(on_request), backlog);
}

void Agent::unlisten(uint16_t port) {
  std::lock_guard lk(mu_);
  sm_.unlisten(port);
  wake();
}

bool Agent::get_request(uint16_t port, Request* out, int timeout_ms) {
  std::unique_lock lk(mu_);
  const auto until = Clock::now() + std::chrono::milliseconds(std::max(timeout_ms, 0));
  for (;;) {
    switch (sm_.take_request(port, out)) {
      case StateMachine::Take::kTaken: return true;
      case StateMachine::Take::kNoListener: return false;
      case StateMachine::Take::kEmpty: break;
    }
    if (requests_cv_.wait_until(lk, until) == std::cv_status::timeout && sm_.pending_requests(port) == 0)
      return false;
  }
}

ConnId Agent::connect(const ConnectParams& p, Callback cb) {
  if (!p.qp || !StateMachine::connect_args_ok(p)) return 0;
  if (p.qp->state() == nic::QpState::kReset && !p.qp->modify(nic::QpState::kInit, {})) return 0;
  if (p.qp->state() != nic::QpState::kInit) return 0;
  std::lock_guard lk(mu_);
  if (!io_.is_open()) return 0;
  const ConnId id = sm_.connect(p, std::make_unique<NicQp>(p.qp), std::move(cb));
  wake();
  return id;
}

bool Agent::complete_connect(ConnId id) {
  std::lock_guard lk(mu_);
  const bool done = sm_.complete_connect(id);
  wake();
  return done;
}

bool Agent::accept(ConnId id, const AcceptParams& p, Callback cb) {
  if (!p.qp) return false;
  std::lock_guard lk(mu_);
  const bool ok = sm_.accept(id, p, std::make_unique<NicQp>(p.qp), std::move(cb));
  wake();
  return ok;
}

bool Agent::reject(ConnId id, std::span<const uint8_t> private_data) {
  std::lock_guard lk(mu_);
  const bool ok = sm_.reject(id, private_data);
  if (ok) wake();
  return ok;
}

bool Agent::disconnect(ConnId id) {
  std::lock_guard lk(mu_);
  const bool ok = sm_.disconnect(id);
  if (ok) wake();
  return ok;
}

void Agent::detach(ConnId id) {
  std::lock_guard lk(mu_);
  sm_.detach(id);
}

uint16_t Agent::local_port(ConnId id) const {
  std::lock_guard lk(mu_);
  return sm_.local_port(id);
}

State Agent::state(ConnId id) const {
  std::lock_guard lk(mu_);
  return sm_.state(id);
}

bool Agent::peer_private_data(ConnId id, std::vector<uint8_t>* out) const {
  std::lock_guard lk(mu_);
  return sm_.peer_private_data(id, out);
}

Agent::Counters Agent::counters() const {
  std::lock_guard lk(mu_);
  Counters c = sm_.counters();
  const Counters& io = io_.counters();
  c.mads_sent = io.mads_sent;
  c.mads_received = io.mads_received;
  c.dropped_tx = io.dropped_tx;
  c.bad_mads += io.bad_mads;
  return c;
}

size_t Agent::connection_count() const {
  std::lock_guard lk(mu_);
  return sm_.connection_count();
}

size_t Agent::pending_requests(uint16_t port) const {
  std::lock_guard lk(mu_);
  return sm_.pending_requests(port);
}

}  // namespace ndnic::cm
