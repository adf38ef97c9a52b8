// The ndnic provider through the libfabric API alone (FI_PROVIDER_PATH names the build's
// fabric/), two processes joined by vhost-user. main() forks the peer before either starts EAL
// (each process's FI_NDNIC_* settings are its own): the peer listens and plays its half of each
// scenario, named on a socketpair; the test process plays the active half and checks its own,
// and the peer's verdict comes back on the socketpair. Every wait has a deadline: nothing hangs.
// Needs root (vhost-user). With --getinfo-only it calls fi_getinfo once and says what came back
// (the bad-settings tests run it with their own environment).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

namespace {

constexpr char kActiveIp[] = "198.18.80.1";
constexpr char kPeerIp[] = "198.18.80.2";
constexpr char kService[] = "7471";
constexpr int kWaitMs = 10000;
constexpr size_t kBig = 64 * 1024;  ///< 64 packets at path MTU 1024
constexpr uint64_t kImm = 0x0badcafe;

std::string g_sock;   ///< the vhost-user socket
int g_ctl = -1;       ///< this process's end of the socketpair
fid_pep* g_pep = nullptr;  ///< the peer's passive endpoint

// ---- the libfabric objects of one process --------------------------------------------------

fi_info* hints() {
  fi_info* h = fi_allocinfo();
  h->ep_attr->type = FI_EP_MSG;
  h->caps = FI_MSG | FI_RMA;
  h->mode = FI_RX_CQ_DATA;
  h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  h->fabric_attr->prov_name = strdup("ndnic");
  return h;
}

struct Side {
  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_eq* eq = nullptr;
  std::vector<uint8_t> buf = std::vector<uint8_t>(2 * kBig);
  fid_mr* mr = nullptr;
  std::string error;

  /// getinfo (node/service as given), fabric, domain, EQ, and a registered buffer.
  bool open(const char* node, const char* service, uint64_t flags) {
    fi_info* h = hints();
    int r = fi_getinfo(FI_VERSION(1, 17), node, service, flags, h, &info);
    fi_freeinfo(h);
    if (r) return fail("fi_getinfo", r);
    if ((r = fi_fabric(info->fabric_attr, &fabric, nullptr))) return fail("fi_fabric", r);
    if ((r = fi_domain(fabric, info, &domain, nullptr))) return fail("fi_domain", r);
    fi_eq_attr ea{};
    ea.wait_obj = FI_WAIT_UNSPEC;
    if ((r = fi_eq_open(fabric, &ea, &eq, nullptr))) return fail("fi_eq_open", r);
    r = fi_mr_reg(domain, buf.data(), buf.size(), FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ |
                  FI_REMOTE_WRITE, 0, 0, 0, &mr, nullptr);
    if (r) return fail("fi_mr_reg", r);
    return true;
  }
  bool fail(const char* what, int r) {
    error = std::string(what) + ": " + fi_strerror(-r);
    return false;
  }
};

/// One connected endpoint with its own CQs (FI_CQ_FORMAT_DATA).
struct Conn {
  fid_ep* ep = nullptr;
  fid_cq* tx = nullptr;
  fid_cq* rx = nullptr;

