#!/usr/bin/env python3
"""ndpcap from the outside: exit status, text and JSON output, errors on bad files.

The frames are also decoded here, independently of wire/ (a few lines of struct unpacking and
zlib's CRC-32 for the ICRC), and ndpcap's JSON must agree with that decoding.

Usage: ndpcap_cli_test.py NDPCAP   (golden directories from $NDNIC_GOLDEN_DIRS, as the C++ tests)
"""
import json
import os
import pathlib
import struct
import subprocess
import sys
import tempfile
import unittest
import zlib

NDPCAP = None
ROCE_PORT = 4791


def golden_pcaps():
    found = []
    for entry in os.environ.get("NDNIC_GOLDEN_DIRS", "").split(":"):
        if not entry:
            continue
        d = pathlib.Path(entry.split("=", 1)[-1])
        if d.is_dir():
            found += sorted(d.rglob("*.pcap"))
    return found


def read_pcap(path):
    """(endian, file header, [(record header fields, data)]) of a classic pcap."""
    raw = pathlib.Path(path).read_bytes()
    magic = raw[:4]
    endian = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    records, off = [], 24
    while off < len(raw):
        sec, frac, incl, orig = struct.unpack(endian + "IIII", raw[off:off + 16])
        records.append(((sec, frac, incl, orig), raw[off + 16:off + 16 + incl]))
        off += 16 + incl
    return endian, raw[:24], records


def write_pcap(path, endian, header, records):
    with open(path, "wb") as f:
        f.write(header)
        for (sec, frac, _incl, orig), data in records:
            f.write(struct.pack(endian + "IIII", sec, frac, len(data), orig))
            f.write(data)


def icrc(l3, ipv6, ib_end):
    """RoCEv2 ICRC: CRC-32 over 8 x 0xff, IP/UDP/BTH with variant fields set to ones, the rest."""
    ip_len = 40 if ipv6 else (l3[0] & 0x0F) * 4
    masked = bytearray(l3[:ib_end])
    if ipv6:
        masked[0] |= 0x0F
        masked[1:4] = b"\xff\xff\xff"
        masked[7] = 0xFF
    else:
        masked[1] = 0xFF
        masked[8] = 0xFF
        masked[10:12] = b"\xff\xff"
    masked[ip_len + 6:ip_len + 8] = b"\xff\xff"
    masked[ip_len + 8 + 4] = 0xFF
    return zlib.crc32(b"\xff" * 8 + bytes(masked)) & 0xFFFFFFFF


def independent_decode(frame):
    """What any reader of RoCEv2 must see in a well-formed frame, or None if it is not UDP/4791."""
    off, ethertype = 14, struct.unpack(">H", frame[12:14])[0]
    if ethertype == 0x8100:
        off, ethertype = 18, struct.unpack(">H", frame[16:18])[0]
    l3 = frame[off:]
    if ethertype == 0x0800 and l3[9] == 17:
        ipv6, ip_len = False, (l3[0] & 0x0F) * 4
        src, dst = ".".join(map(str, l3[12:16])), ".".join(map(str, l3[16:20]))
    elif ethertype == 0x86DD and l3[6] == 17:
        import ipaddress
        ipv6, ip_len = True, 40
        src, dst = str(ipaddress.IPv6Address(l3[8:24])), str(ipaddress.IPv6Address(l3[24:40]))
    else:
        return None
    sport, dport, udp_len = struct.unpack(">HHH", l3[ip_len:ip_len + 6])
    if dport != ROCE_PORT:
        return None
    bth = l3[ip_len + 8:]
    ib_end = ip_len + udp_len - 4
    stored = struct.unpack("<I", l3[ib_end:ib_end + 4])[0]
    return {
        "src": src, "dst": dst, "sport": sport, "dport": dport,
        "opcode_num": bth[0], "se": bool(bth[1] & 0x80), "pad": (bth[1] >> 4) & 3,
        "dest_qp": struct.unpack(">I", b"\0" + bth[5:8])[0],
        "ack_req": bool(bth[8] & 0x80), "psn": struct.unpack(">I", b"\0" + bth[9:12])[0],
        "icrc": "ok" if icrc(l3, ipv6, ib_end) == stored else "bad",
    }


