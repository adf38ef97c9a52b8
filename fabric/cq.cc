// Completion queues over engine CQs: the engine's completions as fi_cq_*_entry, errors held at
// the front for fi_cq_readerr, blocking reads on the CQ's event fd.
#include <endian.h>
#include <sched.h>

#include <chrono>
#include <cstring>

#include "fabric/enosys.h"
#include "fabric/objects.h"

namespace ndnic::fabric {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kDefaultCqSize = 4096;
constexpr auto kSpin = std::chrono::microseconds(50);  ///< sread polls this long before it sleeps

uint64_t op_flags(const nic::Completion& c) {
  switch (c.opcode) {
    case nic::WcOpcode::kSend: return FI_MSG | FI_SEND;
    case nic::WcOpcode::kWrite: return FI_RMA | FI_WRITE;
    case nic::WcOpcode::kRead: return FI_RMA | FI_READ;
    case nic::WcOpcode::kRecv: return FI_MSG | FI_RECV | ((c.flags & nic::kWcWithImm) ? FI_REMOTE_CQ_DATA : 0);
    case nic::WcOpcode::kRecvWriteImm: return FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA;
    default: return 0;
  }
}

size_t entry_size(fi_cq_format f) {
  switch (f) {
    case FI_CQ_FORMAT_MSG: return sizeof(fi_cq_msg_entry);
    case FI_CQ_FORMAT_DATA: return sizeof(fi_cq_data_entry);
    case FI_CQ_FORMAT_TAGGED: return sizeof(fi_cq_tagged_entry);
    default: return sizeof(fi_cq_entry);
  }
}

/// One completion in the CQ's format (the formats are prefixes of the tagged one).
void put_entry(const Cq& cq, const nic::Completion& c, void* out) {
  fi_cq_tagged_entry e{};
  e.op_context = reinterpret_cast<void*>(c.wr_id);
  e.flags = op_flags(c);
  const bool received = e.flags & (FI_RECV | FI_REMOTE_WRITE);
  e.len = received ? c.byte_len : 0;
  e.data = (c.flags & nic::kWcWithImm) ? be32toh(c.imm_or_inv) : 0;
  std::memcpy(out, &e, entry_size(cq.format));
}

/// Moves what the engine has to `held`, driving it first when the application's calls do.
void refill(Cq* cq) {
  cq->domain->rt->progress();
  nic::Completion buf[64];
  const unsigned n = cq->ncq->poll(buf, 64);
  cq->held.insert(cq->held.end(), buf, buf + n);
}

/// With every kept completion read: a CQ that lost completions says so, once as an error entry
/// (FI_EOVERRUN, for fi_cq_readerr) and from then on as the read's result, as fi_cq(3) asks:
/// an overrun CQ is fatal. The engine has put the QPs whose completions were lost in error.
ssize_t overrun_status(Cq* cq) {
  if (!cq->ncq->overrun()) return -FI_EAGAIN;
  return cq->overrun_said ? -FI_EOVERRUN : -FI_EAVAIL;
}

ssize_t cq_read(fid_cq* f, void* buf, size_t count) {
  Cq* cq = reinterpret_cast<Cq*>(f);
  std::lock_guard lk(cq->mu);
  if (cq->held.size() < count) refill(cq);
  if (cq->held.empty()) return overrun_status(cq);
  if (cq->held.front().status != nic::WcStatus::kSuccess) return -FI_EAVAIL;
  size_t n = 0;
  auto* out = static_cast<uint8_t*>(buf);
  while (n < count && !cq->held.empty() && cq->held.front().status == nic::WcStatus::kSuccess) {
    put_entry(*cq, cq->held.front(), out + n * entry_size(cq->format));
    cq->held.pop_front();
    n++;
  }
  return ssize_t(n);
}

ssize_t cq_readfrom(fid_cq* f, void* buf, size_t count, fi_addr_t* src) {
  const ssize_t n = cq_read(f, buf, count);
  for (ssize_t i = 0; src && i < n; i++) src[i] = FI_ADDR_NOTAVAIL;  // connected endpoints: no source
  return n;
}

ssize_t cq_readerr(fid_cq* f, fi_cq_err_entry* e, uint64_t) {
  Cq* cq = reinterpret_cast<Cq*>(f);
  std::lock_guard lk(cq->mu);
  if (cq->held.empty()) refill(cq);
  if (cq->held.empty() && overrun_status(cq) == -FI_EAVAIL) {
    cq->overrun_said = true;
    *e = {};
    e->err = FI_EOVERRUN;
    e->prov_errno = kProvErrnoOverrun;
    return 1;
  }
  if (cq->held.empty() || cq->held.front().status == nic::WcStatus::kSuccess) return -FI_EAGAIN;
  cq->last_error = cq->held.front();
  cq->held.pop_front();
  const nic::Completion& c = cq->last_error;
  // err_data: the engine's completion. Copied into the application's buffer when it gives one
  // (API 1.5 and later), else ours until the next readerr.
  void* user_data = e->err_data;
  const size_t user_size = e->err_data_size;
  *e = {};
  e->op_context = reinterpret_cast<void*>(c.wr_id);
  e->flags = op_flags(c);
  e->len = c.byte_len;
  e->err = status_errno(c.status);
  e->prov_errno = int(c.status);
  if (user_data && user_size) {
    std::memcpy(user_data, &c, std::min(user_size, sizeof c));
    e->err_data = user_data;
    e->err_data_size = std::min(user_size, sizeof c);
  } else {
    e->err_data = &cq->last_error;
    e->err_data_size = sizeof c;
  }
  return 1;
}

ssize_t cq_sreadfrom(fid_cq* f, void* buf, size_t count, fi_addr_t* src, const void*, int timeout) {
  Cq* cq = reinterpret_cast<Cq*>(f);
  const auto start = Clock::now();
  const auto deadline = timeout < 0 ? Clock::time_point::max() : start + std::chrono::milliseconds(timeout);
  for (;;) {
    const ssize_t n = cq_readfrom(f, buf, count, src);
    if (n != -FI_EAGAIN) return n;
    if (cq->signaled.exchange(false)) return -FI_EAGAIN;
    const auto now = Clock::now();
    if (now >= deadline) return -FI_EAGAIN;
    if (now - start < kSpin) continue;
    // Sleep on the event fd: a worker lcore, or the CM agent's drive ticks when the
    // application's calls run the engine, signal the armed CQ.
    cq->ncq->arm(false);
    if (cq->ncq->queued() > 0) continue;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
    cq->ncq->wait(int(std::min<int64_t>(left + 1, cq->domain->rt->app_driven ? 1 : 100)));
  }
}

ssize_t cq_sread(fid_cq* f, void* buf, size_t count, const void* cond, int timeout) {
  return cq_sreadfrom(f, buf, count, nullptr, cond, timeout);
}

int cq_signal(fid_cq* f) {
  Cq* cq = reinterpret_cast<Cq*>(f);
  cq->signaled = true;
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(cq->ncq->event_fd(), &one, sizeof one);
  return 0;
}

const char* cq_strerror(fid_cq*, int prov_errno, const void*, char* buf, size_t len) {
  if (prov_errno == kProvErrnoOverrun)
    return put_text("completion queue overrun: completions were lost (the CQ is smaller than the requests "
                    "outstanding); its endpoints' connections were ended", buf, len);
  return put_text(prov_errno > 0 && prov_errno <= int(nic::WcStatus::kBadResponse)
                      ? status_text(nic::WcStatus(prov_errno))
                      : "unknown ndnic completion status",
                  buf, len);
}

int cq_close(fid* f) {
  Cq* cq = reinterpret_cast<Cq*>(f);
  if (cq->refs > 0) return -FI_EBUSY;
  cq->domain->rt->dev.destroy_cq(cq->ncq);
  cq->domain->refs--;
  delete cq;
  return 0;
}

int cq_control(fid* f, int command, void* arg) {
  return getwait(command, arg, reinterpret_cast<Cq*>(f)->ncq->event_fd());
}

fi_ops g_cq_fid_ops = fid_ops_with_wait_fd(cq_close, cq_control);
fi_ops_cq g_cq_ops{sizeof(fi_ops_cq), cq_read, cq_readfrom, cq_readerr, cq_sread, cq_sreadfrom, cq_signal, cq_strerror};

}  // namespace

