// Encoder and decoder cost per packet, one benchmark per opcode shape, decode with the ICRC
// check on and off (off is what a port that verifies the ICRC elsewhere would run).
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "wire/packet.h"

namespace ndnic::wire {
namespace {

/// One benchmarked packet shape.
struct Case {
  uint8_t opcode;          ///< BTH opcode
  uint32_t payload_len;    ///< payload bytes (0 for opcodes without payload)
};

constexpr Case kCases[] = {
    {kRcSendOnly, 64},
    {kRcSendOnly, 1024},
    {kRcSendOnlyImm, 64},
    {kRcWriteFirst, 1024},
    {kRcWriteMiddle, 1024},
    {kRcWriteOnly, 64},
    {kRcReadRequest, 0},
    {kRcReadResponseOnly, 1024},
    {kRcAck, 0},
    {kRcCompareSwap, 0},
    {kRcAtomicAck, 0},
    {kRcSendOnlyInv, 64},
    {kUdSendOnly, 256},  // a CM MAD on QP1
};

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
  for (auto _ : state) {
    benchmark::DoNotOptimize(encode_headers(p, frame.data()));
    benchmark::ClobberMemory();
  }
  finish(state, frame.size());
}

bool register_all() {
  for (const Case& c : kCases) {
    const std::string name = std::string(opcode_info(c.opcode).name) + "/" +
                             std::to_string(c.payload_len);
    benchmark::RegisterBenchmark(("decode/" + name + "/icrc").c_str(), bm_decode, c, true);
    benchmark::RegisterBenchmark(("decode/" + name + "/no_icrc").c_str(), bm_decode, c, false);
    benchmark::RegisterBenchmark(("encode_frame/" + name).c_str(), bm_encode_frame, c);
    benchmark::RegisterBenchmark(("encode_headers/" + name).c_str(), bm_encode_headers, c);
  }
  return true;
}

// benchmark_main runs after static initialisation, so the table is registered by then.
const bool g_registered = register_all();

}  // namespace
}  // namespace ndnic::wire
