// Walking [off, off+len) of a message laid over a list of SGEs: the requester gathers with
// it, the completer places READ responses and the responder scatters SENDs.
#pragma once

#include <algorithm>
#include <cstdint>

#include "ndnic/verbs.h"

namespace ndnic::nic {

/// Calls fn(sge index, offset inside that SGE, bytes) for each piece of [off, off+len), in
/// order; stops early when fn returns false. Returns false if fn did.
template <class Fn>
bool for_each_piece(const Sge* sge, unsigned num_sge, uint32_t off, uint32_t len, Fn&& fn) {
  for (unsigned i = 0; i < num_sge && len; i++) {
    const uint32_t sl = sge[i].length;
    if (off >= sl) {
      off -= sl;
      continue;
    }
    const uint32_t take = std::min(sl - off, len);
    if (!fn(i, off, take)) return false;
    len -= take;
    off = 0;
  }
  return true;
}

}  // namespace ndnic::nic