  int open(Side& s, fi_info* info, size_t tx_cq_size = 256) {
    fi_cq_attr ca{};
    ca.format = FI_CQ_FORMAT_DATA;
    ca.wait_obj = FI_WAIT_FD;
    ca.size = tx_cq_size;
    int r = fi_cq_open(s.domain, &ca, &tx, nullptr);
    ca.size = 256;
    if (!r) r = fi_cq_open(s.domain, &ca, &rx, nullptr);
    if (!r) r = fi_endpoint(s.domain, info, &ep, nullptr);
    if (!r) r = fi_ep_bind(ep, &s.eq->fid, 0);
    if (!r) r = fi_ep_bind(ep, &tx->fid, FI_TRANSMIT);
    if (!r) r = fi_ep_bind(ep, &rx->fid, FI_RECV);
    if (!r) r = fi_enable(ep);
    return r;
  }
  void close() {
    if (ep) fi_close(&ep->fid);
    if (tx) fi_close(&tx->fid);
    if (rx) fi_close(&rx->fid);
    ep = nullptr;
    tx = rx = nullptr;
  }
};

/// A completion, or the error entry in its place (err != 0).
struct Comp {
  fi_cq_data_entry e{};
  int err = 0;
  int prov_errno = 0;
  std::string text;
  bool timed_out = false;
};

Comp next(fid_cq* cq, int timeout_ms = kWaitMs) {
  Comp c;
  const ssize_t n = fi_cq_sread(cq, &c.e, 1, nullptr, timeout_ms);
  if (n == 1) return c;
  if (n == -FI_EAVAIL) {
    fi_cq_err_entry err{};
    if (fi_cq_readerr(cq, &err, 0) == 1) {
      c.err = err.err;
      c.prov_errno = err.prov_errno;
      c.e.op_context = err.op_context;
      c.e.flags = err.flags;
      char buf[256];
      c.text = fi_cq_strerror(cq, err.prov_errno, err.err_data, buf, sizeof buf);
      return c;
    }
  }
  c.timed_out = true;
  return c;
}

/// The next EQ event (or the error entry's err, negated, in `event`'s place).
struct Ev {
  uint32_t event = 0;
  int err = 0;
  fi_info* info = nullptr;
  std::vector<uint8_t> data;
  bool timed_out = false;
};

Ev next_event(fid_eq* eq, int timeout_ms = kWaitMs) {
  Ev ev;
  std::vector<uint8_t> buf(sizeof(fi_eq_cm_entry) + 256);
  const ssize_t n = fi_eq_sread(eq, &ev.event, buf.data(), buf.size(), timeout_ms, 0);
  if (n == -FI_EAVAIL) {
    fi_eq_err_entry err{};
    fi_eq_readerr(eq, &err, 0);
    ev.err = err.err;
    if (err.err_data) ev.data.assign(static_cast<uint8_t*>(err.err_data),
                                     static_cast<uint8_t*>(err.err_data) + err.err_data_size);
    return ev;
  }
  if (n < ssize_t(sizeof(fi_eq_cm_entry))) {
    ev.timed_out = n == -FI_EAGAIN;
    return ev;
  }
  auto* e = reinterpret_cast<fi_eq_cm_entry*>(buf.data());
  ev.info = e->info;
  ev.data.assign(buf.data() + sizeof *e, buf.data() + n);
  return ev;
}

/// Drops what a closed connection left on the EQ, so the next scenario starts clean.
void drain(fid_eq* eq) {
  for (;;) {
    Ev ev = next_event(eq, 0);
    if (ev.timed_out) return;
    if (ev.info) fi_freeinfo(ev.info);
  }
}

void fill(uint8_t* p, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; i++) p[i] = uint8_t(seed + i * 7);
}
bool filled(const uint8_t* p, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != uint8_t(seed + i * 7)) return false;
  return true;
}

// ---- the peer process ---------------------------------------------------------------------

/// The peer's half of one scenario, on an accepted connection; "ok" or what went wrong.
using PeerPart = std::string (*)(Side&, Conn&);

/// Posts a receive of `len` bytes at the buffer's start, context 1.
bool post_recv(Side& s, Conn& c, size_t len, size_t at = 0) {
  return fi_recv(c.ep, s.buf.data() + at, len, fi_mr_desc(s.mr), 0, reinterpret_cast<void*>(1 + at)) == 0;
}

std::string peer_send_imm(Side& s, Conn& c) {
  Comp r = next(c.rx);
  if (r.timed_out || r.err) return "no receive completion: " + r.text;
  if (!(r.e.flags & FI_RECV) || !(r.e.flags & FI_REMOTE_CQ_DATA)) return "receive flags lack FI_RECV|FI_REMOTE_CQ_DATA";
  if (r.e.data != kImm) return "immediate data " + std::to_string(r.e.data);
  if (r.e.len != 5 || std::memcmp(s.buf.data(), "hello", 5)) return "wrong message";
  // Answer with an inject: no completion here, a receive at the test process.
  return fi_inject(c.ep, "pong", 4, 0) == 0 ? "ok" : "fi_inject failed";
}

