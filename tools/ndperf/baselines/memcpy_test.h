// memcpy: one core copying the message sizes between the two areas of the end's registered
// buffer (send area to recv area), the ceiling a software NIC that copies every payload
// once works against. Runs on the client's first worker lcore with its device stopped.
#pragma once

#include "tools/ndperf/node.h"
#include "tools/ndperf/results.h"

namespace ndnic::ndperf {

bool memcpy_test(Node& node, const Options& o, TestResult* result);

}  // namespace ndnic::ndperf
