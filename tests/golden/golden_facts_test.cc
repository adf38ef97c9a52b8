// What MANIFEST.md says each rxe program put on the wire, checked field by field against the
// decoder's view: pad counts, PSN wrap, AETH syndromes, IETH keys, atomics, CM MADs on QP1.
// The values come from the programs' command lines in the manifest (sizes, immediates, atomic
// operands), not from the captures, so a capture of another run must pass too.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

#include "tests/golden/golden_captures.h"

namespace ndnic::test {
namespace {

using wire::RocePacket;

/// A packet's direction: source and destination IPv4 address (rxe runs over IPv4 here).
using Direction = std::pair<uint32_t, uint32_t>;
Direction dir(const RocePacket& p) { return {p.ip4.src, p.ip4.dst}; }
Direction reverse(const RocePacket& p) { return {p.ip4.dst, p.ip4.src}; }

struct Capture {
  std::string path;
  std::vector<DecodedFrame> frames;      ///< every frame
  std::vector<const DecodedFrame*> roce;  ///< the RoCEv2 ones, in order
};

/// Every golden capture called `name` (the project's copy, and ../shared's when present).
std::vector<Capture> captures_named(const std::string& name) {
  std::vector<Capture> out;
  for (const GoldenFile& f : golden_files()) {
    if (f.name != name) continue;
    Capture c;
    c.path = f.path;
    std::string error;
    EXPECT_TRUE(decode_capture(f.path, &c.frames, &error)) << error;
    out.push_back(std::move(c));
  }
  for (Capture& c : out)
    for (const DecodedFrame& f : c.frames)
      if (f.result == wire::Reject::kOk) c.roce.push_back(&f);
  EXPECT_FALSE(out.empty()) << "no golden capture named " << name;
  return out;
}

std::vector<const DecodedFrame*> with_opcode(const Capture& c, uint8_t opcode) {
  std::vector<const DecodedFrame*> out;
  for (const DecodedFrame* f : c.roce)
    if (f->pkt.bth.opcode == opcode) out.push_back(f);
  return out;
}

uint32_t psn_add(uint32_t psn, uint32_t n) { return (psn + n) & wire::kPsnMask; }

/// Bytes of the payload of a decoded frame, and the pad bytes after it.
std::vector<uint8_t> payload_of(const DecodedFrame& f) {
  return {f.pkt.payload, f.pkt.payload + f.pkt.payload_len};
}
std::vector<uint8_t> pad_of(const DecodedFrame& f) {
  const uint8_t* end = f.pkt.payload + f.pkt.payload_len;
  return {end, end + f.pkt.bth.pad};
}

size_t index_of(const Capture& c, const DecodedFrame* f) {
  size_t i = 0;
  while (c.roce[i] != f) i++;
  return i;
}

bool same_flow(const RocePacket& a, const RocePacket& b) {
  return dir(a) == dir(b) && a.bth.dest_qp == b.bth.dest_qp;
}

/// The FIRST packet of the message that `last` ends (its own flow: direction and QP).
const DecodedFrame* first_of_message(const Capture& c, const DecodedFrame* last) {
  for (size_t i = index_of(c, last) + 1; i-- > 0;) {
    const RocePacket& p = c.roce[i]->pkt;
    if (same_flow(p, last->pkt) && wire::opcode_info(p.bth.opcode).position == wire::Position::kFirst)
      return c.roce[i];
  }
  return nullptr;
}

/// Total payload of the multi-packet message that ends with `last`.
uint64_t message_bytes(const Capture& c, const DecodedFrame* last) {
  const DecodedFrame* first = first_of_message(c, last);
  if (!first) return 0;
  uint64_t total = 0;
  for (size_t i = index_of(c, first); i <= index_of(c, last); i++)
    if (same_flow(c.roce[i]->pkt, last->pkt)) total += c.roce[i]->pkt.payload_len;
  return total;
}

TEST(GoldenFacts, PadBytesAreZeroAndPadCountsMatchPayloads) {
  for (const GoldenFile& file : golden_files()) {
    std::vector<DecodedFrame> frames;
    std::string error;
    ASSERT_TRUE(decode_capture(file.path, &frames, &error)) << error;
    for (const DecodedFrame& f : frames) {
      if (f.result != wire::Reject::kOk) continue;
      SCOPED_TRACE(file.path + " frame " + std::to_string(f.number));
      EXPECT_EQ(f.pkt.bth.pad, wire::pad_for(f.pkt.payload_len));
      EXPECT_EQ(pad_of(f), std::vector<uint8_t>(f.pkt.bth.pad, 0));
    }
  }
}

TEST(GoldenFacts, ImmediatesZeroLengthAndPaddedMessages) {
  for (const Capture& c : captures_named("imm.pcap")) {
    SCOPED_TRACE(c.path);
    auto send_only_imm = with_opcode(c, wire::kRcSendOnlyImm);
    ASSERT_EQ(send_only_imm.size(), 1u);
    EXPECT_EQ(send_only_imm[0]->pkt.payload_len, 30u);
    EXPECT_EQ(send_only_imm[0]->pkt.bth.pad, 2);
    EXPECT_EQ(send_only_imm[0]->pkt.imm, 0x11223344u);

    auto send_last_imm = with_opcode(c, wire::kRcSendLastImm);
    ASSERT_EQ(send_last_imm.size(), 1u);
    EXPECT_EQ(send_last_imm[0]->pkt.imm, 0x55667788u);
    EXPECT_EQ(message_bytes(c, send_last_imm[0]), 2501u);
    EXPECT_EQ(send_last_imm[0]->pkt.bth.pad, wire::pad_for(2501));
    EXPECT_NE(send_last_imm[0]->pkt.bth.pad, 0);

    auto write_only_imm = with_opcode(c, wire::kRcWriteOnlyImm);
    ASSERT_EQ(write_only_imm.size(), 2u);
    std::map<uint32_t, const RocePacket*> by_imm;
    for (auto* f : write_only_imm) by_imm[f->pkt.imm] = &f->pkt;
    ASSERT_TRUE(by_imm.count(0xdeadbeef) && by_imm.count(0x0badc0de));
    EXPECT_EQ(by_imm[0xdeadbeef]->payload_len, 61u);
    EXPECT_EQ(by_imm[0xdeadbeef]->reth.dma_len, 61u);
    EXPECT_EQ(by_imm[0xdeadbeef]->bth.pad, 3);
    EXPECT_EQ(by_imm[0x0badc0de]->payload_len, 0u);
    EXPECT_EQ(by_imm[0x0badc0de]->reth.dma_len, 0u);
    EXPECT_EQ(by_imm[0x0badc0de]->bth.pad, 0);

    auto write_last_imm = with_opcode(c, wire::kRcWriteLastImm);
    ASSERT_EQ(write_last_imm.size(), 1u);
    EXPECT_EQ(write_last_imm[0]->pkt.imm, 0xcafef00du);
    EXPECT_EQ(message_bytes(c, write_last_imm[0]), 2500u);
    const DecodedFrame* write_first = first_of_message(c, write_last_imm[0]);
    ASSERT_NE(write_first, nullptr);
    EXPECT_EQ(write_first->pkt.reth.dma_len, 2500u);

    std::multiset<uint32_t> send_only_lens, write_only_lens;
    for (auto* f : with_opcode(c, wire::kRcSendOnly)) send_only_lens.insert(f->pkt.payload_len);
    for (auto* f : with_opcode(c, wire::kRcWriteOnly)) {
      write_only_lens.insert(f->pkt.payload_len);
      EXPECT_EQ(f->pkt.reth.dma_len, f->pkt.payload_len);
    }
    EXPECT_EQ(send_only_lens, (std::multiset<uint32_t>{0, 1}));
    EXPECT_EQ(write_only_lens, (std::multiset<uint32_t>{0, 5}));
  }
}

// Every READ REQUEST is answered, in the other direction, by responses whose PSNs count up from
// the request's PSN (modulo 2^24), FIRST..LAST or ONLY, carrying exactly the requested length.
void check_read_responses(const Capture& c, bool* saw_wrap) {
  for (size_t i = 0; i < c.roce.size(); i++) {
    const RocePacket& req = c.roce[i]->pkt;
    if (req.bth.opcode != wire::kRcReadRequest) continue;
    SCOPED_TRACE("READ REQUEST frame " + std::to_string(c.roce[i]->number));
    uint64_t got = 0;
    uint32_t k = 0;
    for (size_t j = i + 1; j < c.roce.size(); j++) {
      const RocePacket& r = c.roce[j]->pkt;
      if (dir(r) != reverse(req) || wire::opcode_info(r.bth.opcode).kind != wire::OpKind::kReadResponse ||
          r.bth.psn != psn_add(req.bth.psn, k))
        continue;
      const wire::Position pos = wire::opcode_info(r.bth.opcode).position;
      EXPECT_EQ(pos == wire::Position::kFirst || pos == wire::Position::kOnly, k == 0);
      if (k > 0 && r.bth.psn < req.bth.psn) *saw_wrap = true;
      got += r.payload_len;
      k++;
      if (pos == wire::Position::kLast || pos == wire::Position::kOnly) break;
    }
    EXPECT_GT(k, 0u) << "no response";
    EXPECT_EQ(got, req.reth.dma_len);
  }
}

TEST(GoldenFacts, ReadResponsesCountPsnsFromTheRequest) {
  bool wrap = false;
  for (const GoldenFile& file : golden_files()) {
    Capture c;
    std::string error;
    ASSERT_TRUE(decode_capture(file.path, &c.frames, &error)) << error;
    for (const DecodedFrame& f : c.frames)
      if (f.result == wire::Reject::kOk) c.roce.push_back(&f);
    SCOPED_TRACE(file.path);
    check_read_responses(c, &wrap);
  }
}

TEST(GoldenFacts, MemoryWindowPsnWrapInvalidateAndRemoteAccessNaks) {
  for (const Capture& c : captures_named("mw_inv.pcap")) {
    SCOPED_TRACE(c.path);
    // B's send queue starts at PSN 0xfffffd: the WRITE takes fffffd/fffffe, the READ ffffff
    // and wraps to 0 inside its response.
    bool wrap = false;
    check_read_responses(c, &wrap);
    EXPECT_TRUE(wrap) << "no READ response crossed PSN 0xffffff -> 0";
    auto write_first = with_opcode(c, wire::kRcWriteFirst);
    ASSERT_FALSE(write_first.empty());
    EXPECT_EQ(write_first[0]->pkt.bth.psn, 0xfffffdu);

    // The IETH of every SEND WITH INVALIDATE names the window's R_Key: the one the same
    // requester last used in a RETH, and a memory-window key (0x080001xx).
    std::map<std::pair<Direction, uint32_t>, uint32_t> last_rkey;
    std::vector<uint32_t> invalidated;
    for (const DecodedFrame* f : c.roce) {
      const RocePacket& p = f->pkt;
      const auto key = std::make_pair(dir(p), p.bth.dest_qp);
      const uint8_t ext = wire::opcode_info(p.bth.opcode).ext;
      if (ext & wire::kHdrReth) last_rkey[key] = p.reth.rkey;
      if (ext & wire::kHdrIeth) {
        SCOPED_TRACE("frame " + std::to_string(f->number));
        ASSERT_TRUE(last_rkey.count(key)) << "IETH before any RETH on this QP";
        EXPECT_EQ(p.ieth_rkey, last_rkey[key]);
        EXPECT_EQ(p.ieth_rkey >> 8, 0x080001u);
        invalidated.push_back(p.ieth_rkey);
      }
    }
    EXPECT_EQ(invalidated.size(), 2u);

    // Both WRITEs to invalidated keys get AETH 0x62 (NAK, remote access error) with the
    // offending PSN and the MSN of the last ACK before it.
    int naks = 0;
    std::map<std::pair<Direction, uint32_t>, uint32_t> last_msn;
    std::map<Direction, const RocePacket*> last_request;
    for (const DecodedFrame* f : c.roce) {
      const RocePacket& p = f->pkt;
      const wire::OpKind kind = wire::opcode_info(p.bth.opcode).kind;
      if (kind != wire::OpKind::kAck && kind != wire::OpKind::kReadResponse && kind != wire::OpKind::kAtomicAck) {
        last_request[dir(p)] = &p;
        continue;
      }
      if (!(wire::opcode_info(p.bth.opcode).ext & wire::kHdrAeth)) continue;
      if (p.aeth.syndrome == 0x62) {
        SCOPED_TRACE("NAK frame " + std::to_string(f->number));
        naks++;
        const RocePacket* req = last_request[reverse(p)];
        ASSERT_NE(req, nullptr);
        EXPECT_EQ(req->bth.opcode, wire::kRcWriteOnly);
        EXPECT_EQ(p.bth.psn, req->bth.psn);
        EXPECT_EQ(p.aeth.msn, (last_msn[{dir(p), p.bth.dest_qp}])) << "a NAK does not complete a message";
      } else {
        EXPECT_EQ(p.aeth.syndrome, 0x1f) << "frame " << f->number;
      }
      last_msn[{dir(p), p.bth.dest_qp}] = p.aeth.msn;
    }
    EXPECT_EQ(naks, 2);
  }
}

TEST(GoldenFacts, AtomicsCarryTheirOperandsAndOriginalValues) {
  for (const Capture& c : captures_named("atomic.pcap")) {
    SCOPED_TRACE(c.path);
    std::vector<const RocePacket*> requests, acks;
    for (const DecodedFrame* f : c.roce) {
      if (wire::opcode_info(f->pkt.bth.opcode).kind == wire::OpKind::kAtomic) requests.push_back(&f->pkt);
      if (f->pkt.bth.opcode == wire::kRcAtomicAck) acks.push_back(&f->pkt);
    }
    ASSERT_EQ(requests.size(), 4u);
    ASSERT_EQ(acks.size(), 4u);
    // CMP_SWAP(100->200), CMP_SWAP(100->300), FETCH_ADD(5), FETCH_ADD(2^32) on a target of 100.
    const uint8_t ops[4] = {wire::kRcCompareSwap, wire::kRcCompareSwap, wire::kRcFetchAdd, wire::kRcFetchAdd};
    const uint64_t swap_add[4] = {200, 300, 5, 0x100000000ull};
    const uint64_t compare[4] = {100, 100, 0, 0};
    const uint64_t orig[4] = {100, 200, 200, 205};
    for (int i = 0; i < 4; i++) {
      SCOPED_TRACE("atomic " + std::to_string(i));
      EXPECT_EQ(requests[i]->bth.opcode, ops[i]);
      EXPECT_EQ(requests[i]->atomic.swap_add, swap_add[i]);
      EXPECT_EQ(requests[i]->atomic.compare, compare[i]);
      EXPECT_EQ(requests[i]->atomic.va % 8, 0u);
      EXPECT_EQ(requests[i]->atomic.va, requests[0]->atomic.va);
      EXPECT_EQ(requests[i]->atomic.rkey, requests[0]->atomic.rkey);
      EXPECT_TRUE(requests[i]->bth.ack_req);
      EXPECT_EQ(acks[i]->bth.psn, requests[i]->bth.psn);
      EXPECT_EQ(acks[i]->atomic_ack.orig, orig[i]);
      EXPECT_EQ(acks[i]->aeth.syndrome, 0x1f);
    }
    // READ 8 B of the target: 0x1000000cd, little-endian as it sits in host memory.
    auto read_resp = with_opcode(c, wire::kRcReadResponseOnly);
    ASSERT_EQ(read_resp.size(), 1u);
    EXPECT_EQ(payload_of(*read_resp[0]), (std::vector<uint8_t>{0xcd, 0, 0, 0, 1, 0, 0, 0}));
    auto sends = with_opcode(c, wire::kRcSendOnly);
    ASSERT_EQ(sends.size(), 2u);
    EXPECT_FALSE(sends[0]->pkt.bth.se);
    EXPECT_TRUE(sends[1]->pkt.bth.se) << "only the solicited SEND sets SE";
  }
}

TEST(GoldenFacts, CmMadsGoToQp1WithTheGsiQkey) {
  for (const Capture& c : captures_named("cm.pcap")) {
    SCOPED_TRACE(c.path);
    auto mads = with_opcode(c, wire::kUdSendOnly);
    ASSERT_EQ(mads.size(), 5u);
    std::map<Direction, uint32_t> next_psn;
    for (const DecodedFrame* f : mads) {
      const RocePacket& p = f->pkt;
      SCOPED_TRACE("frame " + std::to_string(f->number));
      EXPECT_EQ(p.bth.dest_qp, 1u);
      EXPECT_EQ(p.deth.qkey, 0x80010000u);
      EXPECT_EQ(p.deth.src_qp, 1u);
      EXPECT_TRUE(p.bth.ack_req);
      EXPECT_EQ(p.payload_len, 256u) << "a MAD is 256 bytes";
      EXPECT_EQ(p.bth.psn, next_psn[dir(p)]++) << "QP1 PSNs count from 0 per sender";
      ASSERT_GE(p.payload_len, 4u);
      EXPECT_EQ(p.payload[1], 0x07) << "management class: CM";
      EXPECT_EQ(p.payload[3], 0x03) << "method: Send";
    }
  }
}

TEST(GoldenFacts, SendsAreAckedOncePerMessageWithUnlimitedCredits) {
  for (const Capture& c : captures_named("send.pcap")) {
    SCOPED_TRACE(c.path);
    std::map<std::pair<Direction, uint32_t>, uint32_t> msn;  // per direction and QP
    size_t acks = 0, messages = 0;
    for (const DecodedFrame* f : c.roce) {
      const RocePacket& p = f->pkt;
      const wire::OpcodeInfo& info = wire::opcode_info(p.bth.opcode);
      if (info.kind == wire::OpKind::kSend) {
        const bool ends = info.position == wire::Position::kLast || info.position == wire::Position::kOnly;
        EXPECT_EQ(p.bth.ack_req, ends) << "frame " << f->number;
        messages += ends;
      } else if (p.bth.opcode == wire::kRcAck) {
        acks++;
        EXPECT_EQ(p.aeth.syndrome, 0x1f) << "frame " << f->number;
        uint32_t& prev = msn[{dir(p), p.bth.dest_qp}];
        EXPECT_EQ(p.aeth.msn, prev + 1) << "frame " << f->number << ": one ACK per message";
        prev = p.aeth.msn;
      }
    }
    EXPECT_GT(messages, 0u);
    EXPECT_EQ(acks, messages);
  }
}

}  // namespace
}  // namespace ndnic::test
