// Every libfabric ops table is filled: an operation ndnic does not offer answers -FI_ENOSYS
// (a NULL pointer would crash the application that calls it).
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

namespace ndnic::fabric {

template <typename F>
struct Enosys;

/// Enosys<decltype(ops.op)>::fn: a function of the op's own signature that returns -FI_ENOSYS.
template <typename R, typename... A>
struct Enosys<R (*)(A...)> {
  static R fn(A...) { return R(-FI_ENOSYS); }
};

/// Fills a table field with its -FI_ENOSYS answer.
#define NDNIC_ENOSYS(table, op) (table).op = ::ndnic::fabric::Enosys<decltype((table).op)>::fn

/// The fid-level operations nobody here needs (bind, control, ops_open, tostr, ops_set).
fi_ops fid_ops_with_close(int (*close)(fid*));
/// The same, with a control() that answers FI_GETWAIT for a CQ or EQ with its event fd.
fi_ops fid_ops_with_wait_fd(int (*close)(fid*), int (*control)(fid*, int, void*));
/// control()'s FI_GETWAIT answer: fd into *arg; anything else -FI_ENOSYS.
int getwait(int command, void* arg, int fd);
/// A *_strerror answer: `text`, copied into the caller's buffer when it gives one.
const char* put_text(const char* text, char* buf, size_t len);

}  // namespace ndnic::fabric
