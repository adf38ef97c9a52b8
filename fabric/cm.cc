// Connection management over the CM agent: passive endpoints (fi_listen, FI_CONNREQ,
// fi_reject), fi_connect / fi_accept / fi_shutdown on endpoints, and the agent's events as EQ
// events (FI_CONNECTED, FI_SHUTDOWN, errors).
#include <arpa/inet.h>

#include <cstring>
#include <span>

#include "cm/agent.h"
#include "fabric/enosys.h"
#include "fabric/objects.h"

namespace ndnic::fabric {
namespace {

constexpr uint8_t kCmReadDepth = 16;  ///< READs outstanding each way (the engine's max_rd_atomic)

/// The application's private data behind its length byte.
std::vector<uint8_t> encode(const void* param, size_t len) {
  std::vector<uint8_t> v(len + 1);
  v[0] = uint8_t(len);
  if (len) std::memcpy(v.data() + 1, param, len);
  return v;
}

/// What the peer's application gave (empty when the data is not ours: a bare rdma_cm peer).
std::vector<uint8_t> decode(const std::vector<uint8_t>& raw) {
  if (raw.empty() || raw[0] > raw.size() - 1) return {};
  return {raw.begin() + 1, raw.begin() + 1 + raw[0]};
}

void push_cm(Eq* eq, uint32_t event, fid_t fid, fi_info* info, const std::vector<uint8_t>& data) {
  EqEvent e;
  e.event = event;
  e.bytes.resize(sizeof(fi_eq_cm_entry) + data.size());
  fi_eq_cm_entry entry{};
  entry.fid = fid;
  entry.info = info;
  std::memcpy(e.bytes.data(), &entry, sizeof entry);
  if (!data.empty()) std::memcpy(e.bytes.data() + sizeof entry, data.data(), data.size());
  eq->push(std::move(e));
}

void push_error(Eq* eq, fid_t fid, int err, int prov_errno, std::vector<uint8_t> data) {
  EqEvent e;
  e.error = true;
  e.err.fid = fid;
  e.err.context = fid->context;
  e.err.err = err;
  e.err.prov_errno = prov_errno;
  e.err_data = std::move(data);
  eq->push(std::move(e));
}

/// The agent's events for one endpoint's connection, on the agent thread.
cm::Callback ep_callback(std::shared_ptr<EpLink> link) {
  return [link](const cm::Event& ev) {
    std::lock_guard lk(link->mu);
    Ep* ep = link->ep;
    if (!ep || !ep->eq) return;
    fid_t fid = &ep->ep.fid;
    switch (ev.kind) {
      case cm::EventKind::kEstablished:
        ep->connected = true;
        push_cm(ep->eq, FI_CONNECTED, fid, nullptr, decode(ev.private_data));
        break;
      case cm::EventKind::kRejected:
        push_error(ep->eq, fid, FI_ECONNREFUSED, ev.reject_reason, decode(ev.private_data));
        break;
      case cm::EventKind::kRefused:
        push_error(ep->eq, fid, FI_ECONNREFUSED, ev.reject_reason, {});
        break;
      case cm::EventKind::kTimeout:
        push_error(ep->eq, fid, FI_ETIMEDOUT, 0, {});
        break;
      case cm::EventKind::kUnreachable:
        push_error(ep->eq, fid, FI_EHOSTUNREACH, 0, {});
        break;
      case cm::EventKind::kError:
        push_error(ep->eq, fid, FI_EOTHER, 0, {});
        break;
      case cm::EventKind::kDisconnected:
      case cm::EventKind::kDisconnectDone:
        // Either side's fi_shutdown, or a peer that vanished: said once, and only of a
        // connection that was up.
        if (ep->connected && !ep->shutdown_sent) {
          ep->shutdown_sent = true;
          push_cm(ep->eq, FI_SHUTDOWN, fid, nullptr, {});
        }
        break;
      case cm::EventKind::kConnectResponse:
        break;  // connect() does not defer the RTU
    }
  };
}

int put_name(const sockaddr_in& sa, void* addr, size_t* addrlen) {
  if (!addrlen) return -FI_EINVAL;
  const size_t room = *addrlen;
  *addrlen = sizeof sa;
  if (!addr || room < sizeof sa) return -FI_ETOOSMALL;
  std::memcpy(addr, &sa, sizeof sa);
  return 0;
}

Ep* as_ep(fid_t f) { return reinterpret_cast<Ep*>(f); }
Pep* as_pep(fid_t f) { return reinterpret_cast<Pep*>(f); }

// ---- endpoint CM operations ---------------------------------------------------------------

int ep_setname(fid_t f, void* addr, size_t addrlen) {
  if (f->fclass != FI_CLASS_EP) {
    if (f->fclass != FI_CLASS_PEP) return -FI_EINVAL;
    Pep* pep = as_pep(f);
    if (pep->listening || !addr || addrlen < sizeof(sockaddr_in)) return -FI_EINVAL;
    pep->port = ntohs(static_cast<const sockaddr_in*>(addr)->sin_port);
    return 0;
  }
  Ep* ep = as_ep(f);
  if (ep->conn || !addr || addrlen < sizeof(sockaddr_in)) return -FI_EINVAL;
  ep->local.sin_port = static_cast<const sockaddr_in*>(addr)->sin_port;  // the source port connect() uses
  return 0;
}

int ep_getname(fid_t f, void* addr, size_t* addrlen) {
  if (f->fclass == FI_CLASS_PEP) {
    Pep* pep = as_pep(f);
    return put_name(make_sin(pep->rt->settings.ipv4, pep->port), addr, addrlen);
  }
  Ep* ep = as_ep(f);
  std::lock_guard lk(ep->link->mu);
  return put_name(ep->local, addr, addrlen);
}

int ep_getpeer(fid_ep* f, void* addr, size_t* addrlen) {
  Ep* ep = as_ep(&f->fid);
  std::lock_guard lk(ep->link->mu);
  if (!ep->conn) return -FI_ENOTCONN;
  return put_name(ep->peer, addr, addrlen);
}

int ep_connect(fid_ep* f, const void* addr, const void* param, size_t paramlen) {
  Ep* ep = as_ep(&f->fid);
  if (!addr || paramlen > kCmDataLen || (paramlen && !param)) return -FI_EINVAL;
  const auto* sa = static_cast<const sockaddr_in*>(addr);
  if (sa->sin_family != AF_INET) return -FI_EINVAL;
  if (const int r = ensure_enabled(ep)) return r;
  std::lock_guard lk(ep->link->mu);
  if (ep->conn || ep->connreq) return -FI_EISCONN;
  const std::vector<uint8_t> data = encode(param, paramlen);
  cm::ConnectParams p;
  p.qp = ep->qp;
  p.dest_ipv4 = ntohl(sa->sin_addr.s_addr);
  p.dest_port = ntohs(sa->sin_port);
  p.src_port = ntohs(ep->local.sin_port);
  p.private_data = data;
  p.responder_resources = kCmReadDepth;
  p.initiator_depth = kCmReadDepth;
  const cm::ConnId id = ep->rt->agent->connect(p, ep_callback(ep->link));
  if (id == 0) return -FI_EOPBADSTATE;
  ep->conn = id;
  ep->peer = *sa;
  ep->local = make_sin(ep->rt->settings.ipv4, ep->rt->agent->local_port(id));
  return 0;
}

int ep_accept(fid_ep* f, const void* param, size_t paramlen) {
  Ep* ep = as_ep(&f->fid);
  if (paramlen > kCmDataLen || (paramlen && !param)) return -FI_EINVAL;
  if (!ep->connreq) return -FI_EINVAL;  // not made from an FI_CONNREQ's info
  if (const int r = ensure_enabled(ep)) return r;
  std::lock_guard lk(ep->link->mu);
  if (ep->conn) return -FI_EISCONN;
  const std::vector<uint8_t> data = encode(param, paramlen);
  const cm::Request& req = ep->connreq->req;
  cm::AcceptParams p;
  p.qp = ep->qp;
  p.private_data = data;
  p.responder_resources = kCmReadDepth;
  p.initiator_depth = kCmReadDepth;
  if (!ep->rt->agent->accept(req.conn, p, ep_callback(ep->link))) return -FI_ECONNABORTED;
  ep->conn = req.conn;
  ep->peer = make_sin(req.peer_ipv4, req.peer_port);
  ep->local = make_sin(req.local_ipv4 ? req.local_ipv4 : ep->rt->settings.ipv4, req.listen_port);
  return 0;
}

int ep_shutdown(fid_ep* f, uint64_t) {
  Ep* ep = as_ep(&f->fid);
  std::lock_guard lk(ep->link->mu);
  if (!ep->conn) return -FI_ENOTCONN;
  ep->rt->agent->disconnect(ep->conn);  // FI_SHUTDOWN follows here, and at the peer
  return 0;
}

// ---- passive endpoints --------------------------------------------------------------------

int pep_listen(fid_pep* f) {
  Pep* pep = as_pep(&f->fid);
  if (pep->listening) return -FI_EINVAL;
  if (!pep->eq) return -FI_ENOEQ;
  auto alive = pep->alive;
  auto alive_mu = pep->alive_mu;
  cm::Agent* agent = pep->rt->agent.get();
  // Each request the agent queues becomes an FI_CONNREQ with its own fi_info and handle.
  auto on_request = [alive, alive_mu, agent](uint16_t port) {
    std::lock_guard lk(*alive_mu);
    Pep* p = *alive;
    if (!p) return;
    cm::Request req;
    while (agent->get_request(port, &req, 0)) {
      auto* cr = new Connreq;
      cr->handle.fclass = FI_CLASS_CONNREQ;
      cr->req = req;
      fi_info* info = fi_dupinfo(p->info);
      const sockaddr_in src = make_sin(req.local_ipv4 ? req.local_ipv4 : p->rt->settings.ipv4, port);
      const sockaddr_in dst = make_sin(req.peer_ipv4, req.peer_port);
      std::free(info->src_addr);
      std::free(info->dest_addr);
      info->src_addr = std::malloc(sizeof src);
      std::memcpy(info->src_addr, &src, sizeof src);
      info->src_addrlen = sizeof src;
      info->dest_addr = std::malloc(sizeof dst);
      std::memcpy(info->dest_addr, &dst, sizeof dst);
      info->dest_addrlen = sizeof dst;
      info->handle = &cr->handle;
      push_cm(p->eq, FI_CONNREQ, &p->pep.fid, info, decode(req.private_data));
    }
  };
  const uint16_t port = agent->listen(pep->port, on_request);
  if (port == 0) return -FI_EADDRINUSE;
  pep->port = port;
  pep->listening = true;
  return 0;
}

int pep_reject(fid_pep* f, fid_t handle, const void* param, size_t paramlen) {
  Pep* pep = as_pep(&f->fid);
  if (!handle || handle->fclass != FI_CLASS_CONNREQ || paramlen > kCmDataLen || (paramlen && !param))
    return -FI_EINVAL;
  auto* cr = reinterpret_cast<Connreq*>(handle);
  const std::vector<uint8_t> data = encode(param, paramlen);
  const bool ok = pep->rt->agent->reject(cr->req.conn, data);
  delete cr;
  return ok ? 0 : -FI_ECONNABORTED;
}

int pep_close(fid* f) {
  Pep* pep = as_pep(f);
  {
    std::lock_guard lk(*pep->alive_mu);
    *pep->alive = nullptr;
  }
  if (pep->listening) pep->rt->agent->unlisten(pep->port);
  fi_freeinfo(pep->info);
  delete pep;
  return 0;
}

int pep_bind(fid* f, fid* bf, uint64_t) {
  if (bf->fclass != FI_CLASS_EQ) return -FI_EINVAL;
  as_pep(f)->eq = reinterpret_cast<Eq*>(bf);
  return 0;
}

fi_ops make_pep_fid_ops() {
  fi_ops o = fid_ops_with_close(pep_close);
  o.bind = pep_bind;
  return o;
}
fi_ops g_pep_fid_ops = make_pep_fid_ops();

fi_ops_cm make_pep_cm_ops() {
  fi_ops_cm o{};
  o.size = sizeof o;
  o.setname = ep_setname;
  o.getname = ep_getname;
  NDNIC_ENOSYS(o, getpeer);
  NDNIC_ENOSYS(o, connect);
  o.listen = pep_listen;
  NDNIC_ENOSYS(o, accept);
  o.reject = pep_reject;
  NDNIC_ENOSYS(o, shutdown);
  NDNIC_ENOSYS(o, join);
  return o;
}
fi_ops_cm g_pep_cm_ops = make_pep_cm_ops();

fi_ops_cm make_ep_cm_ops() {
  fi_ops_cm o{};
  o.size = sizeof o;
  o.setname = ep_setname;
  o.getname = ep_getname;
  o.getpeer = ep_getpeer;
  o.connect = ep_connect;
  NDNIC_ENOSYS(o, listen);
  o.accept = ep_accept;
  NDNIC_ENOSYS(o, reject);
  o.shutdown = ep_shutdown;
  NDNIC_ENOSYS(o, join);
  return o;
}

}  // namespace

fi_ops_cm g_ep_cm_ops = make_ep_cm_ops();

int pep_open(fid_fabric* ff, fi_info* info, fid_pep** out, void* context) {
  if (!info || !out) return -FI_EINVAL;
  Fabric* fab = reinterpret_cast<Fabric*>(ff);
  auto* pep = new Pep;
  pep->fabric = fab;
  pep->rt = fab->rt;
  pep->info = fi_dupinfo(info);
  if (!pep->info) {
    delete pep;
    return -FI_ENOMEM;
  }
  if (info->src_addr && info->src_addrlen >= sizeof(sockaddr_in))
    pep->port = ntohs(static_cast<const sockaddr_in*>(info->src_addr)->sin_port);
  pep->pep.fid.fclass = FI_CLASS_PEP;
  pep->pep.fid.context = context;
  pep->pep.fid.ops = &g_pep_fid_ops;
  pep->pep.ops = &g_ep_ops;
  pep->pep.cm = &g_pep_cm_ops;
  *out = &pep->pep;
  return 0;
}

}  // namespace ndnic::fabric