std::string peer_big(Side& s, Conn& c) {
  Comp r = next(c.rx);
  if (r.timed_out || r.err) return "no receive completion: " + r.text;
  if (r.e.len != kBig || !filled(s.buf.data(), kBig, 3))
    return "64 KiB message damaged, len " + std::to_string(r.e.len);
  return "ok";
}

std::string peer_rma(Side& s, Conn& c) {
  fill(s.buf.data() + kBig, 4096, 9);
  // Tell the active side where: address and key in one message.
  uint64_t where[2] = {reinterpret_cast<uint64_t>(s.buf.data() + kBig), fi_mr_key(s.mr)};
  if (fi_send(c.ep, where, sizeof where, nullptr, 0, nullptr)) return "fi_send failed";
  Comp t = next(c.tx);
  if (t.timed_out || t.err) return "address send failed: " + t.text;
  // The active side reads, writes, then signals with writedata (which takes our receive).
  Comp r = next(c.rx);
  if (r.timed_out || r.err) return "no writedata completion: " + r.text;
  if (!(r.e.flags & FI_REMOTE_WRITE) || r.e.data != kImm) return "writedata completion wrong";
  return filled(s.buf.data() + kBig, 4096, 42) ? "ok" : "the write did not land";
}

std::string peer_msg_forms(Side& s, Conn& c) {
  uint64_t where[2] = {reinterpret_cast<uint64_t>(s.buf.data() + kBig), fi_mr_key(s.mr)};
  if (fi_send(c.ep, where, sizeof where, nullptr, 0, nullptr)) return "fi_send failed";
  if (Comp t = next(c.tx); t.timed_out || t.err) return "address send failed: " + t.text;
  // The active side injects a write, then a two-piece sendmsg with data: in order on the QP.
  Comp r = next(c.rx);
  if (r.timed_out || r.err) return "no sendmsg completion: " + r.text;
  if (r.e.len != 300 || !(r.e.flags & FI_REMOTE_CQ_DATA) || r.e.data != kImm) return "sendmsg completion wrong";
  if (!filled(s.buf.data(), 300, 5)) return "sendmsg's two pieces did not arrive as one message";
  return filled(s.buf.data() + kBig, 100, 77) ? "ok" : "the injected write did not land";
}

std::string peer_wait_shutdown(Side& s, Conn& c) {
  Ev ev = next_event(s.eq);
  if (ev.event != FI_SHUTDOWN) return "no FI_SHUTDOWN (event " + std::to_string(ev.event) + ")";
  Comp r = next(c.rx, 2000);  // the receive posted before the connection went is flushed
  if (r.err != FI_ECANCELED) return "the posted receive was not flushed (" + r.text + ")";
  return "ok";
}

std::string peer_recv_too_small(Side&, Conn& c) {
  Comp r = next(c.rx);
  if (r.err != FI_ETRUNC) return "receive completion is not FI_ETRUNC: " + r.text;
  return r.text.find("too small") != std::string::npos ? "ok" : "strerror says: " + r.text;
}

/// The connection ends (the active side's QP failed and its CM said DREQ); nothing else.
std::string peer_wait_shutdown_only(Side& s, Conn&) {
  Ev ev = next_event(s.eq);
  return ev.event == FI_SHUTDOWN ? "ok" : "no FI_SHUTDOWN (event " + std::to_string(ev.event) + ")";
}

std::string peer_shutdown(Side& s, Conn& c) {
  if (fi_shutdown(c.ep, 0)) return "fi_shutdown failed";
  Ev ev = next_event(s.eq);
  return ev.event == FI_SHUTDOWN ? "ok" : "no local FI_SHUTDOWN";
}

std::string peer_ignore(Side&, Conn&) { return "ok"; }

/// The peer process vanishes with the connection up: no DREQ, no ACK, nothing more.
std::string peer_vanish(Side&, Conn&) {
  if (write(g_ctl, "ok", 2) < 0) _exit(1);
  _exit(0);
}

