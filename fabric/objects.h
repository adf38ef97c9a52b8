// The provider's objects: each embeds the libfabric fid it hands out (first member, so the fid
// pointer is the object's) and what it stands for in the engine or the CM.
#pragma once

#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "cm/cm.h"
#include "fabric/runtime.h"
#include "ndnic/nic.h"

namespace ndnic::fabric {

/// CM private data carries a one-byte length first: the IB CM pads every message to its fixed
/// size, and libfabric hands the peer exactly what the sender gave (as the verbs provider does).
constexpr size_t kCmDataLen = cm::kConnectDataLen - 1;
constexpr size_t kQueueDepth = 1024;   ///< default and largest tx/rx size of an endpoint
constexpr size_t kMaxCqEntries = 1u << 20;

struct Fabric {
  fid_fabric fab{};
  Runtime* rt = nullptr;
};

struct Domain {
  fid_domain dom{};
  Fabric* fabric = nullptr;
  Runtime* rt = nullptr;
  uint32_t pd = 0;   ///< the domain's protection domain: its regions and QPs
  std::atomic<int> refs{0};  ///< objects opened on it (close refuses while any)
};

struct Mr {
  fid_mr mr{};
  Domain* domain = nullptr;
  uint32_t lkey = 0;
};

/// A completion queue over one engine CQ. Errors wait at the front for fi_cq_readerr.
struct Cq {
  fid_cq cq{};
  Domain* domain = nullptr;
  nic::Cq* ncq = nullptr;
  fi_cq_format format = FI_CQ_FORMAT_CONTEXT;
  fi_wait_obj wait_obj = FI_WAIT_NONE;
  std::mutex mu;
  std::deque<nic::Completion> held;       ///< polled from the engine, not yet returned
  nic::Completion last_error{};           ///< err_data of the last fi_cq_readerr points here
  std::atomic<bool> signaled{false};      ///< fi_cq_signal: the next sread returns at once
  bool overrun_said = false;              ///< the FI_EOVERRUN error entry was read
  std::atomic<int> refs{0};               ///< endpoints bound to it
};

/// One queued EQ event: a plain or CM entry (bytes as fi_eq_read copies them) or an error.
struct EqEvent {
  uint32_t event = 0;
  std::vector<uint8_t> bytes;
  bool error = false;
  fi_eq_err_entry err{};
  std::vector<uint8_t> err_data;
};

struct Eq {
  fid_eq eq{};
  Fabric* fabric = nullptr;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<EqEvent> q;
  std::vector<uint8_t> last_err_data;   ///< what the last readerr's err_data points to
  int efd = -1;                          ///< readable while events wait (FI_GETWAIT)
  /// Queues an event and wakes readers; safe from any thread (the CM agent's).
  void push(EqEvent e);
};

/// The handle of an FI_CONNREQ event: a request waiting for fi_accept or fi_reject.
struct Connreq {
  fid handle{};
  cm::Request req;
};

struct Ep;
/// What the agent's callbacks reach the endpoint by: cleared when the endpoint closes, since a
/// callback already in flight may still run.
struct EpLink {
  std::mutex mu;
  Ep* ep = nullptr;
};

struct Ep {
  fid_ep ep{};
  Domain* domain = nullptr;
  Runtime* rt = nullptr;
  fi_info* info = nullptr;
  Cq* tx_cq = nullptr;
  Cq* rx_cq = nullptr;
  bool tx_selective = false;   ///< FI_SELECTIVE_COMPLETION on the transmit binding
  bool rx_selective = false;
  Eq* eq = nullptr;
  nic::Qp* qp = nullptr;
  nic::Cq* spare_cq = nullptr; ///< the engine CQ of a side bound to no CQ (its completions are dropped)
  Connreq* connreq = nullptr;  ///< passive side: the request this endpoint accepts
  cm::ConnId conn = 0;
  bool connected = false;
  bool shutdown_sent = false;  ///< FI_SHUTDOWN queued: it is said once
  sockaddr_in local{}, peer{};
  std::shared_ptr<EpLink> link = std::make_shared<EpLink>();
  std::mutex mu;               ///< conn, connected, shutdown_sent against the agent thread
};

struct Pep {
  fid_pep pep{};
  Fabric* fabric = nullptr;
  Runtime* rt = nullptr;
  fi_info* info = nullptr;
  Eq* eq = nullptr;
  uint16_t port = 0;           ///< bound (setname, src_addr) or, after fi_listen, the one listened on
  bool listening = false;
  std::shared_ptr<std::mutex> alive_mu = std::make_shared<std::mutex>();
  std::shared_ptr<Pep*> alive = std::make_shared<Pep*>(this);  ///< nullptr once closed
};

// Provider entry points, one per file.
int getinfo(uint32_t version, const char* node, const char* service, uint64_t flags, const fi_info* hints,
            fi_info** info);
int fabric_open(fi_fabric_attr* attr, fid_fabric** fabric, void* context);
int domain_open(fid_fabric* fabric, fi_info* info, fid_domain** domain, void* context);
int cq_open(fid_domain* domain, fi_cq_attr* attr, fid_cq** cq, void* context);
int eq_open(fid_fabric* fabric, fi_eq_attr* attr, fid_eq** eq, void* context);
int ep_open(fid_domain* domain, fi_info* info, fid_ep** ep, void* context);
int pep_open(fid_fabric* fabric, fi_info* info, fid_pep** pep, void* context);

/// fi_trywait on a CQ or EQ: 0 once armed with nothing waiting, -FI_EAGAIN otherwise.
int cq_trywait(Cq* cq);
int eq_trywait(Eq* eq);

/// The endpoint's connection-management and data operations (cm.cc, data.cc), and the
/// endpoint-level ones a passive endpoint shares (fi_getopt FI_OPT_CM_DATA_SIZE; ep.cc).
extern fi_ops_cm g_ep_cm_ops;
extern fi_ops_ep g_ep_ops;
extern fi_ops_msg g_msg_ops;
extern fi_ops_rma g_rma_ops;

/// Creates the endpoint's QP (fi_enable) if it has none yet (ep.cc).
int ensure_enabled(Ep* ep);

/// Address helpers (info.cc).
sockaddr_in make_sin(uint32_t ipv4, uint16_t port);

/// prov_errno of the FI_EOVERRUN entry: no engine status, the CQ itself lost completions.
constexpr int kProvErrnoOverrun = 0x100;

/// The text of an engine status (fi_cq_strerror) and its libfabric error number.
const char* status_text(nic::WcStatus s);
int status_errno(nic::WcStatus s);

}  // namespace ndnic::fabric
