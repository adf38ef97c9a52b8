// Event queues: connection events from the CM agent's thread (FI_CONNREQ, FI_CONNECTED,
// FI_SHUTDOWN, errors) and the application's own fi_eq_write, read in order.
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>

#include "fabric/enosys.h"
#include "fabric/objects.h"

namespace ndnic::fabric {
namespace {

void drain_fd(int fd) {
  uint64_t v;
  [[maybe_unused]] ssize_t n = read(fd, &v, sizeof v);
}

/// Takes (or with FI_PEEK looks at) the front event; the caller holds the lock.
ssize_t take(Eq* eq, uint32_t* event, void* buf, size_t len, uint64_t flags) {
  if (eq->q.empty()) {
    drain_fd(eq->efd);
    return -FI_EAGAIN;
  }
  EqEvent& e = eq->q.front();
  if (e.error) return -FI_EAVAIL;
  if (len < e.bytes.size()) return -FI_ETOOSMALL;
  if (event) *event = e.event;
  std::memcpy(buf, e.bytes.data(), e.bytes.size());
  const ssize_t n = ssize_t(e.bytes.size());
  if (!(flags & FI_PEEK)) {
    eq->q.pop_front();
    if (eq->q.empty()) drain_fd(eq->efd);
  }
  return n;
}

ssize_t eq_read(fid_eq* f, uint32_t* event, void* buf, size_t len, uint64_t flags) {
  Eq* eq = reinterpret_cast<Eq*>(f);
  std::lock_guard lk(eq->mu);
  return take(eq, event, buf, len, flags);
}

ssize_t eq_sread(fid_eq* f, uint32_t* event, void* buf, size_t len, int timeout, uint64_t flags) {
  Eq* eq = reinterpret_cast<Eq*>(f);
  std::unique_lock lk(eq->mu);
  auto ready = [&] { return !eq->q.empty(); };
  if (timeout < 0)
    eq->cv.wait(lk, ready);
  else if (!eq->cv.wait_for(lk, std::chrono::milliseconds(timeout), ready))
    return -FI_EAGAIN;
  return take(eq, event, buf, len, flags);
}

ssize_t eq_readerr(fid_eq* f, fi_eq_err_entry* out, uint64_t flags) {
  Eq* eq = reinterpret_cast<Eq*>(f);
  std::lock_guard lk(eq->mu);
  if (eq->q.empty() || !eq->q.front().error) return -FI_EAGAIN;
  EqEvent& e = eq->q.front();
  void* user_data = out->err_data;
  const size_t user_size = out->err_data_size;
  *out = e.err;
  eq->last_err_data = e.err_data;
  if (user_data && user_size) {  // the application's buffer (API 1.5), else ours until the next read
    out->err_data_size = std::min(user_size, e.err_data.size());
    std::memcpy(user_data, e.err_data.data(), out->err_data_size);
    out->err_data = user_data;
  } else {
    out->err_data = eq->last_err_data.empty() ? nullptr : eq->last_err_data.data();
    out->err_data_size = eq->last_err_data.size();
  }
  if (!(flags & FI_PEEK)) {
    eq->q.pop_front();
    if (eq->q.empty()) drain_fd(eq->efd);
  }
  return sizeof *out;
}

ssize_t eq_write(fid_eq* f, uint32_t event, const void* buf, size_t len, uint64_t) {
  Eq* eq = reinterpret_cast<Eq*>(f);
  EqEvent e;
  e.event = event;
  e.bytes.assign(static_cast<const uint8_t*>(buf), static_cast<const uint8_t*>(buf) + len);
  eq->push(std::move(e));
  return ssize_t(len);
}

const char* eq_strerror(fid_eq*, int prov_errno, const void*, char* buf, size_t len) {
  return put_text(prov_errno ? "the peer's connection manager refused (REJ reason in prov_errno)" : "no detail", buf,
                  len);
}

int eq_close(fid* f) {
  Eq* eq = reinterpret_cast<Eq*>(f);
  for (EqEvent& e : eq->q) {  // requests never read: their fi_info is ours to free
    if (e.event == FI_CONNREQ && !e.error) fi_freeinfo(reinterpret_cast<fi_eq_cm_entry*>(e.bytes.data())->info);
  }
  close(eq->efd);
  delete eq;
  return 0;
}

int eq_control(fid* f, int command, void* arg) { return getwait(command, arg, reinterpret_cast<Eq*>(f)->efd); }

fi_ops g_eq_fid_ops = fid_ops_with_wait_fd(eq_close, eq_control);
fi_ops_eq g_eq_ops{sizeof(fi_ops_eq), eq_read, eq_readerr, eq_write, eq_sread, eq_strerror};

}  // namespace

void Eq::push(EqEvent e) {
  {
    std::lock_guard lk(mu);
    q.push_back(std::move(e));
  }
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(efd, &one, sizeof one);
  cv.notify_all();
}

int eq_trywait(Eq* eq) {
  std::lock_guard lk(eq->mu);
  if (!eq->q.empty()) return -FI_EAGAIN;
  drain_fd(eq->efd);
  return 0;
}

int eq_open(fid_fabric* ff, fi_eq_attr* attr, fid_eq** out, void* context) {
  if (!attr || !out) return -FI_EINVAL;
  if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC && attr->wait_obj != FI_WAIT_FD)
    return -FI_ENOSYS;
  auto* eq = new Eq;
  eq->fabric = reinterpret_cast<Fabric*>(ff);
  eq->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (eq->efd < 0) {
    delete eq;
    return -FI_ENOMEM;
  }
  eq->eq.fid.fclass = FI_CLASS_EQ;
  eq->eq.fid.context = context;
  eq->eq.fid.ops = &g_eq_fid_ops;
  eq->eq.ops = &g_eq_ops;
  *out = &eq->eq;
  return 0;
}

}  // namespace ndnic::fabric
