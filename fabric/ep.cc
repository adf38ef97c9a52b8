// Endpoints (FI_EP_MSG): one engine RC QP each, created on fi_enable with the CQs bound to it,
// and closed with its connection.
#include <rdma/fi_atomic.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_tagged.h>

#include <algorithm>
#include <cstring>

#include <rdma/providers/fi_log.h>

#include "cm/agent.h"
#include "fabric/enosys.h"
#include "fabric/objects.h"

namespace ndnic::fabric {
namespace {

int ep_enable(Ep* ep) {
  if (ep->qp) return 0;
  nic::Device& dev = ep->rt->dev;
  if (!ep->tx_cq || !ep->rx_cq) {
    ep->spare_cq = dev.create_cq(uint32_t(std::max(ep->info->tx_attr->size, ep->info->rx_attr->size)));
    if (!ep->spare_cq) {
      FI_WARN(&g_prov, FI_LOG_EP_CTRL, "no engine CQ for the unbound side of an endpoint\n");
      return -FI_ENOMEM;
    }
  }
  nic::QpCaps caps;
  caps.send_cq = ep->tx_cq ? ep->tx_cq->ncq : ep->spare_cq;
  caps.recv_cq = ep->rx_cq ? ep->rx_cq->ncq : ep->spare_cq;
  caps.pd = ep->domain->pd;
  caps.max_send_wr = uint32_t(ep->info->tx_attr->size);
  caps.max_recv_wr = uint32_t(ep->info->rx_attr->size);
  ep->qp = dev.create_qp(caps);
  if (!ep->qp) {
    FI_WARN(&g_prov, FI_LOG_EP_CTRL, "the engine refused a QP (tx %u, rx %u entries): %zu QPs exist\n",
            caps.max_send_wr, caps.max_recv_wr, dev.qp_count());
    return -FI_ENOMEM;
  }
  if (!ep->qp->modify(nic::QpState::kInit, {})) {
    dev.destroy_qp(ep->qp);
    ep->qp = nullptr;
    return -FI_EOTHER;
  }
  return 0;
}

int ep_close(fid* f) {
  Ep* ep = reinterpret_cast<Ep*>(f);
  cm::Agent& agent = *ep->rt->agent;
  {
    std::lock_guard lk(ep->link->mu);
    ep->link->ep = nullptr;  // callbacks still in flight find nobody
    if (ep->conn) {
      if (ep->connected && !ep->shutdown_sent) agent.disconnect(ep->conn);
      agent.detach(ep->conn);
    } else if (ep->connreq) {
      agent.reject(ep->connreq->req.conn, {});  // never accepted: the peer hears no
    }
  }
  if (ep->qp) ep->rt->dev.destroy_qp(ep->qp);
  if (ep->spare_cq) ep->rt->dev.destroy_cq(ep->spare_cq);
  if (ep->tx_cq) ep->tx_cq->refs--;
  if (ep->rx_cq) ep->rx_cq->refs--;
  ep->domain->refs--;
  delete ep->connreq;
  fi_freeinfo(ep->info);
  delete ep;
  return 0;
}

int ep_bind(fid* f, fid* bf, uint64_t flags) {
  Ep* ep = reinterpret_cast<Ep*>(f);
  if (ep->qp) return -FI_EOPBADSTATE;  // bindings are fixed once the QP exists
  switch (bf->fclass) {
    case FI_CLASS_CQ: {
      Cq* cq = reinterpret_cast<Cq*>(bf);
      if (!(flags & (FI_TRANSMIT | FI_RECV))) return -FI_EINVAL;
      if (flags & FI_TRANSMIT) {
        if (ep->tx_cq) return -FI_EINVAL;
        ep->tx_cq = cq;
        ep->tx_selective = flags & FI_SELECTIVE_COMPLETION;
        cq->refs++;
      }
      if (flags & FI_RECV) {
        if (ep->rx_cq) return -FI_EINVAL;
        ep->rx_cq = cq;
        ep->rx_selective = flags & FI_SELECTIVE_COMPLETION;
        cq->refs++;
      }
      return 0;
    }
    case FI_CLASS_EQ:
      ep->eq = reinterpret_cast<Eq*>(bf);
      return 0;
    default:
      return -FI_ENOSYS;
  }
}

int ep_control(fid* f, int command, void*) {
  if (command != FI_ENABLE) return -FI_ENOSYS;
  return ep_enable(reinterpret_cast<Ep*>(f));
}

fi_ops make_ep_fid_ops() {
  fi_ops o = fid_ops_with_close(ep_close);
  o.bind = ep_bind;
  o.control = ep_control;
  return o;
}
fi_ops g_ep_fid_ops = make_ep_fid_ops();

}  // namespace

int cm_getopt(fid_t, int level, int optname, void* optval, size_t* optlen) {
  if (level != FI_OPT_ENDPOINT) return -FI_ENOPROTOOPT;
  if (optname != FI_OPT_CM_DATA_SIZE) return -FI_ENOPROTOOPT;
  if (!optval || !optlen || *optlen < sizeof(size_t)) return -FI_ETOOSMALL;
  *static_cast<size_t*>(optval) = kCmDataLen;
  *optlen = sizeof(size_t);
  return 0;
}

fi_ops_ep make_ep_ops() {
  fi_ops_ep o{};
  o.size = sizeof o;
  NDNIC_ENOSYS(o, cancel);
  o.getopt = cm_getopt;
  NDNIC_ENOSYS(o, setopt);
  NDNIC_ENOSYS(o, tx_ctx);
  NDNIC_ENOSYS(o, rx_ctx);
  NDNIC_ENOSYS(o, rx_size_left);
  NDNIC_ENOSYS(o, tx_size_left);
  return o;
}
fi_ops_ep g_ep_ops = make_ep_ops();

fi_ops_tagged make_tagged_ops() {
  fi_ops_tagged o{};
  o.size = sizeof o;
  NDNIC_ENOSYS(o, recv);
  NDNIC_ENOSYS(o, recvv);
  NDNIC_ENOSYS(o, recvmsg);
  NDNIC_ENOSYS(o, send);
  NDNIC_ENOSYS(o, sendv);
  NDNIC_ENOSYS(o, sendmsg);
  NDNIC_ENOSYS(o, inject);
  NDNIC_ENOSYS(o, senddata);
  NDNIC_ENOSYS(o, injectdata);
  return o;
}
fi_ops_tagged g_tagged_ops = make_tagged_ops();

fi_ops_atomic make_atomic_ops() {
  fi_ops_atomic o{};
  o.size = sizeof o;
  NDNIC_ENOSYS(o, write);
  NDNIC_ENOSYS(o, writev);
  NDNIC_ENOSYS(o, writemsg);
  NDNIC_ENOSYS(o, inject);
  NDNIC_ENOSYS(o, readwrite);
  NDNIC_ENOSYS(o, readwritev);
  NDNIC_ENOSYS(o, readwritemsg);
  NDNIC_ENOSYS(o, compwrite);
  NDNIC_ENOSYS(o, compwritev);
  NDNIC_ENOSYS(o, compwritemsg);
  NDNIC_ENOSYS(o, writevalid);
  NDNIC_ENOSYS(o, readwritevalid);
  NDNIC_ENOSYS(o, compwritevalid);
  return o;
}
fi_ops_atomic g_atomic_ops = make_atomic_ops();

fi_ops_collective make_collective_ops() {
  fi_ops_collective o{};
  o.size = sizeof o;
  NDNIC_ENOSYS(o, barrier);
  NDNIC_ENOSYS(o, broadcast);
  NDNIC_ENOSYS(o, alltoall);
  NDNIC_ENOSYS(o, allreduce);
  NDNIC_ENOSYS(o, allgather);
  NDNIC_ENOSYS(o, reduce_scatter);
  NDNIC_ENOSYS(o, reduce);
  NDNIC_ENOSYS(o, scatter);
  NDNIC_ENOSYS(o, gather);
  NDNIC_ENOSYS(o, msg);
  return o;
}
fi_ops_collective g_collective_ops = make_collective_ops();

int ep_open(fid_domain* fd, fi_info* info, fid_ep** out, void* context) {
  if (!info || !out) return -FI_EINVAL;
  if (info->ep_attr && info->ep_attr->type != FI_EP_MSG && info->ep_attr->type != FI_EP_UNSPEC) return -FI_EINVAL;
  Domain* d = reinterpret_cast<Domain*>(fd);
  auto* ep = new Ep;
  ep->domain = d;
  ep->rt = d->rt;
  ep->info = fi_dupinfo(info);
  if (!ep->info) {
    delete ep;
    return -FI_ENOMEM;
  }
  if (ep->info->tx_attr->size == 0 || ep->info->tx_attr->size > kQueueDepth) ep->info->tx_attr->size = kQueueDepth;
  if (ep->info->rx_attr->size == 0 || ep->info->rx_attr->size > kQueueDepth) ep->info->rx_attr->size = kQueueDepth;
  if (info->handle && info->handle->fclass == FI_CLASS_CONNREQ) {
    ep->connreq = reinterpret_cast<Connreq*>(info->handle);  // the endpoint answers this request
    ep->info->handle = nullptr;
  }
  if (info->src_addr && info->src_addrlen >= sizeof(sockaddr_in))
    ep->local = *static_cast<const sockaddr_in*>(info->src_addr);
  else
    ep->local = make_sin(d->rt->settings.ipv4, 0);
  ep->link->ep = ep;
  ep->ep.fid.fclass = FI_CLASS_EP;
  ep->ep.fid.context = context;
  ep->ep.fid.ops = &g_ep_fid_ops;
  ep->ep.ops = &g_ep_ops;
  ep->ep.cm = &g_ep_cm_ops;
  ep->ep.msg = &g_msg_ops;
  ep->ep.rma = &g_rma_ops;
  ep->ep.tagged = &g_tagged_ops;
  ep->ep.atomic = &g_atomic_ops;
  ep->ep.collective = &g_collective_ops;
  d->refs++;
  *out = &ep->ep;
  return 0;
}

int ensure_enabled(Ep* ep) { return ep_enable(ep); }

}  // namespace ndnic::fabric