const char* status_text(nic::WcStatus s) {
  switch (s) {
    case nic::WcStatus::kSuccess: return "success";
    case nic::WcStatus::kLocalLength: return "local length error: the receive buffer is too small for the message";
    case nic::WcStatus::kLocalProtection:
      return "local protection error: a buffer outside its region, or a bad descriptor";
    case nic::WcStatus::kLocalQpOperation: return "local QP operation error: the request is invalid for this endpoint";
    case nic::WcStatus::kWrFlushed: return "flushed: the endpoint's connection ended before the request ran";
    case nic::WcStatus::kMwBind: return "memory window bind error";
    case nic::WcStatus::kRemoteAccess: return "remote access error: the peer refused the key, address or rights";
    case nic::WcStatus::kRemoteInvalidRequest:
      return "remote invalid request: the peer could not take the message (receive too small?)";
    case nic::WcStatus::kRemoteOperation: return "remote operational error";
    case nic::WcStatus::kRetryExceeded: return "transport retries exhausted: the peer does not answer";
    case nic::WcStatus::kRnrRetryExceeded:
      return "receiver not ready: the peer posted no receive, RNR retries exhausted";
    case nic::WcStatus::kInvalidation: return "invalidation error";
    case nic::WcStatus::kBadResponse: return "bad response from the peer";
  }
  return "unknown";
}

