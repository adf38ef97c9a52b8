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

}  // namespace ndnic::fabric
