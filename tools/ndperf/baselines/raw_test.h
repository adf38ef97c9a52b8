// raw_bw and raw_lat: the baselines for the RDMA tests, on the same ports and lcores. Each end
// stops its ndnic device (its port stays open) and runs the test on the device's first worker
// lcore with the port's own bursts; the client sends, the server counts (raw_bw) or sends each
// message back (raw_lat). A handshake of control frames per size (start, end) tells the
// server what comes and the client what arrived.
//
// raw_bw: the client sends -n messages of S bytes as fast as the port takes them; BW and
// MsgRate are the client's, from its first frame to its last. raw_lat: the client sends a
// message and waits for it to come back, -n times; latency is half of each round trip. The
// server copies every payload into its buffer as a receive would and checks the last
// message's bytes of each size; raw_lat's client checks the last answer's.
#pragma once

#include "tools/nd_app/halt.h"
#include "tools/ndperf/nd/exchange.h"
#include "tools/ndperf/node.h"

namespace ndnic::ndperf {

/// Runs on the node's first worker lcore, with the node's device stopped; prints its rows.
bool raw_client(Node& node, const Plan& p, const Options& o, uint32_t server_ipv4, TestResult* result);
/// Serves one raw test (every size of it) until the client says goodbye, or the halt.
bool raw_server(Node& node, nd_app::Halt& halt);

}  // namespace ndnic::ndperf
