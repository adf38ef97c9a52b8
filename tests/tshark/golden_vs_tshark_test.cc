// Wireshark and ndnic read the golden rxe captures the same way: for every RoCEv2 frame every
// field tshark shows equals the decoder's, and frames the decoder calls non-RoCE are not
// InfiniBand to tshark either.
#include <gtest/gtest.h>

#include "tests/golden/golden_captures.h"
#include "tests/tshark/tshark_expect.h"

namespace ndnic::test {
namespace {

class GoldenVsTshark : public ::testing::TestWithParam<GoldenFile> {};

TEST_P(GoldenVsTshark, EveryFieldAgrees) {
  const std::string tshark = find_tshark();
  ASSERT_FALSE(tshark.empty()) << "tshark not found: this test needs it (make test installs it; "
                                  "apt-get install tshark)";
  const GoldenFile& file = GetParam();
  std::vector<DecodedFrame> frames;
  std::string error;
  ASSERT_TRUE(decode_capture(file.path, &frames, &error)) << error;
  std::vector<TsharkRow> rows;
  ASSERT_TRUE(run_tshark_fields(tshark, file.path, tshark_roce_fields(), &rows, &error)) << error;
  ASSERT_EQ(rows.size(), frames.size());

  size_t compared = 0;
  for (const DecodedFrame& f : frames) {
    const TsharkRow& row = rows[f.number - 1];
    SCOPED_TRACE(file.name + " frame " + std::to_string(f.number));
    ASSERT_EQ(row.at("frame.number"), std::to_string(f.number));
    if (is_non_roce_reject(f.result)) {
      EXPECT_TRUE(tshark_saw_no_roce(row)) << "tshark decoded a BTH in a frame ndnic calls "
                                           << wire::reject_name(f.result);
      continue;
    }
    ASSERT_EQ(f.result, wire::Reject::kOk) << wire::reject_name(f.result);
    for (const std::string& diff : tshark_mismatches(f.pkt, row)) ADD_FAILURE() << diff;
    compared++;
  }
  std::printf("%s: %zu RoCEv2 frames agree with %s\n", file.path.c_str(), compared, tshark.c_str());
}

INSTANTIATE_TEST_SUITE_P(Captures, GoldenVsTshark, ::testing::ValuesIn(golden_files()),
                         [](const auto& info) { return info.param.label; });

}  // namespace
}  // namespace ndnic::test
