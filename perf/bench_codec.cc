// Encoder and decoder cost per packet, one benchmark per opcode (every opcode of the wire
// table), decode with the ICRC check on and off (off is what a port that verifies the ICRC
// elsewhere would run). Names are <what>/<OPCODE>/<payload bytes>[/icrc|/no_icrc].
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "ndnic/wire/packet.h"

namespace ndnic::wire {
namespace {

/// One benchmarked packet shape.
struct Case {
  uint8_t opcode;          ///< BTH opcode
  uint32_t payload_len;    ///< payload bytes (0 for opcodes without payload)
};

// Each case is timed for a fraction of a second: ~100 of them must fit in the ~20 s a default
// run may take, and at tens of nanoseconds per call that is still millions of iterations.
constexpr double kMinTime = 0.05;
constexpr uint32_t kSmallPayload = 64;   ///< a small message: the headers dominate
constexpr uint32_t kMtuPayload = 1024;   ///< a full packet at rxe's default path MTU

/// Every opcode the wire table knows (all RC opcodes, and UD SEND ONLY for the CM's MADs), each
/// with the payload it typically carries: a full MTU inside a message (FIRST/MIDDLE must carry
/// exactly one), a small one at its end; then the ONLY opcodes once more at a full MTU, where
/// the payload copy and the ICRC take over from the headers.
std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (unsigned op = 0; op < 256; op++) {
    if (!opcode_known(uint8_t(op))) continue;
    const OpcodeInfo& info = opcode_info(uint8_t(op));
    const bool inside = info.position == Position::kFirst || info.position == Position::kMiddle;
    const uint32_t len = !info.has_payload ? 0 : inside ? kMtuPayload : kSmallPayload;
    cases.push_back({uint8_t(op), len});
  }
  for (uint8_t op : {kRcSendOnly, kRcWriteOnly, kRcReadResponseOnly}) cases.push_back({op, kMtuPayload});
  return cases;
}

/// A frame of `c`, with every header of its opcode filled in.
std::vector<uint8_t> make_frame(const Case& c, RocePacket* p, std::vector<uint8_t>* payload) {
  payload->assign(c.payload_len, 0xa5);
  *p = RocePacket{};
  p->ip4.src = 0x0a000001;
  p->ip4.dst = 0x0a000002;
  p->udp.src_port = 0xc001;
  p->bth = {.opcode = c.opcode, .dest_qp = 0x11, .ack_req = true, .psn = 0x123456};
  p->reth = {.va = 0x7f0000001000, .rkey = 0x1234, .dma_len = 4096};
  p->aeth = {.syndrome = 0x1f, .msn = 7};
  p->atomic = {.va = 0x7f0000002000, .rkey = 0x5678, .swap_add = 1, .compare = 2};
  p->atomic_ack.orig = 3;
  p->ieth_rkey = 0x9abc;
  p->imm = 0xfeedface;
  p->deth = {.qkey = 0x80010000, .src_qp = 1};
  p->payload = payload->data();
  p->payload_len = c.payload_len;
  std::vector<uint8_t> frame(frame_length(*p));
  encode_frame(*p, frame.data(), frame.size());
  return frame;
}

void finish(benchmark::State& state, size_t frame_len) {
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * int64_t(frame_len));
}

void bm_decode(benchmark::State& state, Case c, bool check_icrc) {
  RocePacket p;
  std::vector<uint8_t> payload;
  const auto frame = make_frame(c, &p, &payload);
  const DecodeOptions opt{.check_icrc = check_icrc};
  RocePacket out;
  for (auto _ : state) {
    if (decode_frame(frame.data(), frame.size(), &out, opt) != Reject::kOk) {
      state.SkipWithError("decode rejected the frame");
      break;
    }
    benchmark::DoNotOptimize(out);
  }
  finish(state, frame.size());
}

void bm_encode_frame(benchmark::State& state, Case c) {
  RocePacket p;
  std::vector<uint8_t> payload;
  auto frame = make_frame(c, &p, &payload);
  // What is timed must be a frame the decoder takes back, ICRC and all.
  RocePacket back;
  if (encode_frame(p, frame.data(), frame.size()) != frame.size() ||
      decode_frame(frame.data(), frame.size(), &back) != Reject::kOk || back.bth.opcode != c.opcode) {
    state.SkipWithError("the encoded frame does not decode");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(encode_frame(p, frame.data(), frame.size()));
    benchmark::ClobberMemory();
  }
  finish(state, frame.size());
}

// Headers only: no payload copy and no ICRC, the part a zero-copy transmit path would pay.
void bm_encode_headers(benchmark::State& state, Case c) {
  RocePacket p;
  std::vector<uint8_t> payload;
  auto frame = make_frame(c, &p, &payload);
  if (encode_headers(p, frame.data()) != header_length(p)) {
    state.SkipWithError("encode_headers wrote an unexpected length");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(encode_headers(p, frame.data()));
    benchmark::ClobberMemory();
  }
  finish(state, frame.size());
}

bool register_all() {
  for (const Case& c : all_cases()) {
    const std::string name = std::string(opcode_info(c.opcode).name) + "/" +
                             std::to_string(c.payload_len);
    benchmark::RegisterBenchmark(("decode/" + name + "/icrc").c_str(), bm_decode, c, true)->MinTime(kMinTime);
    benchmark::RegisterBenchmark(("decode/" + name + "/no_icrc").c_str(), bm_decode, c, false)->MinTime(kMinTime);
    benchmark::RegisterBenchmark(("encode_frame/" + name).c_str(), bm_encode_frame, c)->MinTime(kMinTime);
    benchmark::RegisterBenchmark(("encode_headers/" + name).c_str(), bm_encode_headers, c)->MinTime(kMinTime);
  }
  return true;
}

// benchmark_main runs after static initialisation, so the table is registered by then.
const bool g_registered = register_all();

}  // namespace
}  // namespace ndnic::wire