struct Scenario {
  const char* name;
  size_t recv_len;   ///< receive posted before fi_accept (0: none)
  PeerPart part;
  size_t recvs = 1;  ///< how many of them, side by side in the buffer
};
constexpr Scenario kScenarios[] = {
    {"send_imm", 64, peer_send_imm},         {"big", kBig, peer_big},
    {"rma", 64, peer_rma},                   {"bad_key", 64, peer_wait_shutdown},
    {"too_small", 16, peer_recv_too_small},  {"active_shutdown", 64, peer_wait_shutdown},
    {"peer_shutdown", 64, peer_shutdown},    {"reject", 0, peer_ignore},
    {"msg_forms", 512, peer_msg_forms},      {"rnr", 0, peer_wait_shutdown_only},
    {"overrun", 64, peer_wait_shutdown_only, 16},
    {"vanish", 64, peer_vanish},
};

std::string peer_scenario(Side& s, const Scenario& sc) {
  Ev req = next_event(s.eq);
  if (req.event != FI_CONNREQ || !req.info) return "no FI_CONNREQ";
  if (req.data != std::vector<uint8_t>{'h', 'i'}) return "connect data not delivered as sent";
  if (!std::strcmp(sc.name, "reject")) {
    const int r = fi_reject(g_pep, req.info->handle, "no", 2);
    fi_freeinfo(req.info);
    return r == 0 ? "ok" : "fi_reject failed";
  }
  Conn c;
  int r = c.open(s, req.info);
  fi_freeinfo(req.info);
  if (r) return std::string("endpoint: ") + fi_strerror(-r);
  for (size_t i = 0; sc.recv_len && i < sc.recvs; i++)
    if (!post_recv(s, c, sc.recv_len, i * sc.recv_len)) return "fi_recv failed";
  if ((r = fi_accept(c.ep, "ok", 2))) return std::string("fi_accept: ") + fi_strerror(-r);
  Ev up = next_event(s.eq);
  std::string verdict = up.event == FI_CONNECTED ? sc.part(s, c) : "no FI_CONNECTED";
  c.close();
  drain(s.eq);
  return verdict;
}

int peer_main() {
  setenv("FI_NDNIC_DEV", ("net_vhost0,iface=" + g_sock + ",queues=1,client=1").c_str(), 1);
  setenv("FI_NDNIC_IP", kPeerIp, 1);
  setenv("FI_NDNIC_EAL_ARGS", "-l 1", 1);
  // What the peer asks of the test process's QP (in its REP): two RNR retries, then an error.
  // Every scenario but "rnr" posts its receives before it accepts.
  setenv("FI_NDNIC_RNR_RETRY", "2", 1);
  Side s;
  if (!s.open(nullptr, kService, FI_SOURCE) || fi_passive_ep(s.fabric, s.info, &g_pep, nullptr) ||
      fi_pep_bind(g_pep, &s.eq->fid, 0) || fi_listen(g_pep)) {
    std::fprintf(stderr, "peer: cannot listen: %s\n", s.error.c_str());
    return 1;
  }
  char name[64];
  for (ssize_t n; (n = read(g_ctl, name, sizeof name - 1)) > 0;) {
    name[n] = 0;
    std::string verdict = "no such scenario";
    for (const Scenario& sc : kScenarios)
      if (!std::strcmp(sc.name, name)) verdict = peer_scenario(s, sc);
    if (write(g_ctl, verdict.data(), verdict.size()) < 0) return 1;
  }
  fi_close(&g_pep->fid);
  return 0;
}

// ---- the test process ---------------------------------------------------------------------

Side* g_side = nullptr;

