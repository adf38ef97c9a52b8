#!/usr/bin/env python3
"""Seed programs for the stateful transport fuzzer (fuzz_transport), in the format program.h
describes: each RC conversation of the golden rxe captures becomes two programs, one that
replays the peer's requests into the victim QP's responder (with the receives, regions and
windows they need), and one that posts the same work requests on the victim and replays the
peer's responses (ACKs, READ responses, atomic ACKs) into its completer; plus a few scenarios
the captures do not have (windows bound, used, invalidated; regions deregistered under
traffic).

Usage as a program: seeds.py OUTDIR PCAP...   (writes one file per seed, named by its sha1)
"""
import hashlib
import pathlib
import struct
import sys

# ---- the program encoder (mirror of program.h) -----------------------------------------------

MTUS = [256, 512, 1024, 2048, 4096]
INJECT_OPCODES = [0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B,
                  0x0C, 0x0D, 0x0E, 0x0F, 0x10, 0x11, 0x12, 0x13, 0x14, 0x16, 0x17, 0x64]
STEP = dict(inject=0, post_send=1, post_recv=2, reg_mr=3, dereg_mr=4, alloc_mw=5, dealloc_mw=6,
            bind=7, local_inv=8, poll=9, fire_timers=10, modify_qp=11, recreate_qp=12, respond=13)
WR = dict(send=0, send_imm=1, send_inv=2, write=3, write_imm=4, read=5, cmp_swap=6, fetch_add=7,
          bind_mw=8, local_inv=9)
PSN_MASK = 0xFFFFFF


def key_mr(i):        # a live region, by registration order (0: all rights, 1: local write, 2: other PD)
    return (0 << 5) | i


def key_mw(i=0):      # a window's current key
    return (2 << 5) | i


def key_dead(i=0):
    return (4 << 5) | i


ADDR_IN, ADDR_START, ADDR_END, ADDR_BEFORE, ADDR_ARENA, ADDR_RAW, ADDR_PAST = 0, 2, 3, 4, 5, 6, 7
LEN_SMALL, LEN_MTUS, LEN_ANY, LEN_ZERO, LEN_RAW, LEN_REST, LEN_EIGHT, LEN_OVER = range(8)
PLEN_MTU, PLEN_UPTO_MTU, PLEN_READ_REST, PLEN_ZERO, PLEN_ANY, PLEN_EIGHT, PLEN_WRITE_REST, PLEN_OVER = range(8)
PSN_EXPECTED, PSN_RAW = 0, 6


