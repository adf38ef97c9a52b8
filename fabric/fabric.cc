// The provider's descriptor (fi_prov_ini), the fabric, the domain and memory registration.
#include <rdma/fi_domain.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include <cstdio>

#include "fabric/enosys.h"
#include "fabric/objects.h"

namespace ndnic::fabric {
namespace {

void cleanup() { shutdown_runtime(); }

// ---- fabric -------------------------------------------------------------------------------

int fabric_close(fid* f) {
  delete reinterpret_cast<Fabric*>(f);
  return 0;
}

int fabric_trywait(fid_fabric*, fid** fids, int count) {
  for (int i = 0; i < count; i++) {
    int r = -FI_EINVAL;
    if (fids[i]->fclass == FI_CLASS_CQ) r = cq_trywait(reinterpret_cast<Cq*>(fids[i]));
    if (fids[i]->fclass == FI_CLASS_EQ) r = eq_trywait(reinterpret_cast<Eq*>(fids[i]));
    if (r) return r;
  }
  return 0;
}

fi_ops_fabric make_fabric_ops() {
  fi_ops_fabric o{};
  o.size = sizeof o;
  o.domain = domain_open;
  o.passive_ep = pep_open;
  o.eq_open = eq_open;
  NDNIC_ENOSYS(o, wait_open);
  o.trywait = fabric_trywait;
  NDNIC_ENOSYS(o, domain2);
  return o;
}
fi_ops g_fabric_fid_ops = fid_ops_with_close(fabric_close);
fi_ops_fabric g_fabric_ops = make_fabric_ops();

// ---- memory regions -----------------------------------------------------------------------

int mr_close(fid* f) {
  Mr* mr = reinterpret_cast<Mr*>(f);
  mr->domain->rt->dev.deregister_mr(mr->lkey);
  mr->domain->refs--;
  delete mr;
  return 0;
}
fi_ops g_mr_fid_ops = fid_ops_with_close(mr_close);

/// libfabric's access bits as the engine's: local write always (receives and READ results land
/// in the region), remote rights as asked.
uint32_t access_bits(uint64_t access) {
  uint32_t a = nic::kAccessLocalWrite;
  if (access & FI_REMOTE_READ) a |= nic::kAccessRemoteRead;
  if (access & FI_REMOTE_WRITE) a |= nic::kAccessRemoteWrite;
  return a;
}

int mr_reg(fid* f, const void* buf, size_t len, uint64_t access, uint64_t, uint64_t, uint64_t, fid_mr** out,
           void* context) {
  if (f->fclass != FI_CLASS_DOMAIN || !out) return -FI_EINVAL;
  Domain* d = reinterpret_cast<Domain*>(f);
  nic::MrKeys keys;
  // A zero-length region still needs a key (an application may register an empty buffer).
  if (!d->rt->dev.register_mr(d->pd, buf, len ? len : 1, access_bits(access), &keys)) {
    FI_WARN(&g_prov, FI_LOG_MR, "the engine refused a region of %zu bytes at %p\n", len, buf);
    return -FI_EINVAL;
  }
  auto* mr = new Mr;
  mr->domain = d;
  mr->lkey = keys.lkey;
  mr->mr.fid.fclass = FI_CLASS_MR;
  mr->mr.fid.context = context;
  mr->mr.fid.ops = &g_mr_fid_ops;
  mr->mr.mem_desc = mr;
  mr->mr.key = keys.rkey;
  d->refs++;
  *out = &mr->mr;
  return 0;
}

int mr_regv(fid* f, const iovec* iov, size_t count, uint64_t access, uint64_t offset, uint64_t key, uint64_t flags,
            fid_mr** out, void* context) {
  if (count != 1) return -FI_EINVAL;  // mr_iov_limit is 1: a region is one range
  return mr_reg(f, iov[0].iov_base, iov[0].iov_len, access, offset, key, flags, out, context);
}

int mr_regattr(fid* f, const fi_mr_attr* attr, uint64_t flags, fid_mr** out) {
  if (!attr) return -FI_EINVAL;
  return mr_regv(f, attr->mr_iov, attr->iov_count, attr->access, attr->offset, attr->requested_key, flags, out,
                 attr->context);
}

fi_ops_mr g_mr_ops{sizeof(fi_ops_mr), mr_reg, mr_regv, mr_regattr};

// ---- domain -------------------------------------------------------------------------------

int domain_close(fid* f) {
  Domain* d = reinterpret_cast<Domain*>(f);
  if (d->refs > 0) return -FI_EBUSY;
  delete d;
  return 0;
}
fi_ops g_domain_fid_ops = fid_ops_with_close(domain_close);

fi_ops_domain make_domain_ops() {
  fi_ops_domain o{};
  o.size = sizeof o;
  NDNIC_ENOSYS(o, av_open);
  o.cq_open = cq_open;
  o.endpoint = ep_open;
  NDNIC_ENOSYS(o, scalable_ep);
  NDNIC_ENOSYS(o, cntr_open);
  NDNIC_ENOSYS(o, poll_open);
  NDNIC_ENOSYS(o, stx_ctx);
  NDNIC_ENOSYS(o, srx_ctx);
  NDNIC_ENOSYS(o, query_atomic);
  NDNIC_ENOSYS(o, query_collective);
  NDNIC_ENOSYS(o, endpoint2);
  return o;
}
fi_ops_domain g_domain_ops = make_domain_ops();

}  // namespace

fi_provider g_prov = {
    .version = FI_VERSION(0, 1),
    .fi_version = FI_VERSION(1, 17),
    .context = {},
    .name = "ndnic",
    .getinfo = getinfo,
    .fabric = fabric_open,
    .cleanup = cleanup,
};

fi_ops fid_ops_with_close(int (*close)(fid*)) {
  fi_ops o{};
  o.size = sizeof o;
  o.close = close;
  NDNIC_ENOSYS(o, bind);
  NDNIC_ENOSYS(o, control);
  NDNIC_ENOSYS(o, ops_open);
  NDNIC_ENOSYS(o, tostr);
  NDNIC_ENOSYS(o, ops_set);
  return o;
}

fi_ops fid_ops_with_wait_fd(int (*close)(fid*), int (*control)(fid*, int, void*)) {
  fi_ops o = fid_ops_with_close(close);
  o.control = control;
  return o;
}

int getwait(int command, void* arg, int fd) {
  if (command != FI_GETWAIT || !arg) return -FI_ENOSYS;
  *static_cast<int*>(arg) = fd;
  return 0;
}

const char* put_text(const char* text, char* buf, size_t len) {
  if (!buf || !len) return text;
  std::snprintf(buf, len, "%s", text);
  return buf;
}

int fabric_open(fi_fabric_attr* attr, fid_fabric** out, void* context) {
  if (!attr || !out) return -FI_EINVAL;
  Runtime* rt = runtime();
  if (!rt) return -FI_ENODATA;
  auto* f = new Fabric;
  f->rt = rt;
  f->fab.fid.fclass = FI_CLASS_FABRIC;
  f->fab.fid.context = context;
  f->fab.fid.ops = &g_fabric_fid_ops;
  f->fab.ops = &g_fabric_ops;
  f->fab.api_version = attr->api_version;
  *out = &f->fab;
  return 0;
}

int domain_open(fid_fabric* fab, fi_info* info, fid_domain** out, void* context) {
  if (!info || !out) return -FI_EINVAL;
  Fabric* f = reinterpret_cast<Fabric*>(fab);
  auto* d = new Domain;
  d->fabric = f;
  d->rt = f->rt;
  d->pd = f->rt->dev.alloc_pd();
  d->dom.fid.fclass = FI_CLASS_DOMAIN;
  d->dom.fid.context = context;
  d->dom.fid.ops = &g_domain_fid_ops;
  d->dom.ops = &g_domain_ops;
  d->dom.mr = &g_mr_ops;
  *out = &d->dom;
  return 0;
}

}  // namespace ndnic::fabric

/// libfabric loads libndnic-fi.so from FI_PROVIDER_PATH and asks it for its descriptor.
extern "C" FI_EXT_INI {
  ndnic::fabric::define_params();
  return &ndnic::fabric::g_prov;
}