class Provider : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (g_side) return;  // one side per process, for every suite here
    setenv("FI_NDNIC_DEV", ("net_virtio_user0,path=" + g_sock + ",queues=1,server=1").c_str(), 1);
    setenv("FI_NDNIC_IP", kActiveIp, 1);
    setenv("FI_NDNIC_EAL_ARGS", "-l 0", 1);
    g_side = new Side;
    ASSERT_TRUE(g_side->open(kPeerIp, kService, 0)) << g_side->error;
  }

  /// Names the scenario to the peer and connects (connect data "hi"); false on failure.
  void start(const char* scenario, bool expect_connected = true, size_t tx_cq_size = 256) {
    ASSERT_GT(write(g_ctl, scenario, std::strlen(scenario)), 0);
    ASSERT_EQ(conn_.open(*g_side, g_side->info, tx_cq_size), 0);
    ASSERT_EQ(fi_recv(conn_.ep, s().buf.data() + kBig, 64, fi_mr_desc(s().mr), 0, nullptr), 0);
    ASSERT_EQ(fi_connect(conn_.ep, g_side->info->dest_addr, "hi", 2), 0);
    if (!expect_connected) return;
    Ev up = next_event(s().eq);
    ASSERT_EQ(up.event, uint32_t(FI_CONNECTED)) << "err " << up.err;
    EXPECT_EQ(up.data, (std::vector<uint8_t>{'o', 'k'}));  // the peer's accept data
  }
  /// The peer's verdict on its half.
  std::string verdict() {
    char buf[256];
    const ssize_t n = read(g_ctl, buf, sizeof buf);
    return n > 0 ? std::string(buf, size_t(n)) : "peer gone";
  }
  void TearDown() override {
    conn_.close();
    drain(s().eq);
  }
  Side& s() { return *g_side; }

  Conn conn_;
};

TEST_F(Provider, SendWithImmediateDataAndInjectBack) {
  start("send_imm");
  std::memcpy(s().buf.data(), "hello", 5);
  ASSERT_EQ(fi_senddata(conn_.ep, s().buf.data(), 5, fi_mr_desc(s().mr), kImm, 0, &conn_), 0);
  Comp t = next(conn_.tx);
  ASSERT_FALSE(t.timed_out);
  EXPECT_EQ(t.err, 0) << t.text;
  EXPECT_EQ(t.e.op_context, &conn_);
  EXPECT_TRUE(t.e.flags & FI_SEND);
  Comp r = next(conn_.rx);  // the peer's inject
  ASSERT_EQ(r.err, 0) << r.text;
  EXPECT_EQ(r.e.len, 4u);
  EXPECT_EQ(std::memcmp(s().buf.data() + kBig, "pong", 4), 0);
  EXPECT_EQ(verdict(), "ok");
}

TEST_F(Provider, MultiPacketMessageInFourPieces) {
  start("big");
  fill(s().buf.data(), kBig, 3);
  void* desc = fi_mr_desc(s().mr);
  iovec iov[4];
  void* descs[4] = {desc, desc, desc, desc};
  for (int i = 0; i < 4; i++) iov[i] = {s().buf.data() + i * kBig / 4, kBig / 4};
  ASSERT_EQ(fi_sendv(conn_.ep, iov, descs, 4, 0, nullptr), 0);
  Comp t = next(conn_.tx);
  ASSERT_FALSE(t.timed_out);
  EXPECT_EQ(t.err, 0) << t.text;
  EXPECT_EQ(verdict(), "ok");
}

TEST_F(Provider, ReadWriteAndWriteData) {
  start("rma");
  Comp r = next(conn_.rx);  // the peer's address and key
  ASSERT_EQ(r.err, 0) << r.text;
  uint64_t where[2];
  std::memcpy(where, s().buf.data() + kBig, sizeof where);
  uint8_t* local = s().buf.data();
  ASSERT_EQ(fi_read(conn_.ep, local, 4096, fi_mr_desc(s().mr), 0, where[0], where[1], nullptr), 0);
  Comp rd = next(conn_.tx);
  ASSERT_EQ(rd.err, 0) << rd.text;
  EXPECT_TRUE(rd.e.flags & FI_READ);
  EXPECT_TRUE(filled(local, 4096, 9));
  fill(local, 4096, 42);
  ASSERT_EQ(fi_write(conn_.ep, local, 4000, fi_mr_desc(s().mr), 0, where[0], where[1], nullptr), 0);
  ASSERT_EQ(fi_writedata(conn_.ep, local + 4000, 96, fi_mr_desc(s().mr), kImm, 0, where[0] + 4000, where[1], nullptr),
            0);
  for (int i = 0; i < 2; i++) {
    Comp w = next(conn_.tx);
    ASSERT_EQ(w.err, 0) << w.text;
    EXPECT_TRUE(w.e.flags & FI_WRITE);
  }
  EXPECT_EQ(verdict(), "ok");
}