int status_errno(nic::WcStatus s) {
  switch (s) {
    case nic::WcStatus::kSuccess: return 0;
    case nic::WcStatus::kLocalLength: return FI_ETRUNC;
    case nic::WcStatus::kLocalProtection: return FI_EACCES;
    case nic::WcStatus::kWrFlushed: return FI_ECANCELED;
    case nic::WcStatus::kRemoteAccess: return FI_EACCES;
    case nic::WcStatus::kRemoteInvalidRequest: return FI_EINVAL;
    case nic::WcStatus::kRetryExceeded: return FI_ETIMEDOUT;
    case nic::WcStatus::kRnrRetryExceeded: return FI_ENORX;
    default: return FI_EIO;
  }
}

int cq_trywait(Cq* cq) {
  std::lock_guard lk(cq->mu);
  cq->ncq->wait(0);  // take a past signal off the event fd, so that poll() sleeps
  cq->ncq->arm(false);
  // An overrun not yet said is an entry to read.
  return cq->held.empty() && cq->ncq->queued() == 0 && overrun_status(cq) != -FI_EAVAIL ? 0 : -FI_EAGAIN;
}

int cq_open(fid_domain* fd, fi_cq_attr* attr, fid_cq** out, void* context) {
  if (!attr || !out) return -FI_EINVAL;
  Domain* d = reinterpret_cast<Domain*>(fd);
  const fi_cq_format format = attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_CONTEXT : attr->format;
  if (format != FI_CQ_FORMAT_CONTEXT && format != FI_CQ_FORMAT_MSG && format != FI_CQ_FORMAT_DATA &&
      format != FI_CQ_FORMAT_TAGGED)
    return -FI_ENOSYS;
  if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC && attr->wait_obj != FI_WAIT_FD)
    return -FI_ENOSYS;
  if (attr->size > kMaxCqEntries) return -FI_EINVAL;
  nic::Cq* ncq = d->rt->dev.create_cq(uint32_t(attr->size ? attr->size : kDefaultCqSize));
  if (!ncq) return -FI_ENOMEM;
  auto* cq = new Cq;
  cq->domain = d;
  cq->ncq = ncq;
  cq->format = format;
  cq->wait_obj = attr->wait_obj;
  cq->cq.fid.fclass = FI_CLASS_CQ;
  cq->cq.fid.context = context;
  cq->cq.fid.ops = &g_cq_fid_ops;
  cq->cq.ops = &g_cq_ops;
  d->refs++;
  *out = &cq->cq;
  return 0;
}

}  // namespace ndnic::fabric
