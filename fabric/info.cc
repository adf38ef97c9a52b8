// fi_getinfo: the one fi_info ndnic offers (FI_EP_MSG over the engine's RC QPs), matched
// against the application's hints, with the addresses node/service and FI_SOURCE name.
#include <arpa/inet.h>
#include <netdb.h>

#include <cstdlib>
#include <cstring>

#include "fabric/objects.h"

namespace ndnic::fabric {
namespace {

constexpr uint64_t kCaps = FI_MSG | FI_RMA | FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ |
                           FI_REMOTE_WRITE | FI_LOCAL_COMM | FI_REMOTE_COMM;
/// As the verbs provider: local descriptors, virtual addresses, allocated memory, our keys.
constexpr int kMrMode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
constexpr uint64_t kOrder = FI_ORDER_RAR | FI_ORDER_RAW | FI_ORDER_RAS | FI_ORDER_WAW | FI_ORDER_WAS |
                            FI_ORDER_SAW | FI_ORDER_SAS;
constexpr char kFabricName[] = "ndnic";
constexpr char kDomainName[] = "ndnic0";

/// IPv4 of `node` (a dotted quad or a name), host order; false when it has none.
bool resolve(const char* node, uint32_t* ip) {
  in_addr a{};
  if (inet_pton(AF_INET, node, &a) == 1) {
    *ip = ntohl(a.s_addr);
    return true;
  }
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_INET;
  if (getaddrinfo(node, nullptr, &hints, &res) != 0 || !res) return false;
  *ip = ntohl(reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr.s_addr);
  freeaddrinfo(res);
  return true;
}

bool parse_port(const char* service, uint16_t* port) {
  char* end = nullptr;
  const long v = std::strtol(service, &end, 10);
  if (!*service || *end || v < 0 || v > 65535) return false;
  *port = uint16_t(v);
  return true;
}

void* dup_sin(const sockaddr_in& sa) {
  auto* p = static_cast<sockaddr_in*>(std::malloc(sizeof sa));
  *p = sa;
  return p;
}

/// The application's memory-registration modes cover what ndnic needs.
bool mr_mode_ok(const fi_info* hints) {
  if (!hints->domain_attr) return true;
  const int m = hints->domain_attr->mr_mode;
  if (m & FI_MR_BASIC) return true;  // the old name of exactly this (local keys in mode FI_LOCAL_MR)
  if ((m & FI_MR_SCALABLE) || m == FI_MR_UNSPEC) return false;
  const int need = kMrMode & ~((hints->mode & FI_LOCAL_MR) ? FI_MR_LOCAL : 0);
  return (m & need) == need;
}

/// Sizes asked for: within ours (0 takes ours).
bool size_ok(size_t asked, size_t ours) { return asked <= ours; }

bool hints_ok(const fi_info* h) {
  if (h->caps & ~kCaps) return false;
  if (h->addr_format != FI_FORMAT_UNSPEC && h->addr_format != FI_SOCKADDR_IN && h->addr_format != FI_SOCKADDR)
    return false;
  if (h->ep_attr && h->ep_attr->type != FI_EP_UNSPEC && h->ep_attr->type != FI_EP_MSG) return false;
  if (h->ep_attr && h->ep_attr->rx_ctx_cnt == FI_SHARED_CONTEXT) return false;  // no shared receive queues
  if (h->fabric_attr && h->fabric_attr->name && std::strcmp(h->fabric_attr->name, kFabricName)) return false;
  if (h->domain_attr && h->domain_attr->name && std::strcmp(h->domain_attr->name, kDomainName)) return false;
  if (h->domain_attr && h->domain_attr->cq_data_size > 4) return false;
  if (h->tx_attr && (!size_ok(h->tx_attr->size, kQueueDepth) || !size_ok(h->tx_attr->iov_limit, nic::kMaxSge) ||
                     !size_ok(h->tx_attr->inject_size, nic::kMaxInline) || (h->tx_attr->caps & ~kCaps)))
    return false;
  if (h->rx_attr && (!size_ok(h->rx_attr->size, kQueueDepth) || !size_ok(h->rx_attr->iov_limit, nic::kMaxSge) ||
                     (h->rx_attr->caps & ~kCaps)))
    return false;
  return mr_mode_ok(h);
}

fi_info* make_info(const Runtime& rt, const fi_info* h) {
  fi_info* fi = fi_allocinfo();
  if (!fi) return nullptr;
  // What was asked (the secondary caps come with it), or everything.
  fi->caps = h && h->caps ? h->caps | FI_LOCAL_COMM | FI_REMOTE_COMM : kCaps;
  // Remote CQ data of a write consumes a receive (as in verbs): said where the application allows it.
  const bool rx_cq_data = h && ((h->mode & FI_RX_CQ_DATA) || (h->rx_attr && (h->rx_attr->mode & FI_RX_CQ_DATA)));
  fi->mode = rx_cq_data ? FI_RX_CQ_DATA : 0;
  fi->addr_format = FI_SOCKADDR_IN;
  fi->fabric_attr->name = strdup(kFabricName);
  fi->fabric_attr->prov_version = g_prov.version;
  fi->domain_attr->name = strdup(kDomainName);
  fi->domain_attr->threading = FI_THREAD_SAFE;
  fi->domain_attr->control_progress = FI_PROGRESS_AUTO;  // the CM agent's thread
  fi->domain_attr->data_progress = rt.app_driven ? FI_PROGRESS_MANUAL : FI_PROGRESS_AUTO;
  fi->domain_attr->resource_mgmt = FI_RM_ENABLED;
  fi->domain_attr->av_type = FI_AV_UNSPEC;
  fi->domain_attr->mr_mode = (h && h->domain_attr && (h->domain_attr->mr_mode & FI_MR_BASIC)) ? FI_MR_BASIC : kMrMode;
  if (fi->domain_attr->mr_mode == FI_MR_BASIC) fi->mode |= FI_LOCAL_MR;
  fi->domain_attr->mr_key_size = sizeof(uint32_t);
  fi->domain_attr->cq_data_size = sizeof(uint32_t);
  fi->domain_attr->cq_cnt = 1024;
  fi->domain_attr->ep_cnt = 1024;
  fi->domain_attr->tx_ctx_cnt = 1024;
  fi->domain_attr->rx_ctx_cnt = 1024;
  fi->domain_attr->max_ep_tx_ctx = 1;
  fi->domain_attr->max_ep_rx_ctx = 1;
  fi->domain_attr->mr_iov_limit = 1;
  fi->domain_attr->mr_cnt = 4096;
  fi->domain_attr->caps = FI_LOCAL_COMM | FI_REMOTE_COMM;
  fi->ep_attr->type = FI_EP_MSG;
  fi->ep_attr->protocol = FI_PROTO_RDMA_CM_IB_RC;
  fi->ep_attr->protocol_version = 1;
  fi->ep_attr->max_msg_size = nic::kMaxMessage;
  fi->ep_attr->max_order_raw_size = nic::kMaxMessage;
  fi->ep_attr->max_order_war_size = nic::kMaxMessage;
  fi->ep_attr->max_order_waw_size = nic::kMaxMessage;
  fi->ep_attr->tx_ctx_cnt = 1;
  fi->ep_attr->rx_ctx_cnt = 1;
  fi->tx_attr->caps = fi->caps;
  fi->tx_attr->msg_order = kOrder;
  fi->tx_attr->comp_order = FI_ORDER_STRICT;
  fi->tx_attr->inject_size = nic::kMaxInline;
  fi->tx_attr->size = h && h->tx_attr && h->tx_attr->size ? h->tx_attr->size : kQueueDepth;
  fi->tx_attr->iov_limit = nic::kMaxSge;
  fi->tx_attr->rma_iov_limit = 1;
  if (h && h->tx_attr) fi->tx_attr->op_flags = h->tx_attr->op_flags & (FI_COMPLETION | FI_INJECT_COMPLETE |
                                                                        FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE);
  fi->rx_attr->caps = fi->caps;
  fi->rx_attr->mode = fi->mode;
  fi->rx_attr->msg_order = kOrder;
  fi->rx_attr->comp_order = FI_ORDER_STRICT;
  fi->rx_attr->size = h && h->rx_attr && h->rx_attr->size ? h->rx_attr->size : kQueueDepth;
  fi->rx_attr->iov_limit = nic::kMaxSge;
  if (h && h->rx_attr) fi->rx_attr->op_flags = h->rx_attr->op_flags & FI_COMPLETION;
  return fi;
}

}  // namespace

sockaddr_in make_sin(uint32_t ipv4, uint16_t port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(ipv4);
  sa.sin_port = htons(port);
  return sa;
}

int getinfo(uint32_t, const char* node, const char* service, uint64_t flags, const fi_info* hints, fi_info** out) {
  if (hints && !hints_ok(hints)) return -FI_ENODATA;
  Runtime* rt = runtime();
  if (!rt) return -FI_ENODATA;
  const uint32_t ours = rt->settings.ipv4;
  // Where we are: FI_SOURCE's node/service, or the hints' src_addr; the port's IPv4 either way.
  sockaddr_in src = make_sin(ours, 0);
  bool have_dest = false;
  sockaddr_in dest{};
  uint16_t port = 0;
  if (service && !parse_port(service, &port)) return -FI_ENODATA;
  if (flags & FI_SOURCE) {
    uint32_t ip = ours;
    if (node && !resolve(node, &ip)) return -FI_ENODATA;
    if (ip != ours && ip != INADDR_ANY) return -FI_ENODATA;  // not this NIC's address
    src.sin_port = htons(port);
  } else if (node || service) {
    uint32_t ip = ours;
    if (node && !resolve(node, &ip)) return -FI_ENODATA;
    dest = make_sin(ip, port);
    have_dest = true;
  }
  if (hints && hints->src_addr) {
    if (hints->src_addrlen < sizeof(sockaddr_in)) return -FI_ENODATA;
    const auto* s = static_cast<const sockaddr_in*>(hints->src_addr);
    const uint32_t ip = ntohl(s->sin_addr.s_addr);
    if (s->sin_family != AF_INET || (ip != ours && ip != INADDR_ANY)) return -FI_ENODATA;
    if (!(flags & FI_SOURCE) || !service) src.sin_port = s->sin_port;
  }
  if (hints && hints->dest_addr && !have_dest) {
    if (hints->dest_addrlen < sizeof(sockaddr_in)) return -FI_ENODATA;
    dest = *static_cast<const sockaddr_in*>(hints->dest_addr);
    if (dest.sin_family != AF_INET) return -FI_ENODATA;
    have_dest = true;
  }
  fi_info* fi = make_info(*rt, hints);
  if (!fi) return -FI_ENOMEM;
  fi->src_addr = dup_sin(src);
  fi->src_addrlen = sizeof src;
  if (have_dest) {
    fi->dest_addr = dup_sin(dest);
    fi->dest_addrlen = sizeof dest;
  }
  *out = fi;
  return 0;
}

}  // namespace ndnic::fabric