TEST_F(Provider, MsgFormsAndInjectWrite) {
  start("msg_forms");
  Comp a = next(conn_.rx);
  ASSERT_EQ(a.err, 0) << a.text;
  uint64_t where[2];
  std::memcpy(where, s().buf.data() + kBig, sizeof where);
  uint8_t* local = s().buf.data();
  void* desc[2] = {fi_mr_desc(s().mr), fi_mr_desc(s().mr)};
  fill(local, 100, 77);
  ASSERT_EQ(fi_inject_write(conn_.ep, local, 100, 0, where[0], where[1]), 0);
  // Read it back in two pieces with readmsg (after the write: RC keeps them in order).
  iovec back[2] = {{local + 1000, 30}, {local + 1030, 70}};
  fi_rma_iov rma{where[0], 100, where[1]};
  fi_msg_rma rm{};
  rm.msg_iov = back;
  rm.desc = desc;
  rm.iov_count = 2;
  rm.rma_iov = &rma;
  rm.rma_iov_count = 1;
  rm.context = local;
  ASSERT_EQ(fi_readmsg(conn_.ep, &rm, FI_COMPLETION), 0);
  Comp rd = next(conn_.tx);  // the read's only: an inject has none
  ASSERT_EQ(rd.err, 0) << rd.text;
  EXPECT_EQ(rd.e.op_context, local);
  EXPECT_TRUE(filled(local + 1000, 100, 77));
  fill(local, 300, 5);
  iovec iov[2] = {{local, 200}, {local + 200, 100}};
  fi_msg m{};
  m.msg_iov = iov;
  m.desc = desc;
  m.iov_count = 2;
  m.context = &conn_;
  m.data = kImm;
  ASSERT_EQ(fi_sendmsg(conn_.ep, &m, FI_REMOTE_CQ_DATA | FI_COMPLETION), 0);
  Comp t = next(conn_.tx);
  ASSERT_EQ(t.err, 0) << t.text;
  EXPECT_EQ(t.e.op_context, &conn_);
  EXPECT_EQ(verdict(), "ok");
}

TEST_F(Provider, BadKeyIsARemoteAccessError) {
  start("bad_key");
  ASSERT_EQ(fi_read(conn_.ep, s().buf.data(), 64, fi_mr_desc(s().mr), 0, 0x1000, 0xdead, &conn_), 0);
  Comp c = next(conn_.tx);
  ASSERT_FALSE(c.timed_out);
  EXPECT_EQ(c.err, FI_EACCES);
  EXPECT_NE(c.prov_errno, 0);
  EXPECT_NE(c.text.find("remote access"), std::string::npos) << c.text;
  EXPECT_EQ(c.e.op_context, &conn_);
  EXPECT_EQ(verdict(), "ok");  // and the peer's connection went down with its receive flushed
}

TEST_F(Provider, ReceiveTooSmallIsAnErrorAtBothEnds) {
  start("too_small");
  ASSERT_EQ(fi_send(conn_.ep, s().buf.data(), 1000, fi_mr_desc(s().mr), 0, nullptr), 0);
  Comp c = next(conn_.tx);
  ASSERT_FALSE(c.timed_out);
  EXPECT_NE(c.err, 0);
  EXPECT_EQ(verdict(), "ok");
}

TEST_F(Provider, ShutdownFromTheActiveSide) {
  start("active_shutdown");
  ASSERT_EQ(fi_shutdown(conn_.ep, 0), 0);
  Ev ev = next_event(s().eq);
  EXPECT_EQ(ev.event, uint32_t(FI_SHUTDOWN));
  Comp r = next(conn_.rx, 2000);
  EXPECT_EQ(r.err, FI_ECANCELED) << r.text;  // our posted receive, flushed
  EXPECT_EQ(verdict(), "ok");
}

TEST_F(Provider, ShutdownFromThePeer) {
  start("peer_shutdown");
  Ev ev = next_event(s().eq);
  EXPECT_EQ(ev.event, uint32_t(FI_SHUTDOWN));
  EXPECT_EQ(verdict(), "ok");
}

