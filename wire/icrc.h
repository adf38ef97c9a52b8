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

/// zlib-compatible CRC-32: crc32(crc32(0, a), b) == crc32(0, a||b).
uint32_t crc32(uint32_t crc, const void* data, size_t len);

/// The table-driven (slicing-by-8) implementation, kept for the benchmark and as the fallback
/// where the CPU lacks carry-less multiply.
uint32_t crc32_table(uint32_t crc, const void* data, size_t len);

/// True when crc32() uses the carry-less-multiply (PCLMULQDQ) path on this CPU.
bool crc32_uses_clmul();

/// CRC state over the masked invariant prefix: 8 x 0xff, the IP header at `l3` (IPv4 with its
/// options, or the 40-byte IPv6 header), the UDP header after it and the BTH after that.
/// Continue it with crc32() over the rest of the IB packet (extension headers, payload, pad).
uint32_t icrc_begin(const uint8_t* l3, bool ipv6);

/// The ICRC of a contiguous packet: `ib_len` is the number of bytes from the BTH up to (not
/// including) the ICRC.
uint32_t icrc_compute(const uint8_t* l3, bool ipv6, size_t ib_len);

}  // namespace ndnic::wire