class Program:
    def __init__(self, mtu=1024, sq=64, rq=64, psn=0, retry=7, rnr=7, rd_atomic=16, teardown=0):
        self.b = bytearray([MTUS.index(mtu), sq - 1, rq - 1, psn, retry | rnr << 3, rd_atomic - 1,
                            teardown, 0])
        self.mtu = mtu
        # The first PSNs the fuzzer gives QP A (transport_fuzzer.cc: reconnect()).
        base = (0xFFFFF8 + psn * 0x10203) & PSN_MASK
        self.rq_psn = base
        self.sq_psn = (base + 0x800) & PSN_MASK

    def u8(self, v):
        self.b += struct.pack("<B", v & 0xFF)

    def u16(self, v):
        self.b += struct.pack("<H", v & 0xFFFF)

    def u24(self, v):
        self.b += struct.pack("<I", v & 0xFFFFFF)[:3]

    def u32(self, v):
        self.b += struct.pack("<I", v & 0xFFFFFFFF)

    def u64(self, v):
        self.b += struct.pack("<Q", v & 0xFFFFFFFFFFFFFFFF)

    def key(self, sel, raw=0):
        self.u8(sel)
        if sel >> 5 == 6:
            self.u32(raw)

    def addr(self, mode, off=0, raw=0):
        self.u8(mode)
        self.u16(off)
        if mode == ADDR_RAW:
            self.u64(raw)

    def length(self, mode, v=0, raw=0):
        self.u8(mode)
        self.u16(v)
        if mode == LEN_RAW:
            self.u32(raw)

    def sge(self, key=key_mr(1), addr=(ADDR_START, 0), length=(LEN_RAW, 0, 64)):
        self.key(key)
        self.addr(*addr)
        self.length(*length)

    def inject(self, opcode, side=0, ack_req=False, se=False, polls=1, psn=(PSN_EXPECTED, 0),
               key=key_mr(0), addr=(ADDR_START, 0), length=(LEN_ZERO, 0), swap=0, cmp_mode=1, cmp=0,
               syndrome=0x1F, msn=0, orig=0, imm=0, ieth=key_mw(0), plen=(PLEN_ZERO, 0), fill=0xA5,
               damage=0, dpos=0, dxor=1):
        self.u8(STEP["inject"])
        self.u8(6 if side else 0)
        if opcode in INJECT_OPCODES:
            self.u8(INJECT_OPCODES.index(opcode))
        else:
            self.u8(24)
            self.u8(opcode)
        polls_bits = {1: 0, 2: 1, 0: 2, 4: 3}[polls]
        self.u8(int(ack_req) | int(se) << 1 | damage << 4 | polls_bits << 6)
        self.u8(psn[0])
        self.u8(psn[1])
        if psn[0] == PSN_RAW:
            self.u24(psn[2])
        self.key(key)
        self.addr(*addr)
        self.length(*length)
        self.u16(swap)
        self.u8(cmp_mode)
        self.u16(cmp)
        self.u8(syndrome)
        self.u16(msn)
        self.u16(orig)
        self.u32(imm)
        self.key(ieth)
        self.u8(plen[0])
        self.u16(plen[1])
        self.u8(fill)
        if damage:
            self.u16(dpos)
            self.u8(dxor)

    def post_send(self, op, side=0, signaled=True, fence=False, sges=(), raddr=0, rkey=0, imm=0,
                  cmp=0, swap=0, inv=key_mw(0), bind=None):
        self.u8(STEP["post_send"])
        self.u8(3 if side else 0)
        self.u8(WR[op])
        self.u8((0 if signaled else 3) | (4 if fence else 0))
        self.u8(len(sges))
        if op not in ("bind_mw", "local_inv"):
            for s in sges:
                self.sge(*s)
        if op == "bind_mw":
            mw, mr, addr, length, access, new_key = bind
            self.key(mw)
            self.key(mr)
            self.addr(*addr)
            self.length(*length)
            self.u8(access)
            self.u8(new_key)
        elif op == "local_inv":
            self.key(inv)
        else:
            self.u16(raddr)
            self.u16(rkey)
            self.u32(imm)
            self.u16(cmp)
            self.u16(swap)
            self.key(inv)

    def post_recv(self, side=0, sges=((key_mr(1), (ADDR_START, 0), (LEN_REST, 0)),)):
        self.u8(STEP["post_recv"])
        self.u8(3 if side else 0)
        self.u8(len(sges))
        for s in sges:
            self.sge(*s)

    def reg_mr(self, off, length, access=0x1F, pd=0):
        self.u8(STEP["reg_mr"])
        self.u16(off)
        self.u16(length - 1)
        self.u8(access)
        self.u8(pd)

    def dereg_mr(self, index):
        self.u8(STEP["dereg_mr"])
        self.u8(index & 0x7F)

    def alloc_mw(self, pd=0):
        self.u8(STEP["alloc_mw"])
        self.u8(pd)

    def dealloc_mw(self, index=0, key=None):
        """By allocated window index (its current key), or by a key selector."""
        self.u8(STEP["dealloc_mw"])
        if key is None:
            self.u8(index & 0x3F)
        else:
            self.u8(0x80)
            self.key(key)

    def bind(self, side=0, mw=0, mr=0, off=0, length=4096, access=2, new_key=0):
        """access: (a % 7 + 1) << 1, so 0 = remote write, 1 = read, 2 = write+read, 3 = atomic, 6 = all."""
        self.u8(STEP["bind"])
        self.u8(3 if side else 0)
        self.u8(mw)
        self.u8(mr)
        self.u16(off)
        self.u16(length - 1)
        self.u8(access)
        self.u8(new_key)

    def local_inv(self, side=0, key=key_mw(0)):
        self.u8(STEP["local_inv"])
        self.u8(3 if side else 0)
        self.key(key)

    def poll(self, n=1):
        self.u8(STEP["poll"])
        self.u8(n - 1)

    def fire_timers(self, side=0):
        self.u8(STEP["fire_timers"])
        self.u8(3 if side else 0)

    def modify(self, side=0, to=0):
        self.u8(STEP["modify_qp"])
        self.u8(3 if side else 0)
        self.u8(to)

    def recreate(self, side=0):
        self.u8(STEP["recreate_qp"])
        self.u8(3 if side else 0)

    def respond(self, kind, side=0, fill=0x5A):
        self.u8(STEP["respond"])
        self.u8(3 if side else 0)
        self.u8(kind)
        self.u8(fill)

    def bytes(self):
        return bytes(self.b)


