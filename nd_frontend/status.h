// NIC completion statuses as ND v1 results (the seeds decide; nd-v1-facts.md has the rule).
#pragma once

#include "ndnic/ndnic_ext.h"
#include "ndnic/ndspi.h"
#include "ndnic/verbs.h"

namespace ndnic::nd {

HRESULT nd_status(const nic::Completion& c);

}  // namespace ndnic::nd