TEST_F(Provider, RejectCarriesThePeersData) {
  start("reject", false);
  Ev ev = next_event(s().eq);
  EXPECT_EQ(ev.err, FI_ECONNREFUSED);
  EXPECT_EQ(ev.data, (std::vector<uint8_t>{'n', 'o'}));
  EXPECT_EQ(verdict(), "ok");
}

TEST_F(Provider, NoReceivePostedIsAnRnrErrorOnceTheRetriesAreSpent) {
  start("rnr");  // the peer posts no receive and asked (REP) for two RNR retries
  ASSERT_EQ(fi_send(conn_.ep, s().buf.data(), 64, fi_mr_desc(s().mr), 0, &conn_), 0);
  Comp c = next(conn_.tx);
  ASSERT_FALSE(c.timed_out);
  EXPECT_EQ(c.err, FI_ENORX) << c.text;
  EXPECT_EQ(c.e.op_context, &conn_);
  EXPECT_NE(c.text.find("RNR retries exhausted"), std::string::npos) << c.text;
  Ev ev = next_event(s().eq);  // the failed QP ends the connection, at both ends
  EXPECT_EQ(ev.event, uint32_t(FI_SHUTDOWN));
  EXPECT_EQ(verdict(), "ok");
}

TEST_F(Provider, CqOverrunIsReportedAfterTheCompletionsItKept) {
  constexpr size_t kCqSize = 4, kSends = 16;
  start("overrun", true, kCqSize);  // the peer has 16 receives posted
  for (size_t i = 0; i < kSends; i++)
    ASSERT_EQ(fi_send(conn_.ep, s().buf.data(), 8, fi_mr_desc(s().mr), 0, reinterpret_cast<void*>(100 + i)), 0);
  // Nobody reads the transmit CQ: the completions past its room are lost, the QP fails and the
  // connection ends.
  Ev ev = next_event(s().eq);
  EXPECT_EQ(ev.event, uint32_t(FI_SHUTDOWN));
  // The completions the CQ kept come first, in order; then the overrun, as an error entry once
  // and as every read's result after it.
  size_t kept = 0;
  fi_cq_data_entry e{};
  ssize_t n;
  while ((n = fi_cq_read(conn_.tx, &e, 1)) == 1) {
    EXPECT_EQ(e.op_context, reinterpret_cast<void*>(100 + kept));
    kept++;
  }
  EXPECT_GE(kept, kCqSize);
  EXPECT_LT(kept, kSends);
  ASSERT_EQ(n, -FI_EAVAIL);
  fi_cq_err_entry err{};
  ASSERT_EQ(fi_cq_readerr(conn_.tx, &err, 0), 1);
  EXPECT_EQ(err.err, FI_EOVERRUN);
  char text[256];
  const std::string why = fi_cq_strerror(conn_.tx, err.prov_errno, err.err_data, text, sizeof text);
  EXPECT_NE(why.find("overrun"), std::string::npos) << why;
  EXPECT_EQ(fi_cq_read(conn_.tx, &e, 1), -FI_EOVERRUN);
  EXPECT_EQ(fi_cq_sread(conn_.tx, &e, 1, nullptr, 100), -FI_EOVERRUN);
  EXPECT_EQ(verdict(), "ok");
}

// Last (the peer is gone after it): a send to a vanished peer ends in an error completion
// (transport retries exhausted) and the connection in FI_SHUTDOWN; nothing hangs.
class ProviderPeerGone : public Provider {};

TEST_F(ProviderPeerGone, SendToAVanishedPeerIsAnErrorCompletion) {
  start("vanish");
  EXPECT_EQ(verdict(), "ok");
  ASSERT_EQ(fi_send(conn_.ep, s().buf.data(), 64, fi_mr_desc(s().mr), 0, &conn_), 0);
  Comp c = next(conn_.tx, 30000);
  ASSERT_FALSE(c.timed_out);
  EXPECT_EQ(c.err, FI_ETIMEDOUT) << c.text;
  EXPECT_EQ(c.e.op_context, &conn_);
  EXPECT_NE(c.text.find("retries exhausted"), std::string::npos) << c.text;
  Ev ev = next_event(s().eq, 30000);
  EXPECT_EQ(ev.event, uint32_t(FI_SHUTDOWN));
}

