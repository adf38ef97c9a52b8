#include <algorithm>
#include <cstdio>

#include "tools/ndperf/baselines/memcpy_test.h"
#include "tools/ndperf/baselines/raw_test.h"
#include "tools/ndperf/launch.h"
#include "tools/ndperf/lcore_run.h"
#include "tools/ndperf/nd/groups.h"
#include "tools/ndperf/nd/halves.h"
#include "tools/ndperf/report/report.h"
#include "tools/ndperf/roles.h"

namespace ndnic::ndperf {
namespace {

/// A server may still be restarting its device between two tests (after a baseline), and the
/// embedded one may still be starting: a connection is retried at least this long.
constexpr auto kBetweenTests = std::chrono::seconds(5);

/// A bandwidth test split over groups: group g's QPs connect to the server's port + g, from a
/// thread, a session and a CQ (on worker g) of their own.
bool split_test(Node& node, const Options& o, nd_app::Halt& halt, const Plan& whole, ClientEnv& env) {
  GroupSync sync(whole.groups);
  std::vector<TestResult> unused(whole.groups, TestResult{whole.test, {}});
  return run_groups(whole.groups, [&](uint32_t g) {
    GroupThread thread(false, g);
    const Plan p = group_plan(whole, g);
    ClientEnv e = env;
    e.port = uint16_t(env.port + g);
    e.retry = std::max<std::chrono::steady_clock::duration>(env.retry, kBetweenTests);
    e.groups = &sync;
    e.whole_qps = whole.qps;
    if (g != 0) e.result = &unused[g];
    Session s(o, node, "client", halt, false);
    const bool ok = s.open() && s.set_group(p) && bw_client(s, p, e);
    if (!ok) sync.fail();
    return ok;
  });
}

bool rdma_test(Node& node, const Options& o, nd_app::Halt& halt, const Plan& p, ClientEnv& env) {
  if (p.groups > 1) return split_test(node, o, halt, p, env);
  Session s(o, node, "client", halt, false);
  if (!s.open()) return false;
  switch (info(p.test).kind) {
    case Kind::kLatency: return lat_client(s, p, env);
    case Kind::kCycles: return sendinv_client(s, p, env);
    default: return bw_client(s, p, env);
  }
}

/// The server learns of the baseline through a connection, then both ends stop their devices
/// and meet on the bare ports.
bool raw_test(Node& node, const Options& o, nd_app::Halt& halt, const Plan& p, ClientEnv& env) {
  {
    Session s(o, node, "client", halt, false);
    if (!s.open() || !s.create_cq(4) ||
        !connect_all(s, env, p, {1, 1}, [](uint32_t) { return true; }) || !s.disconnect())
      return false;
  }
  node.stop_device();
  BannerInfo b;
  b.mtu = p.mtu;
  b.link = env.link;
  print_banner(p.test, b);
  const bool ok = node.run_on_own_lcore([&] { return raw_client(node, p, o, env.server_ipv4, env.result); });
  print_end();
  return node.start_device() && ok;
}

bool memcpy_run(Node& node, const Options& o, TestResult* result) {
  node.stop_device();
  print_banner(Test::kMemcpy, BannerInfo{});
  const bool ok = node.run_on_own_lcore([&] { return memcpy_test(node, o, result); });
  print_end();
  return node.start_device() && ok;
}

/// After a Ctrl-C: tells a server that expects more tests that none come.
void say_goodbye(Node& node, const Options& o, uint32_t server_ipv4) {
  nd_app::Halt quiet(false);
  Session s(o, node, "client", quiet, false);
  const Plan bye = make_plan(Test::kCount, o, 0, 0);
  // The server may be between two tests, not listening yet: refusals are retried a while.
  if (s.open() && s.create_cq(4) &&
      s.connect(server_ipv4, o.port, bye, {1, 1}, [](uint32_t) { return true; }, kBetweenTests))
    s.disconnect();
}

}  // namespace

bool run_client(Node& node, const Options& o, uint32_t server_ipv4, nd_app::Halt& halt, RunReport* report) {
  uint8_t served = 0;
  for (Test t : o.tests) served = uint8_t(served + (info(t).needs_peer ? 1 : 0));
  uint8_t index = 0;
  // Connection steps give up on Ctrl-C; a measurement finishes its size.
  halt.set_honor_sigint(true);
  report->tests.reserve(o.tests.size());
  for (Test t : o.tests) {
    if (nd_app::sigint_requested()) break;
    report->tests.push_back(TestResult{t, {}});
    TestResult* result = &report->tests.back();
    ClientEnv env;
    env.server_ipv4 = server_ipv4;
    env.port = o.port;
    // The embedded server is a thread that may not listen yet; a server of its own is
    // waited for as --retry says.
    const std::chrono::seconds retry(o.retry_s);
    env.retry = index == 0 && o.role == Role::kClient ? retry : std::max<std::chrono::seconds>(kBetweenTests, retry);
    env.result = result;
    env.link = node.link();
    bool ok;
    if (t == Test::kMemcpy) {
      ok = memcpy_run(node, o, result);
    } else {
      const Plan p = make_plan(t, o, index++, served, o.threads);
      ok = info(t).rdma ? rdma_test(node, o, halt, p, env) : raw_test(node, o, halt, p, env);
    }
    if (!ok && !(nd_app::sigint_requested() && !halt.aborted())) return false;
    if (!ok) {  // a connection step given up on Ctrl-C: the server still hears goodbye
      if (result->rows.empty()) report->tests.pop_back();
      break;
    }
  }
  if (nd_app::sigint_requested() && index < served) say_goodbye(node, o, server_ipv4);
  return true;
}

}  // namespace ndnic::ndperf
