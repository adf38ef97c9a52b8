#include "nic/grace_period.h"

#include <rte_pause.h>
#include <rte_rcu_qsbr.h>

namespace ndnic::nic {

uint64_t GracePeriod::start() const { return qsbr_ ? rte_rcu_qsbr_start(qsbr_) : 0; }

bool GracePeriod::passed(uint64_t token) const {
  if (!qsbr_ || rte_rcu_qsbr_check(qsbr_, token, false)) return true;
  if (!quiesce_idle_) return false;
  quiesce_idle_(ctx_);
  return rte_rcu_qsbr_check(qsbr_, token, false);
}

void GracePeriod::wait() const {
  const uint64_t token = start();
  while (!passed(token)) rte_pause();
}

}  // namespace ndnic::nic