def run(*args):
    p = subprocess.run([NDPCAP, *map(str, args)], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


class Golden(unittest.TestCase):
    def test_every_golden_capture_passes_and_json_matches_an_independent_decode(self):
        pcaps = golden_pcaps()
        self.assertTrue(pcaps, "no golden pcap found (NDNIC_GOLDEN_DIRS)")
        for pcap in pcaps:
            with self.subTest(pcap=str(pcap)):
                rc, out, err = run("--json", pcap)
                self.assertEqual(rc, 0, err)
                self.assertIn("frames", err)
                lines = [json.loads(line) for line in out.splitlines()]
                _, _, records = read_pcap(pcap)
                self.assertEqual(len(lines), len(records))
                roce = 0
                for n, (obj, (_, data)) in enumerate(zip(lines, records), start=1):
                    self.assertEqual(obj["frame"], n)
                    want = independent_decode(data)
                    if want is None:
                        self.assertEqual(obj["kind"], "non-roce", obj)
                        continue
                    roce += 1
                    self.assertEqual(obj["kind"], "roce", obj)
                    got = {k: obj.get(k) for k in want}
                    self.assertEqual(got, want, f"frame {n}")
                    self.assertIn("opcode", obj)
                    self.assertIn("payload_len", obj)
                self.assertGreater(roce, 0)

                rc, text, _ = run(pcap)
                self.assertEqual(rc, 0)
                text_lines = text.splitlines()
                self.assertEqual(len(text_lines), len(records))
                for n, (line, obj) in enumerate(zip(text_lines, lines), start=1):
                    self.assertTrue(line.startswith(f"{n} {obj['kind']}"), line)
                    if obj["kind"] == "roce":
                        self.assertIn(f"opcode={obj['opcode']} ", line)
                        self.assertTrue(line.endswith(" icrc=ok"), line)


class Damaged(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name)
        pcaps = golden_pcaps()
        self.assertTrue(pcaps)
        self.source = pcaps[0]
        self.endian, self.header, self.records = read_pcap(self.source)
        self.first_roce = next(i for i, (_, d) in enumerate(self.records) if independent_decode(d))

    def tearDown(self):
        self.tmp.cleanup()

    def test_corrupted_icrc_exits_1_and_says_icrc_bad(self):
        records = list(self.records)
        hdr, data = records[self.first_roce]
        records[self.first_roce] = (hdr, data[:-1] + bytes([data[-1] ^ 0x01]))
        path = self.dir / "bad_icrc.pcap"
        write_pcap(path, self.endian, self.header, records)
        rc, out, err = run("--json", path)
        self.assertEqual(rc, 1, err)
        lines = [json.loads(line) for line in out.splitlines()]
        self.assertEqual(lines[self.first_roce]["kind"], "roce")
        self.assertEqual(lines[self.first_roce]["icrc"], "bad")
        self.assertEqual(sum(o.get("icrc") == "bad" for o in lines), 1)
        self.assertIn("1 icrc bad", err)
        rc, text, _ = run(path)
        self.assertEqual(rc, 1)
        self.assertIn("icrc=bad", text.splitlines()[self.first_roce])

    def test_cut_roce_frame_is_malformed_with_its_reason_and_exits_1(self):
        records = list(self.records)
        hdr, data = records[self.first_roce]
        records[self.first_roce] = (hdr, data[:50])  # snap length: the record keeps orig_len
        path = self.dir / "cut.pcap"
        write_pcap(path, self.endian, self.header, records)
        rc, out, err = run("--json", path)
        self.assertEqual(rc, 1, err)
        obj = json.loads(out.splitlines()[self.first_roce])
        self.assertEqual(obj["kind"], "malformed")
        self.assertEqual(obj["reason"], "bad_ip_total_length")
        self.assertEqual(obj["captured"], 50)
        self.assertIn("bad_ip_total_length=1", err)

    def test_malformed_tcp_frame_is_not_a_roce_failure(self):
        records = [r for r in self.records if not independent_decode(r[1])]
        hdr, data = next(r for r in records if r[1][12:14] == b"\x08\x00")
        broken = bytearray(data)
        broken[14 + 10] ^= 0xFF  # IPv4 header checksum
        path = self.dir / "tcp_bad_checksum.pcap"
        write_pcap(path, self.endian, self.header, [(hdr, bytes(broken))])
        rc, out, err = run("--json", path)
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)["reason"], "bad_ip_checksum")

    def check_file_error(self, path, expect):
        rc, out, err = run(path)
        self.assertEqual(rc, 2, f"{path}: {err}")
        self.assertEqual(out, "")
        self.assertIn(expect, err)
        self.assertTrue(err.startswith("ndpcap: "), err)

    def test_not_a_pcap(self):
        path = self.dir / "notes.txt"
        path.write_text("this is not a capture, just some text long enough for a header\n")
        self.check_file_error(path, "not a pcap")

    def test_pcapng_is_refused_clearly(self):
        path = self.dir / "x.pcapng"
        path.write_bytes(b"\x0a\x0d\x0d\x0a" + b"\0" * 60)
        self.check_file_error(path, "pcapng")

    def test_empty_file(self):
        path = self.dir / "empty.pcap"
        path.write_bytes(b"")
        self.check_file_error(path, "not a pcap")

    def test_truncated_inside_a_record(self):
        raw = pathlib.Path(self.source).read_bytes()
        for cut in (24 + 8, 24 + 16 + 5, len(raw) - 3):
            path = self.dir / f"truncated_{cut}.pcap"
            path.write_bytes(raw[:cut])
            self.check_file_error(path, "truncated")

    def test_missing_file(self):
        self.check_file_error(self.dir / "no_such.pcap", "cannot open")

    def test_header_only_pcap_has_no_frames_and_passes(self):
        path = self.dir / "header_only.pcap"
        path.write_bytes(self.header)
        rc, out, err = run(path)
        self.assertEqual((rc, out), (0, ""), err)
        self.assertIn("0 frames", err)


class Usage(unittest.TestCase):
    def test_help(self):
        for flag in ("-h", "--help"):
            rc, out, _ = run(flag)
            self.assertEqual(rc, 0)
            self.assertIn("usage: ndpcap", out)

    def test_bad_usage_exits_2(self):
        for args in ((), ("--bogus", "x.pcap"), ("a.pcap", "b.pcap")):
            rc, out, err = run(*args)
            self.assertEqual(rc, 2, args)
            self.assertIn("usage: ndpcap", err)


if __name__ == "__main__":
    NDPCAP = sys.argv.pop(1)
    unittest.main(verbosity=2)