# ---- captures -------------------------------------------------------------------------------

RETH = {0x06, 0x0A, 0x0B, 0x0C}
ATOMIC_ETH = {0x13, 0x14}
AETH = {0x0D, 0x0F, 0x10, 0x11, 0x12}
IMM = {0x03, 0x05, 0x09, 0x0B}
IETH = {0x16, 0x17}
REQUESTS = set(range(0x00, 0x0D)) | ATOMIC_ETH | IETH
RESPONSES = {0x0D, 0x0E, 0x0F, 0x10, 0x11, 0x12}


def read_pcap(path):
    raw = pathlib.Path(path).read_bytes()
    if len(raw) < 24:
        return []
    endian = "<" if raw[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    off, frames = 24, []
    while off + 16 <= len(raw):
        incl = struct.unpack(endian + "I", raw[off + 8:off + 12])[0]
        frames.append(raw[off + 16:off + 16 + incl])
        off += 16 + incl
    return frames


def decode(f):
    """The RC fields of a RoCEv2 frame (untagged IPv4), or None."""
    if len(f) < 14 + 20 + 8 + 12 + 4 or f[12:14] != b"\x08\x00":
        return None
    ihl = (f[14] & 0x0F) * 4
    l4 = 14 + ihl
    if f[23] != 17 or struct.unpack(">H", f[l4 + 2:l4 + 4])[0] != 4791:
        return None
    udp_len = struct.unpack(">H", f[l4 + 4:l4 + 6])[0]
    ib = l4 + 8
    end = l4 + udp_len - 4
    op = f[ib]
    if op > 0x17:
        return None  # UD (the CM's MADs): not RC traffic
    p = dict(op=op, se=bool(f[ib + 1] & 0x80), pad=(f[ib + 1] >> 4) & 3,
             qp=int.from_bytes(f[ib + 5:ib + 8], "big"), ack_req=bool(f[ib + 8] & 0x80),
             psn=int.from_bytes(f[ib + 9:ib + 12], "big"), src=f[26:30])
    o = ib + 12
    if op in RETH:
        p["va"], p["rkey"], p["dma_len"] = struct.unpack(">QII", f[o:o + 16])
        o += 16
    if op in ATOMIC_ETH:
        p["va"], p["rkey"], p["swap"], p["cmp"] = struct.unpack(">QIQQ", f[o:o + 28])
        o += 28
    if op in AETH:
        p["syndrome"] = f[o]
        p["msn"] = int.from_bytes(f[o + 1:o + 4], "big")
        o += 4
    if op == 0x12:
        p["orig"] = struct.unpack(">Q", f[o:o + 8])[0]
        o += 8
    if op in IMM:
        p["imm"] = struct.unpack(">I", f[o:o + 4])[0]
        o += 4
    if op in IETH:
        p["ieth"] = struct.unpack(">I", f[o:o + 4])[0]
        o += 4
    p["payload"] = f[o:end - p["pad"]] if end - p["pad"] >= o else b""
    return p


def conversations(frames):
    """RC packets grouped by (source address, destination QP): one direction of one QP pair."""
    flows = {}
    for f in frames:
        p = decode(f)
        if p:
            flows.setdefault((p["src"], p["qp"]), []).append(p)
    return flows


def responder_seed(pkts, has_windows, limit=48):
    """The peer's requests, in order, into QP A's responder."""
    reqs = [p for p in pkts if p["op"] in REQUESTS][:limit]
    if not reqs:
        return None
    prog = Program(mtu=1024, sq=64, rq=64)
    rkeys = [p["rkey"] for p in reqs if "rkey" in p]
    mr_rkey = max(set(rkeys), key=rkeys.count) if rkeys else None
    if has_windows:
        prog.alloc_mw()
        prog.bind(mw=0, mr=0, off=0, length=0x4000, access=6)
        prog.poll(2)
    for _ in range(sum(p["op"] in (0x00, 0x04, 0x05, 0x17, 0x0B) for p in reqs)):
        prog.post_recv()
    base_va = {}
    for p in reqs:
        key = key_mr(0)
        addr = (ADDR_START, 0)
        length = (LEN_ZERO, 0)
        if "rkey" in p:
            if has_windows and p["rkey"] != mr_rkey:
                key = key_mw(0)
            first = base_va.setdefault(p["rkey"], p["va"])
            addr = (ADDR_IN, (p["va"] - first) % 0x4000)
            if "dma_len" in p:
                length = (LEN_RAW, 0, p["dma_len"])
        n = len(p["payload"])
        prog.inject(p["op"], ack_req=p["ack_req"], se=p["se"], key=key, addr=addr, length=length,
                    swap=p.get("swap", 1), cmp_mode=1, imm=p.get("imm", 0),
                    ieth=key_mw(0), plen=(PLEN_ANY, n), fill=p["payload"][0] if n else 0)
    prog.poll(4)
    return prog.bytes()


def completer_seed(reqs, resps, limit=48):
    """QP A posts the work requests the capture's requester made; the responses come back."""
    reqs, msgs = reqs[:limit], []
    # Messages: PSN range and kind, as the capture's requester laid them out (MTU 1024).
    first_psn = reqs[0]["psn"] if reqs else 0
    for p in reqs:
        op = p["op"]
        if op in (0x00, 0x04, 0x05, 0x06, 0x0A, 0x0B, 0x0C, 0x13, 0x14, 0x17):  # FIRST / ONLY
            msgs.append(dict(op=op, psn=p["psn"], len=p.get("dma_len", len(p["payload"])), p=p))
        elif op in (0x01, 0x02, 0x03, 0x16) and msgs and msgs[-1]["op"] == 0x00:  # SEND MIDDLE / LAST
            msgs[-1]["len"] += len(p["payload"])
    if not msgs:
        return None
    prog = Program(mtu=1024, sq=64, rq=64)
    for m in msgs:
        op = m["op"]
        length = m["len"] if op not in (0x13, 0x14) else 8
        sge = (key_mr(1), (ADDR_START, 0), (LEN_RAW, 0, min(length, 0x2000)))
        kind = {0x00: "send", 0x04: "send", 0x05: "send_imm", 0x17: "send_inv", 0x06: "write",
                0x0A: "write", 0x0B: "write_imm", 0x0C: "read", 0x13: "cmp_swap", 0x14: "fetch_add"}[op]
        prog.post_send(kind, sges=[sge], imm=m["p"].get("imm", 0), cmp=m["p"].get("cmp", 0),
                       swap=m["p"].get("swap", 0))
    prog.poll(4)
    for p in resps[:limit * 4]:
        psn = (prog.sq_psn + ((p["psn"] - first_psn) & PSN_MASK)) & PSN_MASK
        n = len(p["payload"])
        prog.inject(p["op"], psn=(PSN_RAW, 0, psn), syndrome=p.get("syndrome", 0x1F),
                    msn=p.get("msn", 0), orig=p.get("orig", 0), plen=(PLEN_ANY, n),
                    fill=p["payload"][0] if n else 0)
    prog.poll(4)
    return prog.bytes()


def capture_seeds(path):
    flows = conversations(read_pcap(path))
    windows = "mw" in pathlib.Path(path).name
    out = []
    for (src, qp), pkts in flows.items():
        reqs = [p for p in pkts if p["op"] in REQUESTS]
        if not reqs:
            continue
        s = responder_seed(pkts, windows)
        if s:
            out.append(s)
        # The responses to these requests travel the other way, to the requester's QP.
        resps = [p for (s2, q2), ps in flows.items() if s2 != src for p in ps
                 if p["op"] in RESPONSES and reqs and abs(((p["psn"] - reqs[0]["psn"] + 0x800000) & PSN_MASK) - 0x800000) < 4096]
        s = completer_seed(reqs, resps)
        if s:
            out.append(s)
    return out


# ---- scenarios --------------------------------------------------------------------------------

def scenario_seeds():
    out = []
    # A window bound for remote write, written through, then invalidated by a local invalidate
    # in the middle of a multi-packet WRITE through it.
    p = Program(mtu=256)
    p.alloc_mw()
    p.bind(mw=0, mr=0, off=0x100, length=0x800, access=0)
    p.poll(2)
    p.inject(0x0A, ack_req=True, key=key_mw(0), addr=(ADDR_IN, 0x10), length=(LEN_SMALL, 31), plen=(PLEN_ANY, 32))
    p.inject(0x06, key=key_mw(0), addr=(ADDR_START, 0), length=(LEN_MTUS, 2), plen=(PLEN_MTU, 0))
    p.inject(0x07, plen=(PLEN_MTU, 0), polls=1)
    p.local_inv(key=key_mw(0))
    p.poll(2)
    p.inject(0x08, plen=(PLEN_WRITE_REST, 0), ack_req=True)
    out.append(p.bytes())
    # The same window invalidated by the peer's SEND WITH INVALIDATE, then used again; a region
    # deregistered between the packets of a WRITE.
    p = Program(mtu=256)
    p.alloc_mw()
    p.bind(mw=0, mr=0, off=0x100, length=0x800, access=6)
    p.poll(2)
    p.post_recv()
    p.inject(0x17, ieth=key_mw(0), plen=(PLEN_ANY, 16), polls=2)
    p.inject(0x0A, ack_req=True, key=key_mw(0), addr=(ADDR_IN, 0x10), length=(LEN_SMALL, 31), plen=(PLEN_ANY, 32))
    out.append(p.bytes())
    p = Program(mtu=256)
    p.reg_mr(0xA000, 0x1000, access=0x03)
    p.inject(0x06, key=key_mr(3), addr=(ADDR_START, 0), length=(LEN_MTUS, 2), plen=(PLEN_MTU, 0))
    p.inject(0x07, plen=(PLEN_MTU, 0), polls=1)
    p.dereg_mr(3)
    p.inject(0x08, plen=(PLEN_WRITE_REST, 0), ack_req=True)
    out.append(p.bytes())
    # READ and atomics from QP A answered by the peer; a region deregistered under a READ.
    p = Program(mtu=512, teardown=0)
    p.post_send("read", sges=[(key_mr(1), (ADDR_START, 0), (LEN_RAW, 0, 1500))], raddr=1, rkey=0x1234)
    p.post_send("fetch_add", sges=[(key_mr(1), (ADDR_IN, 0x1000), (LEN_EIGHT, 0))], raddr=2, rkey=0x99, cmp=5)
    p.poll(2)
    p.respond(1)
    p.respond(2)
    p.reg_mr(0xA000, 0x800, access=0x01)
    p.post_send("read", sges=[(key_mr(3), (ADDR_START, 0), (LEN_RAW, 0, 600))], raddr=1, rkey=0x1234)
    p.poll(2)
    p.dereg_mr(3)
    p.respond(1)
    out.append(p.bytes())
    # SEND and WRITE from QP A, acknowledged, NAKed, RNR-NAKed and retried on a timeout.
    p = Program(mtu=256, retry=2, rnr=1, teardown=1)
    p.post_send("send", sges=[(key_mr(0), (ADDR_START, 0), (LEN_RAW, 0, 700))])
    p.post_send("write", sges=[(key_mr(0), (ADDR_IN, 0x400), (LEN_RAW, 0, 300))], raddr=3, rkey=0x42)
    p.poll(2)
    p.respond(5)
    p.fire_timers()
    p.poll(2)
    p.respond(4, fill=0)
    p.poll(2)
    p.respond(0)
    p.respond(3)
    p.modify(to=2)
    out.append(p.bytes())
    # Long messages from QP A (more packets than one poll sends), acknowledged piecewise, NAKed,
    # retried; a long READ answered in pieces, out of order and twice.
    p = Program(mtu=256, sq=8, retry=3, rnr=2)
    p.post_send("send", sges=[(key_mr(0), (ADDR_START, 0), (LEN_RAW, 0, 0x4000))])
    p.post_send("write", sges=[(key_mr(0), (ADDR_START, 0), (LEN_RAW, 0, 0x3000))], raddr=5, rkey=0x77)
    p.post_send("read", sges=[(key_mr(1), (ADDR_START, 0), (LEN_REST, 0))], raddr=6, rkey=0x78)
    p.poll(2)
    p.inject(0x11, psn=(2, 0x20), syndrome=0x1F)
    p.inject(0x11, psn=(0, 0), syndrome=0x60)
    p.poll(2)
    p.respond(0)
    p.poll(2)
    p.respond(0)
    p.inject(0x0D, psn=(2, 0), syndrome=0x1F, plen=(PLEN_MTU, 0))
    p.inject(0x0F, psn=(2, 5), syndrome=0x1F, plen=(PLEN_READ_REST, 0))
    p.fire_timers()
    p.respond(1)
    p.respond(1)
    out.append(p.bytes())
    # The peer's READ with requests held behind it, then the QP destroyed and made again.
    p = Program(mtu=256, teardown=3)
    p.inject(0x0C, ack_req=True, key=key_mr(0), addr=(ADDR_START, 0), length=(LEN_RAW, 0, 0x3000), polls=0)
    p.inject(0x0A, psn=(5, 48), key=key_mr(0), length=(LEN_SMALL, 3), plen=(PLEN_ANY, 4), polls=0)
    p.inject(0x0C, psn=(5, 48), key=key_mr(0), length=(LEN_SMALL, 3), polls=1)
    p.recreate()
    p.poll(2)
    out.append(p.bytes())
    return out


def reproducers():
    """Programs that broke an invariant (found by the fuzzer, then reduced by hand); each is a
    regression test run first in every fuzzing run. name -> (bytes, what it shows)."""
    r = {}
    # A responder holds a request behind a READ reply (its mbuf with it); the device is closed
    # with the QP alive: Device::close() frees the QP's rings but not the held mbufs.
    p = Program(mtu=256, teardown=3)
    p.inject(0x0C, ack_req=True, key=key_mr(0), addr=(ADDR_START, 0), length=(LEN_RAW, 0, 0x4000), polls=0)
    p.inject(0x0A, psn=(5, 64), key=key_mr(0), addr=(ADDR_START, 0), length=(LEN_SMALL, 3), plen=(PLEN_ANY, 4), polls=1)
    r["mbuf-leak-close-held-request"] = (p.bytes(), "Device::close() with a QP holding a request behind a READ reply leaks its mbuf")
    # The same, with the QP destroyed (not closed): its held mbufs went with the QP object.
    p = Program(mtu=256, teardown=1)
    p.inject(0x0C, ack_req=True, key=key_mr(0), addr=(ADDR_START, 0), length=(LEN_RAW, 0, 0x4000), polls=0)
    p.inject(0x0A, psn=(5, 64), key=key_mr(0), addr=(ADDR_START, 0), length=(LEN_SMALL, 3), plen=(PLEN_ANY, 4), polls=1)
    r["mbuf-leak-destroy-held-request"] = (p.bytes(), "destroy_qp() with a request held behind a READ reply leaks its mbuf")
    # A multi-packet WRITE: FIRST checked, region deregistered, MIDDLE written anyway.
    p = Program(mtu=256)
    p.reg_mr(0xA000, 0x1000, access=0x03)
    p.inject(0x06, key=key_mr(3), addr=(ADDR_START, 0), length=(LEN_MTUS, 2), plen=(PLEN_MTU, 0))
    p.dereg_mr(3)
    p.inject(0x07, plen=(PLEN_MTU, 0), polls=1)
    r["memory-revoked-write-after-dereg"] = (p.bytes(), "WRITE MIDDLE placed into a region deregistered after the FIRST")
    # The same through a window invalidated by a LOCAL_INV between the packets.
    p = Program(mtu=256)
    p.alloc_mw()
    p.bind(mw=0, mr=0, off=0x100, length=0x800, access=0)
    p.poll(2)
    p.inject(0x06, key=key_mw(0), addr=(ADDR_START, 0), length=(LEN_MTUS, 2), plen=(PLEN_MTU, 0))
    p.local_inv(key=key_mw(0))
    p.poll(2)
    p.inject(0x07, plen=(PLEN_MTU, 0), polls=1)
    r["memory-revoked-write-after-invalidate"] = (p.bytes(), "WRITE MIDDLE placed through a window invalidated after the FIRST")
    # A READ's sink region deregistered before its response comes back.
    p = Program(mtu=512)
    p.reg_mr(0xA000, 0x800, access=0x01)
    p.post_send("read", sges=[(key_mr(3), (ADDR_START, 0), (LEN_RAW, 0, 600))], raddr=1, rkey=0x1234)
    p.poll(2)
    p.dereg_mr(3)
    p.respond(1)
    r["memory-sink-stale-read-after-dereg"] = (p.bytes(), "READ response placed into a sink region deregistered since the post")
    # An ACK for the last PSN of a message only partly sent (the send budget stops a poll).
    p = Program(mtu=256)
    p.post_send("send", sges=[(key_mr(0), (ADDR_START, 0), (LEN_RAW, 0, 0x4000))])
    p.poll(2)
    p.inject(0x11, psn=(3, 0), syndrome=0x1F)
    r["completion-unsent-ghost-ack"] = (p.bytes(), "a SEND completes successfully though some of its packets never left")
    # A failed bind takes the QP to ERROR; a later bind had already run and is reported as
    # flushed, yet the window is bound under its key (dealloc by that key succeeds).
    p = Program(mtu=256)
    p.alloc_mw()
    p.post_send("bind_mw", bind=(key_mw(0), (6 << 5), (ADDR_START, 0), (LEN_SMALL, 15), 0, 0))  # raw region key 0: fails
    p.post_send("bind_mw", bind=(key_mw(0), key_mr(0), (ADDR_START, 0), (LEN_SMALL, 15), 0, 0))
    p.poll(2)
    p.dealloc_mw(key=key_dead(0))
    r["bind-flushed-but-bound"] = (p.bytes(), "a bind that ran reported as flushed: the window is bound under a key the application never learnt")
    # A bind that fails (region key 0) takes the QP to ERROR, but the requester goes on past it
    # in the same pass: the WRITE posted after it goes out (the peer executes it) and is then
    # completed as flushed.
    p = Program(mtu=256)
    p.alloc_mw()
    p.post_send("bind_mw", bind=(key_mw(0), (6 << 5), (ADDR_START, 0), (LEN_SMALL, 15), 0, 0))
    p.post_send("write", sges=[(key_mr(0), (ADDR_START, 0), (LEN_SMALL, 63))], raddr=1, rkey=0x42)
    p.poll(2)
    r["sent-after-error-bind"] = (p.bytes(), "a WRITE posted after a failed bind is transmitted, then reported flushed")
    # A window bound through QP A, invalidated by a LOCAL_INV posted on QP B.
    p = Program(mtu=256)
    p.alloc_mw()
    p.bind(side=0, mw=0, mr=0, off=0, length=0x100, access=0)
    p.poll(2)
    p.local_inv(side=1, key=key_mw(0))
    p.poll(2)
    r["mw-invalidate-foreign-qp"] = (p.bytes(), "LOCAL_INV through another QP invalidates a window bound to QP A")
    return r


def all_seeds(pcaps):
    seeds = []
    for pcap in pcaps:
        seeds += capture_seeds(pcap)
    return seeds + scenario_seeds()


def main():
    if sys.argv[1] == "--reproducers":
        outdir = pathlib.Path(sys.argv[2])
        outdir.mkdir(parents=True, exist_ok=True)
        for name, (prog, _) in reproducers().items():
            (outdir / name).write_bytes(prog)
        print(f"{len(reproducers())} reproducers in {outdir}")
        return
    outdir = pathlib.Path(sys.argv[1])
    outdir.mkdir(parents=True, exist_ok=True)
    n = 0
    for s in all_seeds(sys.argv[2:]):
        (outdir / hashlib.sha1(s).hexdigest()).write_bytes(s)
        n += 1
    print(f"{n} seeds in {outdir}")


if __name__ == "__main__":
    main()
