// CRC-32 and the RoCEv2 Invariant CRC.
//
// The ICRC is CRC-32 (IEEE 802.3 polynomial, reflected, zlib's crc32) over: 8 bytes of 0xff
// (a masked LRH) + the IP header with its variant fields masked to ones + the UDP header with
// the checksum masked + the BTH with resv8 masked + everything after the BTH up to the ICRC.
// It is stored little-endian after the pad bytes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ndnic::wire {

/// crc32() of at least one byte.
uint32_t crc32_nonempty(uint32_t crc, const void* data, size_t len);

/// zlib-compatible CRC-32: crc32(crc32(0, a), b) == crc32(0, a||b). Inline for the empty
/// input, which every small packet has twice or more (no extension header, no pad): the call
/// and the dispatch cost ~20 instructions per frame for nothing.
inline uint32_t crc32(uint32_t crc, const void* data, size_t len) {
  return len == 0 ? crc : crc32_nonempty(crc, data, len);
}

/// The table-driven (slicing-by-8) implementation, kept for the benchmark and as the fallback
/// where the CPU lacks carry-less multiply.
uint32_t crc32_table(uint32_t crc, const void* data, size_t len);

/// crc32() of the 4 bytes at `p`, as four table lookups: an ACK's AETH, where the dispatch and
/// the byte loop of the general path cost several times the CRC itself.
uint32_t crc32_4(uint32_t crc, const uint8_t* p);

/// True when crc32() uses carry-less multiply (PCLMULQDQ or VPCLMULQDQ) for large inputs.
bool crc32_uses_clmul();

/// The implementation crc32() uses for large inputs: "vpclmulqdq" (512-bit), "vpclmulqdq-256",
/// "pclmulqdq" or "table". Chosen once at start: the widest the CPU has, or the one the
/// environment variable NDNIC_CRC=table|pclmul|vpclmul256|vpclmul names where the CPU has it
/// (tests and benchmarks force each path that way; one the CPU lacks gives the widest it has).
const char* crc32_path();

/// Copies len bytes from src to dst (which must not overlap) and returns crc32(crc, src, len).
/// For a received payload copied into the application's buffer while its ICRC is checked:
/// where the CPU can, it reads each byte once, for the copy and the CRC together.
uint32_t crc32_copy(uint32_t crc, void* dst, const void* src, size_t len);

/// CRC state over the masked invariant prefix: 8 x 0xff, the IP header at `l3` (IPv4 with its
/// options, or the 40-byte IPv6 header), the UDP header after it and the BTH after that.
/// Continue it with crc32() over the rest of the IB packet (extension headers, payload, pad).
uint32_t icrc_begin(const uint8_t* l3, bool ipv6);

/// The ICRC of a contiguous packet: `ib_len` is the number of bytes from the BTH up to (not
/// including) the ICRC.
uint32_t icrc_compute(const uint8_t* l3, bool ipv6, size_t ib_len);

}  // namespace ndnic::wire
