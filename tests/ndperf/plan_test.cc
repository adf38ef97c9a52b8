// ndperf's plan (tools/ndperf/plan.h): a split test's groups, and the plan's encoding in the
// connection request's private data.
#include <gtest/gtest.h>

#include "tools/ndperf/plan.h"

namespace ndnic::ndperf {
namespace {

Options with_qps(uint32_t qps) {
  Options o;
  o.qps = qps;
  o.size = 4096;
  return o;
}

TEST(Plan, GroupsDealTheQpsOutEvenlyAndInOrder) {
  const Plan whole = make_plan(ndperf::Test::kSendBw, with_qps(5), 0, 1, 2);
  ASSERT_EQ(whole.groups, 2);
  const Plan a = group_plan(whole, 0), b = group_plan(whole, 1);
  EXPECT_EQ(a.qps, 3);
  EXPECT_EQ(a.first_qp, 0);
  EXPECT_EQ(a.group, 0);
  EXPECT_EQ(b.qps, 2);
  EXPECT_EQ(b.first_qp, 3);
  EXPECT_EQ(b.group, 1);
  // Eight over three: 3, 3, 2, back to back.
  const Plan w8 = make_plan(ndperf::Test::kWriteBw, with_qps(8), 0, 1, 3);
  uint32_t next = 0;
  for (uint32_t g = 0; g < 3; g++) {
    const Plan p = group_plan(w8, g);
    EXPECT_EQ(p.first_qp, next);
    EXPECT_EQ(p.qps, g < 2 ? 3 : 2);
    next += p.qps;
  }
  EXPECT_EQ(next, 8u);
}

TEST(Plan, OnlyTheBandwidthTestsWithSeveralQpsSplit) {
  EXPECT_EQ(make_plan(ndperf::Test::kReadBw, with_qps(2), 0, 1, 4).groups, 2);  // never more groups than QPs
  EXPECT_EQ(make_plan(ndperf::Test::kSendBw, with_qps(1), 0, 1, 4).groups, 1);
  EXPECT_EQ(make_plan(ndperf::Test::kAtomicBw, with_qps(8), 0, 1, 4).groups, 1);
  EXPECT_EQ(make_plan(ndperf::Test::kSendInv, with_qps(8), 0, 1, 4).groups, 1);
  EXPECT_EQ(make_plan(ndperf::Test::kSendLat, with_qps(8), 0, 1, 4).groups, 1);
}

TEST(Plan, TheGroupTravelsInThePrivateData) {
  const Plan p = group_plan(make_plan(ndperf::Test::kSendBw, with_qps(7), 2, 3, 3), 2);
  const std::vector<uint8_t> v = encode(p);
  const auto d = decode_plan(v.data(), v.size());
  ASSERT_TRUE(d);
  EXPECT_EQ(d->test, p.test);
  EXPECT_EQ(d->qps, p.qps);
  EXPECT_EQ(d->first_qp, p.first_qp);
  EXPECT_EQ(d->group, 2);
  EXPECT_EQ(d->groups, 3);
  EXPECT_EQ(d->index, 2);
  EXPECT_EQ(d->last_size, p.last_size);
}

TEST(Plan, ABadGroupIsRefused) {
  const Plan good = group_plan(make_plan(ndperf::Test::kSendBw, with_qps(4), 0, 1, 2), 1);
  auto bad = [&](auto change) {
    Plan p = good;
    change(p);
    const std::vector<uint8_t> v = encode(p);
    return !decode_plan(v.data(), v.size());
  };
  EXPECT_FALSE(bad([](Plan&) {}));
  EXPECT_TRUE(bad([](Plan& p) { p.groups = 0; }));
  EXPECT_TRUE(bad([](Plan& p) { p.group = p.groups; }));
  EXPECT_TRUE(bad([](Plan& p) { p.first_qp = kMaxQps - 1; }));
}

TEST(Plan, EachGroupHasASliceOfTheBuffer) {
  Options o = with_qps(4);
  o.tests = {ndperf::Test::kSendBw};
  o.threads = 4;
  const Plan p = make_plan(ndperf::Test::kSendBw, o, 0, 1, o.threads);
  EXPECT_GE(layout_for(o).area, p.groups * group_slice(p));
  EXPECT_GE(group_slice(p), p.last_size);
}

}  // namespace
}  // namespace ndnic::ndperf