/// Runs this binary with --getinfo-only under `env`; its exit status and stderr.
std::pair<int, std::string> getinfo_with(const std::vector<std::string>& env) {
  int p[2];
  if (pipe(p)) return {-1, "pipe"};
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(p[1], 2);
    close(p[0]);
    unsetenv("FI_NDNIC_DEV");
    unsetenv("FI_NDNIC_IP");
    unsetenv("FI_NDNIC_MTU");
    unsetenv("FI_NDNIC_RNR_RETRY");
    for (const std::string& kv : env) putenv(const_cast<char*>(kv.c_str()));
    execl("/proc/self/exe", "provider_test", "--getinfo-only", nullptr);
    _exit(127);
  }
  close(p[1]);
  std::string err;
  char buf[512];
  for (ssize_t n; (n = read(p[0], buf, sizeof buf)) > 0;) err.append(buf, size_t(n));
  close(p[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, err};
}

TEST(ProviderSettings, MissingOrWrongValuesFailGetinfoWithAClearMessage) {
  auto [rc, err] = getinfo_with({"FI_NDNIC_IP=198.18.80.9"});
  EXPECT_EQ(rc, 2);
  EXPECT_NE(err.find("FI_NDNIC_DEV is not set"), std::string::npos) << err;
  std::tie(rc, err) = getinfo_with({"FI_NDNIC_DEV=net_null0"});
  EXPECT_EQ(rc, 2);
  EXPECT_NE(err.find("FI_NDNIC_IP is not set"), std::string::npos) << err;
  std::tie(rc, err) = getinfo_with({"FI_NDNIC_DEV=net_null0", "FI_NDNIC_IP=1.2.3"});
  EXPECT_EQ(rc, 2);
  EXPECT_NE(err.find("FI_NDNIC_IP=1.2.3 is not an IPv4 address"), std::string::npos) << err;
  std::tie(rc, err) = getinfo_with({"FI_NDNIC_DEV=net_null0", "FI_NDNIC_IP=198.18.80.9", "FI_NDNIC_MTU=1500"});
  EXPECT_EQ(rc, 2);
  EXPECT_NE(err.find("FI_NDNIC_MTU=1500 is not a RoCE path MTU"), std::string::npos) << err;
  std::tie(rc, err) =
      getinfo_with({"FI_NDNIC_DEV=net_null0", "FI_NDNIC_IP=198.18.80.9", "FI_NDNIC_RNR_RETRY=8"});
  EXPECT_EQ(rc, 2);
  EXPECT_NE(err.find("FI_NDNIC_RNR_RETRY=8 is not an RNR retry count"), std::string::npos) << err;
  std::tie(rc, err) = getinfo_with({"FI_NDNIC_DEV=no_such_device0", "FI_NDNIC_IP=198.18.80.9"});
  EXPECT_EQ(rc, 2);
  EXPECT_NE(err.find("FI_NDNIC_DEV=no_such_device0"), std::string::npos) << err;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && !std::strcmp(argv[1], "--getinfo-only")) {
    fi_info* h = hints();
    fi_info* info = nullptr;
    const int r = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, h, &info);
    fi_freeinfo(h);
    fi_freeinfo(info);
    return r == 0 ? 0 : 2;
  }
  ::testing::InitGoogleTest(&argc, argv);
  if (geteuid() != 0) {
    std::fprintf(stderr, "FAIL: vhost-user ports need root; not skipping\n");
    return 1;
  }
  char dir[] = "/tmp/ndnic-fabric-test.XXXXXX";
  if (!mkdtemp(dir)) return 1;
  g_sock = std::string(dir) + "/vhost.sock";
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv)) return 1;
  const pid_t peer = fork();
  if (peer == 0) {
    close(sv[0]);
    g_ctl = sv[1];
    _exit(peer_main());
  }
  close(sv[1]);
  g_ctl = sv[0];
  const int rc = RUN_ALL_TESTS();
  close(g_ctl);  // the peer's loop ends
  int status = 0;
  waitpid(peer, &status, 0);
  std::string rm = std::string("rm -rf ") + dir;
  if (std::system(rm.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", dir);
  return rc != 0 ? rc : (WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1);
}
