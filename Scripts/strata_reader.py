#!/usr/bin/env python3
"""An independent reader of Strata stores, written from Docs/FileFormat.md alone.

Usage:
    strata_reader.py export STORE_FOLDER   # the export format of Docs/Tools.md, version 1
    strata_reader.py pages STORE_FOLDER    # "page-id length crc32c" of every page (page log only)

It opens the store read-only and never writes to it. Every checksum the specification
defines is verified on the bytes used; invalid bytes stop the reader with an error naming
the file and the absolute offset (FileFormat.md, "How a reader reports invalid bytes").

Section references ("§Superblock") are to Docs/FileFormat.md unless said otherwise.
Standard library only.
"""

import base64
import hashlib
import json
import math
import os
import re
import struct
import sys

# ---------------------------------------------------------------------------------------
# Errors (§How a reader reports invalid bytes)
# ---------------------------------------------------------------------------------------


class Corruption(Exception):
    """PageLogError.corruption(file:offset:reason:)"""

    def __init__(self, file, offset, reason):
        super().__init__(f"corruption in {file} at offset {offset}: {reason}")
        self.file, self.offset, self.reason = file, offset, reason


class Unsupported(Exception):
    """unsupportedFormatVersion, an unknown record-layer version, or a refused store."""


class RecordError(Exception):
    """Invalid record-layer bytes (RecordTreeError.corruptNode / FormatError)."""


# ---------------------------------------------------------------------------------------
# CRC32C, table driven (§Checksums)
# ---------------------------------------------------------------------------------------


def _crc_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        table.append(c)
    return table


_CRC_TABLE = _crc_table()


def crc32c(data, crc=0):
    """CRC-32C with pre/post inversion inside, so crc32c(b, crc32c(a)) == crc32c(a + b)."""
    crc ^= 0xFFFFFFFF
    table = _CRC_TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283
assert crc32c(b"56789", crc32c(b"1234")) == 0xE3069283

# ---------------------------------------------------------------------------------------
# LZ4 block format decompression (§Codecs: "LZ4 block format", no frame, no size prefix)
# ---------------------------------------------------------------------------------------


class LZ4Error(Exception):
    pass


def lz4_decompress(src, raw_length):
    """Decompress one LZ4 block that must expand to exactly raw_length bytes."""
    out = bytearray()
    i, n = 0, len(src)
    if n == 0:
        raise LZ4Error("empty LZ4 block")
    while True:
        if i >= n:
            raise LZ4Error("LZ4 block ends without its last literals")
        token = src[i]
        i += 1
        lit = token >> 4
        if lit == 15:
            while True:
                if i >= n:
                    raise LZ4Error("LZ4 literal length runs past the block")
                b = src[i]
                i += 1
                lit += b
                if b != 255:
                    break
        if i + lit > n:
            raise LZ4Error("LZ4 literals run past the block")
        out += src[i:i + lit]
        i += lit
        if len(out) > raw_length:
            raise LZ4Error("LZ4 block expands past its raw length")
        if i == n:  # the last sequence holds literals only
            break
        if i + 2 > n:
            raise LZ4Error("LZ4 match offset runs past the block")
        offset = src[i] | (src[i + 1] << 8)
        i += 2
        if offset == 0 or offset > len(out):
            raise LZ4Error(f"LZ4 match offset {offset} out of range")
        mlen = token & 15
        if mlen == 15:
            while True:
                if i >= n:
                    raise LZ4Error("LZ4 match length runs past the block")
                b = src[i]
                i += 1
                mlen += b
                if b != 255:
                    break
        mlen += 4
        if len(out) + mlen > raw_length:
            raise LZ4Error("LZ4 block expands past its raw length")
        start = len(out) - offset
        if mlen <= offset:
            out += out[start:start + mlen]
        else:  # overlapping copy: the pattern repeats
            pattern = bytes(out[start:])
            reps = mlen // offset + 1
            out += (pattern * reps)[:mlen]
    if len(out) != raw_length:
        raise LZ4Error(f"LZ4 block expands to {len(out)} bytes, not {raw_length}")
    return bytes(out)


def lz4_bound(n):
    return n + n // 255 + 16  # LZ4_compressBound


# ---------------------------------------------------------------------------------------
# Page log: constants and small helpers
# ---------------------------------------------------------------------------------------

NEWEST_FORMAT = 3
MAX_RAW = 64 * 1024 * 1024          # frame raw payload limit (§Limits)
MAX_ADDRESSED = 68_157_536          # addressed frame length limit (§Frame header)
MAX_PAGE_ID = 1 << 31               # PageLog.maximumPageID
U32MAX = 0xFFFFFFFF
KIND_PAGE, KIND_FREE, KIND_COMMIT, KIND_CHUNK, KIND_CHECKPOINT = 1, 2, 3, 4, 5
SEGMENT_NAME = re.compile(r"^[0-9a-f]{16}\.seg$")


def align8(n):
    return (n + 7) & ~7


def u16(b, o):
    return struct.unpack_from("<H", b, o)[0]


def u32(b, o):
    return struct.unpack_from("<I", b, o)[0]


def u64(b, o):
    return struct.unpack_from("<Q", b, o)[0]


def seg_name(seg_id):
    return f"{seg_id:016x}.seg"


class FrameHeader:
    """The 48-byte frame header (§Frame header)."""
    __slots__ = ("version", "kind", "codec", "page_id", "lsn", "entity_id", "schema_version",
                 "raw_length", "stored_length", "checksum", "length")

    def __init__(self, b, o):
        (_magic, self.version, self.kind, self.codec, _flags, self.page_id, self.lsn,
         self.entity_id, self.schema_version, self.raw_length, self.stored_length, _res,
         self.checksum) = struct.unpack_from("<IBBBBQQIIIIII", b, o)
        self.length = align8(48 + self.stored_length)


def check_header(b, o):
    """Header checks of §Frame header, in the order the spec gives (magic, version, kind,
    codec, flags, reserved, raw length, stored length, LSN).
    Returns None when valid, 'newer' for a newer version, or (field offset, reason)."""
    if b[o:o + 4] != b"SFRM":
        return (0, "bad frame magic")
    version, kind, codec, flags = b[o + 4], b[o + 5], b[o + 6], b[o + 7]
    if version > NEWEST_FORMAT:
        return "newer"
    if version == 0:
        return (4, "frame format version 0")
    if not 1 <= kind <= 5:
        return (5, f"unknown frame kind {kind}")
    if codec > 3 or (codec == 2 and version < 2) or (codec == 3 and version < 3):
        return (6, f"codec {codec} not allowed in a version {version} frame")
    if flags != 0:
        return (7, "non-zero frame flags")
    if u32(b, o + 40) != 0:
        return (40, "non-zero reserved field")
    raw, stored = u32(b, o + 32), u32(b, o + 36)
    if raw > MAX_RAW:
        return (32, f"raw length {raw} above 64 MiB")
    if codec == 0:
        ok = stored == raw
    elif codec == 1:
        ok = 1 <= stored <= lz4_bound(raw) and raw <= 255 * stored + 255
    elif codec == 2:
        ok = (raw >= 2 and 6 <= stored <= 4 + lz4_bound(raw // 2) + lz4_bound(raw - raw // 2)
              and raw <= 255 * stored + 510)
    else:
        ok = 8 <= stored < raw
    if not ok:
        return (36, f"stored length {stored} invalid for codec {codec} and raw length {raw}")
    if u64(b, o + 16) == 0:
        return (16, "LSN 0")
    return None


def codec3_layout(payload, raw):
    """Parse the head of a codec 3 payload (§Codecs). Returns (prefix, block_size, entries,
    head_length) or raises ValueError when the table does not fit the payload."""
    stored = len(payload)
    prefix, block_size = u32(payload, 0), u32(payload, 4)
    if prefix > raw or not 64 <= block_size <= 64 * 1024 * 1024:
        raise ValueError("codec 3 prefix length or block size out of range")
    n = -(-(raw - prefix) // block_size)
    head = 8 + 8 * n + prefix
    if head > stored:
        raise ValueError("codec 3 table and prefix do not fit the payload")
    entries, total, pos = [], 0, head
    for i in range(n):
        sl, ck = u32(payload, 8 + 8 * i), u32(payload, 12 + 8 * i)
        is_raw, length = bool(sl & 0x80000000), sl & 0x7FFFFFFF
        lo = prefix + i * block_size
        bsize = min(raw, lo + block_size) - lo
        if is_raw and length != bsize:
            raise ValueError(f"codec 3 raw block {i} has stored length {length}, not {bsize}")
        if not is_raw and not 1 <= length <= lz4_bound(bsize):
            raise ValueError(f"codec 3 block {i} stored length {length} out of range")
        entries.append((pos, length, ck, is_raw, bsize))
        pos += length
        total += length
    if head + total != stored:
        raise ValueError("codec 3 blocks do not add up to the payload")
    return prefix, block_size, entries, head


def frame_checksum_ok(b, o, h):
    """§Checksums: header 0..<44 ‖ stored payload (codec 3: ‖ head, and every block's CRC)."""
    payload = b[o + 48:o + 48 + h.stored_length]
    if h.codec != 3:
        return crc32c(payload, crc32c(b[o:o + 44])) == h.checksum
    try:
        _prefix, _bs, entries, head = codec3_layout(payload, h.raw_length)
    except ValueError:
        return False
    if crc32c(payload[:head], crc32c(b[o:o + 44])) != h.checksum:
        return False
    return all(crc32c(payload[p:p + l]) == ck for p, l, ck, _r, _s in entries)


def decode_payload(h, payload):
    """Turn a (verified) stored payload into the raw payload. Raises LZ4Error/ValueError."""
    raw = h.raw_length
    if h.codec == 0:
        return bytes(payload)
    if h.codec == 1:
        return lz4_decompress(payload, raw)
    if h.codec == 2:  # LZ4 halves: firstLength ‖ block A ‖ block B
        first = u32(payload, 0)
        if not 1 <= first < len(payload) - 4:
            raise LZ4Error(f"codec 2 first length {first} out of range")
        half = raw // 2
        return (lz4_decompress(payload[4:4 + first], half)
                + lz4_decompress(payload[4 + first:], raw - half))
    prefix, _bs, entries, head = codec3_layout(payload, raw)
    parts = [bytes(payload[head - prefix:head])]
    for pos, length, _ck, is_raw, bsize in entries:
        block = payload[pos:pos + length]
        parts.append(bytes(block) if is_raw else lz4_decompress(block, bsize))
    return b"".join(parts)


# ---------------------------------------------------------------------------------------
# Page log reader (§Reading a store)
# ---------------------------------------------------------------------------------------


class Segment:
    def __init__(self, seg_id, path, data):
        self.id, self.path, self.data = seg_id, path, data
        self.name = os.path.basename(path)


class PageLog:
    def __init__(self, folder):
        self.folder = folder
        self.segments = {}
        self.page_table = {}    # page id -> (segment, offset, length, lsn)
        self.next_page_id = 16
        self.format = None
        self._open()

    # -- §Opening the folder (read-only: no lock, no deletion of *.tmp) ------------------
    def _open(self):
        if not os.path.isdir(self.folder):
            raise Unsupported(f"{self.folder}: no store at this path")
        names = sorted(os.listdir(self.folder))
        self.segment_names = {int(n[:16], 16): n for n in names if SEGMENT_NAME.match(n)}
        sb_path = os.path.join(self.folder, "superblock")
        if not os.path.exists(sb_path):
            raise Corruption("superblock", 0, "the superblock file is missing")
        with open(sb_path, "rb") as f:
            sb = f.read(8192)
        slots = self._choose_slots(sb)
        must_reach = max((s["root_segment"], s["root_offset"] + s["root_length"]) for s in slots)
        first_error = None
        for slot in slots:  # §Choosing the superblock slot, 4-5
            try:
                self._recover(slot, must_reach)
                return
            except Corruption as e:
                if first_error is None:
                    first_error = e
        raise first_error

    # -- §Superblock ---------------------------------------------------------------------
    def _choose_slots(self, sb):
        valid, problems = [], []
        for index in (0, 1):
            b = sb[4096 * index:4096 * index + 128]
            problem = None
            if len(b) < 128:
                problem = "short slot"
            elif b[:8] != b"STRATASB":
                problem = "bad magic"
            elif crc32c(b[:124]) != u32(b, 124):
                problem = "checksum mismatch"
            else:
                version = u16(b, 8)
                (slot_size, flags, id_hi, id_lo, epoch, ck_lsn, root_seg, root_off,
                 root_len) = struct.unpack_from("<HIQQQQQQI", b, 10)
                if version > NEWEST_FORMAT:
                    raise Unsupported(f"superblock: unsupported format version {version} "
                                      f"(supported: 1...{NEWEST_FORMAT})")
                if version == 0:
                    problem = "format version 0"
                elif slot_size != 128:
                    problem = f"slot size {slot_size}"
                elif flags != 0:
                    problem = "non-zero flags"
                elif epoch == 0:
                    problem = "epoch 0"
                elif not 1 <= root_seg <= U32MAX:
                    problem = f"root segment {root_seg} out of range"
                elif not (64 <= root_off <= U32MAX and root_off % 8 == 0):
                    problem = f"root offset {root_off} invalid"
                elif root_len < 48:
                    problem = f"root length {root_len} < 48"
                elif any(b[68:124]):
                    problem = "non-zero bytes in 68..<124"
                elif epoch % 2 != index:
                    problem = f"epoch {epoch} in slot {index}"
                else:
                    valid.append(dict(index=index, version=version, store_id=(id_hi, id_lo),
                                      epoch=epoch, checkpoint_lsn=ck_lsn, root_segment=root_seg,
                                      root_offset=root_off, root_length=root_len))
            if problem:
                problems.append(f"slot {index}: {problem}")
        if not valid:
            raise Corruption("superblock", 0, "no valid superblock slot: " + "; ".join(problems))
        valid.sort(key=lambda s: -s["epoch"])
        return valid

    # -- §Segment files, §Opening segments and checking the chain -----------------------
    def _open_segments(self, slot):
        self.segments = {}
        for seg_id, name in sorted(self.segment_names.items()):
            path = os.path.join(self.folder, name)
            if not 1 <= seg_id <= U32MAX:
                raise Corruption(name, 0, f"segment id {seg_id} out of range")
            with open(path, "rb") as f:
                data = f.read()
            if len(data) > U32MAX:
                raise Corruption(name, U32MAX, "segment file larger than 2^32 - 1 bytes")
            if len(data) < 64:
                raise Corruption(name, 0, "segment file shorter than its 64-byte header")
            if data[:8] != b"STRATSEG":
                raise Corruption(name, 0, "bad segment magic")
            if crc32c(data[:60]) != u32(data, 60):
                raise Corruption(name, 60, "segment header checksum mismatch")
            (version, header_len, flags, id_hi, id_lo, sid, prev_id, prev_end, reserved) = \
                struct.unpack_from("<HHIQQQQQI", data, 8)
            if version == 0:
                raise Corruption(name, 8, "segment format version 0")
            if version > NEWEST_FORMAT:
                raise Unsupported(f"{name}: unsupported format version {version}")
            if header_len != 64:
                raise Corruption(name, 10, f"header length {header_len}")
            if flags != 0:
                raise Corruption(name, 12, "non-zero segment flags")
            if reserved != 0:
                raise Corruption(name, 56, "non-zero reserved field")
            if sid == 0 or sid != seg_id:
                raise Corruption(name, 32, f"segment id {sid} does not match the file name")
            if prev_end > U32MAX or (prev_id != 0 and prev_end < 64):
                raise Corruption(name, 48, f"previous segment end {prev_end} out of range")
            if prev_id >= sid:
                raise Corruption(name, 40, f"previous segment id {prev_id} >= segment id")
            if (id_hi, id_lo) != slot["store_id"]:
                raise Corruption(name, 16, "segment of another store")
            seg = Segment(seg_id, path, data)
            seg.version, seg.prev_id, seg.prev_end = version, prev_id, prev_end
            self.segments[seg_id] = seg
        root_seg = slot["root_segment"]
        if root_seg not in self.segments:
            raise Corruption("superblock", 4096 * slot["index"] + 48,
                             f"root segment {seg_name(root_seg)} is missing")
        highest = max(self.segments)
        for sid in range(root_seg + 1, highest + 1):
            if sid not in self.segments:
                raise Corruption(seg_name(sid), 0, "segment missing from the chain")
            if self.segments[sid].prev_id != sid - 1:
                raise Corruption(seg_name(sid), 40, "previous segment id is not id - 1")

    # -- Addressed frames (§Frame header, last paragraphs; §Reading a page) -------------
    def read_addressed(self, seg_id, offset, length, what, referrer=None):
        """Read and verify the frame at an address. Returns (header, raw payload)."""
        seg = self.segments.get(seg_id)
        if seg is None:
            file, off = referrer if referrer else ("superblock", 0)
            raise Corruption(file, off, f"{what}: segment {seg_name(seg_id)} is missing")
        b, name = seg.data, seg.name
        if not 48 <= length <= MAX_ADDRESSED or offset + length > len(b):
            raise Corruption(name, offset, f"{what}: frame of length {length} does not fit")
        problem = check_header(b, offset)
        if problem == "newer":
            raise Corruption(name, offset + 4, f"{what}: frame of an unknown newer version")
        if problem:
            raise Corruption(name, offset + problem[0], f"{what}: {problem[1]}")
        h = FrameHeader(b, offset)
        if h.length != length:
            raise Corruption(name, offset + 36,
                             f"{what}: frame length {h.length} differs from the address' {length}")
        if not frame_checksum_ok(b, offset, h):
            raise Corruption(name, offset + 44, f"{what}: frame checksum mismatch")
        try:
            raw = decode_payload(h, b[offset + 48:offset + 48 + h.stored_length])
        except (LZ4Error, ValueError) as e:
            raise Corruption(name, offset, f"{what}: {e}")
        return h, raw

    def read_page(self, page_id):
        """§Reading a page: whole-page read of the current image, or None if absent."""
        loc = self.page_table.get(page_id)
        if loc is None:
            return None
        seg_id, offset, length, lsn = loc
        h, raw = self.read_addressed(seg_id, offset, length, f"page {page_id}")
        name = self.segments[seg_id].name
        if h.kind != KIND_PAGE or h.page_id != page_id or h.lsn != lsn:
            raise Corruption(name, offset, f"frame is not page {page_id} with LSN {lsn} "
                             f"(kind {h.kind}, page {h.page_id}, LSN {h.lsn})")
        return h, raw

    # -- §Page table chunks: page location --------------------------------------------
    @staticmethod
    def _location(b, o, file, file_off):
        seg, off, length, res, lsn = struct.unpack_from("<IIIIQ", b, o)
        if seg == 0:
            if off or length or lsn or res:
                raise Corruption(file, file_off, "empty page location with non-zero fields")
            return None
        if off < 64 or off % 8 or length < 48 or res != 0 or lsn == 0:
            raise Corruption(file, file_off, "invalid page location")
        return (seg, off, length, lsn)

    # -- §Loading the checkpoint, §Replaying the tail ----------------------------------
    def _recover(self, slot, must_reach):
        self.format = slot["version"]
        self._open_segments(slot)
        rs, ro, rl = slot["root_segment"], slot["root_offset"], slot["root_length"]
        root_seg = self.segments[rs]
        h, p = self.read_addressed(rs, ro, rl, "checkpoint root")
        if h.kind != KIND_CHECKPOINT or h.lsn != slot["checkpoint_lsn"]:
            raise Corruption(root_seg.name, ro, "root frame is not the slot's checkpoint")
        base = ro + 48
        if len(p) < 32:
            raise Corruption(root_seg.name, base + 20, "checkpoint root too short")
        lsn, next_page, entries, chunk_count, seg_count, res = struct.unpack_from("<QQIIII", p, 0)
        if lsn != h.lsn:
            raise Corruption(root_seg.name, base, "root LSN differs from the frame's")
        if next_page > MAX_PAGE_ID:
            raise Corruption(root_seg.name, base + 8, "next page id above 2^31")
        if not 1 <= entries <= 1 << 20:
            raise Corruption(root_seg.name, base + 16, f"chunk entries {entries}")
        if res != 0:
            raise Corruption(root_seg.name, base + 28, "non-zero reserved field")
        if (chunk_count > 1 << 21 or seg_count > 1 << 19
                or len(p) != 32 + 24 * (chunk_count + seg_count)):
            raise Corruption(root_seg.name, base + 20, "checkpoint root size or counts invalid")
        for i in range(seg_count):  # segment statistics: checked, but advisory only
            o = 32 + 24 * (chunk_count + i)
            sid, total, live = struct.unpack_from("<QQQ", p, o)
            if not 1 <= sid <= U32MAX or total > U32MAX or total < live:
                raise Corruption(root_seg.name, base + o, "invalid segment statistics entry")
        self.next_page_id = max(next_page, 16)
        table = {}
        for k in range(chunk_count):
            loc = self._location(p, 32 + 24 * k, root_seg.name, base + 32 + 24 * k)
            if loc is None:
                continue
            cs, co, cl, clsn = loc
            ch, cp = self.read_addressed(cs, co, cl, f"table chunk {k}", (root_seg.name, ro))
            cname = self.segments[cs].name
            if ch.kind != KIND_CHUNK or ch.page_id != k or ch.lsn != clsn:
                raise Corruption(cname, co, f"frame is not table chunk {k} with LSN {clsn}")
            if len(cp) != entries * 24:
                raise Corruption(cname, co + 48, "table chunk payload has the wrong size")
            for i in range(entries):
                e = self._location(cp, 24 * i, cname, co + 48 + 24 * i)
                if e is None:
                    continue
                page_id = k * entries + i
                if e[0] not in self.segments or page_id >= self.next_page_id:
                    raise Corruption(cname, co, f"entry for page {page_id} invalid")
                table[page_id] = e
        self.page_table = table
        self._replay(slot, h.lsn, must_reach)

    def _replay(self, slot, checkpoint_lsn, must_reach):
        last_lsn, pending, pending_lsn = checkpoint_lsn, [], None
        sid, o = slot["root_segment"], slot["root_offset"] + slot["root_length"]
        highest = max(self.segments)
        while True:
            seg = self.segments[sid]
            b, name = seg.data, seg.name
            while True:
                if o + 48 > len(b):
                    break
                problem = check_header(b, o)
                if problem == "newer":
                    raise Unsupported(f"{name}: frame of unsupported format version {b[o + 4]}")
                if problem:
                    break
                h = FrameHeader(b, o)
                if o + h.length > len(b) or not frame_checksum_ok(b, o, h):
                    break
                if h.kind in (KIND_PAGE, KIND_FREE):
                    if h.lsn <= last_lsn or (pending_lsn is not None and h.lsn < pending_lsn):
                        break  # stale: the valid log ends here
                    if h.lsn != pending_lsn:
                        pending, pending_lsn = [], h.lsn
                    if h.kind == KIND_FREE:
                        if h.raw_length != 0:
                            raise Corruption(name, o, "free frame with a payload")
                        pending.append((h.page_id, None))
                    else:
                        pending.append((h.page_id, (sid, o, h.length, h.lsn)))
                elif h.kind == KIND_COMMIT:
                    if h.lsn <= last_lsn or (pending_lsn is not None and h.lsn < pending_lsn):
                        break
                    if h.lsn != pending_lsn:
                        pending = []
                    if h.codec != 0 or h.page_id or h.entity_id or h.schema_version:
                        raise Corruption(name, o, "commit frame header fields not zero")
                    rec = b[o + 48:o + 48 + h.stored_length]
                    if len(rec) != 32:
                        raise Corruption(name, o + 48, "commit record is not 32 bytes")
                    count, res, _dseg, _doff, rec_next = struct.unpack_from("<IIQQQ", rec, 0)
                    if res != 0:
                        raise Corruption(name, o + 52, "non-zero reserved field")
                    if rec_next > MAX_PAGE_ID:
                        raise Corruption(name, o + 72, "next page id above 2^31")
                    if count != len(pending):
                        raise Corruption(name, o, f"frame count {count} but {len(pending)} pending")
                    for page_id, loc in pending:
                        if page_id >= 16 and page_id >= rec_next:
                            raise Corruption(name, o, f"page {page_id} >= next page id {rec_next}")
                        if loc is None:
                            self.page_table.pop(page_id, None)
                        else:
                            self.page_table[page_id] = loc
                    self.next_page_id = max(self.next_page_id, rec_next)
                    last_lsn, pending, pending_lsn = h.lsn, [], None
                else:  # table chunk or checkpoint of a checkpoint not in charge
                    pending, pending_lsn = [], None
                o += h.length
            # §Replaying the tail: where segment s ends
            if sid + 1 in self.segments and sid < highest:
                nxt = self.segments[sid + 1]
                if nxt.prev_end != o:
                    raise Corruption(name, o, f"log ends at {o} but {nxt.name} "
                                     f"says {nxt.prev_end}")
                sid, o = sid + 1, 64
                continue
            break
        if (sid, o) < must_reach:
            raise Corruption(name, o, "the log ends before a valid superblock's checkpoint")
        if o < len(b):
            self._durability_proof(sid, name, b, o)
        self.log_end = (sid, o)

    @staticmethod
    def _durability_proof(sid, name, b, e):
        """§Torn tail or corruption: is the cut at e proved synced by a later commit?"""
        q = e + 8
        while q + 48 <= len(b):
            if b[q:q + 4] == b"SFRM" and b[q + 4] <= NEWEST_FORMAT:
                if check_header(b, q) is None:
                    h = FrameHeader(b, q)
                    if (q + h.length <= len(b) and frame_checksum_ok(b, q, h)
                            and h.kind == KIND_COMMIT and h.codec == 0
                            and h.stored_length == 32 and u32(b, q + 52) == 0
                            and (u64(b, q + 56), u64(b, q + 64)) > (sid, e)):
                        raise Corruption(name, e, f"bytes at {e} were synced "
                                         f"(proved by the commit frame at {q})")
            q += 8


# ---------------------------------------------------------------------------------------
# Record layer conventions (§Record layer conventions, §Values)
# ---------------------------------------------------------------------------------------


class Cursor:
    """A reader of record-layer bytes; errors name `what` and the offset."""

    def __init__(self, data, what):
        self.b, self.o, self.what = data, 0, what

    def fail(self, reason, at=None):
        raise RecordError(f"{self.what}: {reason} at byte {self.o if at is None else at}")

    def left(self):
        return len(self.b) - self.o

    def take(self, n):
        if n > self.left():
            self.fail(f"truncated (needs {n} bytes)")
        v = self.b[self.o:self.o + n]
        self.o += n
        return v

    def u8(self):
        return self.take(1)[0]

    def u32(self):
        return struct.unpack("<I", self.take(4))[0]

    def u64(self):
        return struct.unpack("<Q", self.take(8))[0]

    def varint(self):
        start, value, shift = self.o, 0, 0
        for i in range(10):
            byte = self.u8()
            if i == 9 and byte > 1:
                self.fail("varint longer than 64 bits", start)
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                if byte == 0 and i > 0:
                    self.fail("varint not in its shortest form", start)
                return value
        self.fail("varint longer than 10 bytes", start)

    def bytes_(self):
        n = self.varint()
        return bytes(self.take(n))

    def string(self):
        start = self.o
        raw = self.bytes_()
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            self.fail("invalid UTF-8", start)


def unzigzag(v):
    return (v >> 1) ^ -(v & 1)


def read_value(c, allow_null, allow_refs):
    """One value (§Values): returns (tag, python value)."""
    start = c.o
    tag = c.u8()
    if tag == 0 and allow_null:
        return 0, None
    if tag in (1, 2):
        return tag, tag == 2
    if tag == 3:
        return tag, unzigzag(c.varint())
    if tag in (4, 7):
        return tag, struct.unpack("<d", c.take(8))[0]
    if tag == 5:
        return tag, c.string()
    if tag in (6, 9):
        return tag, c.bytes_()
    if tag == 8:
        return tag, bytes(c.take(16))
    if tag == 10 and allow_refs:
        count = c.varint()
        if count == 0 or count > c.left():
            c.fail("references count out of range", start)
        ids = [c.varint() for _ in range(count)]
        if 0 in ids or len(set(ids)) != count:
            c.fail("references with an id 0 or a repeated id", start)
        return tag, ids
    c.fail(f"invalid value tag {tag}", start)


def decode_record(data, what):
    """§Record encoding: returns {property id: (tag, value)}; a null field is (0, None)."""
    c = Cursor(data, what)
    fmt = c.u8()
    if fmt == 0:
        c.fail("record format 0", 0)
    if fmt > 3:
        raise Unsupported(f"{what}: unsupported record format {fmt}")
    count = c.varint()
    if count > c.left() // 2:
        c.fail("field count larger than the record allows")
    fields, previous, has_refs, has_null = {}, -1, False, False
    for _ in range(count):
        at = c.o
        pid = c.varint()
        if pid > U32MAX or pid <= previous:
            c.fail("attribute ids not strictly increasing", at)
        tag, value = read_value(c, allow_null=(fmt == 3), allow_refs=(fmt >= 2))
        has_refs |= tag == 10
        has_null |= tag == 0
        fields[pid] = (tag, value)
        previous = pid
    if c.left():
        c.fail("trailing bytes after the last field")
    # The lowest format that holds the fields: 3 with a null field, 2 with references, else 1.
    if fmt != (3 if has_null else 2 if has_refs else 1):
        c.fail(f"format {fmt} is not the lowest format that holds the record's fields", 0)
    return fields


# ---------------------------------------------------------------------------------------
# Schema catalog (§Schema catalog) and the schema checksum (§Schema checksum)
# ---------------------------------------------------------------------------------------

TYPE_NAMES = {1: "bool", 2: "int", 3: "double", 4: "string", 5: "data", 6: "date", 7: "uuid",
              8: "codable"}
VALUE_TAG_OF_TYPE = {1: (1, 2), 2: (3,), 3: (4,), 4: (5,), 5: (6,), 6: (7,), 7: (8,), 8: (9,)}


def _enc_varint(n):
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _enc_string(s):
    b = s.encode()
    return _enc_varint(len(b)) + b


def _sorted_items(items):
    return struct.pack("<I", len(items)) + b"".join(sorted(items))


def decode_catalog(data, what="schema catalog"):
    c = Cursor(data, what)
    if c.take(8) != b"STRATSCH":
        c.fail("bad magic", 0)
    fmt = struct.unpack("<H", c.take(2))[0]
    if fmt == 0:
        c.fail("format version 0", 8)
    if fmt > 3:
        raise Unsupported(f"{what}: unsupported format version {fmt}")
    if struct.unpack("<H", c.take(2))[0] != 0:
        c.fail("non-zero flags", 10)
    next_version, next_entity, next_property = c.u32(), c.u32(), c.u32()
    count = c.u32()
    if count > c.left() // 52:
        c.fail("version count larger than the catalog allows", 24)
    versions, any_original = [], False
    for _ in range(count):
        v_at = c.o
        vid, major, minor, patch = c.u32(), c.u32(), c.u32(), c.u32()
        checksum = bytes(c.take(32))
        ecount = c.u32()
        if ecount > c.left() // 18:
            c.fail("entity count larger than the catalog allows")
        entities = []
        for _ in range(ecount):
            e = {"id": c.u32(), "parent": c.u32()}
            flags = c.u8()
            if flags & ~(0b11 if fmt >= 3 else 0b01):
                c.fail("unknown entity flags")
            e["abstract"] = bool(flags & 1)
            e["name"] = c.string()
            e["originalName"] = c.string() if flags & 2 else None
            acount = c.u32()
            if acount > c.left() // 8:
                c.fail("attribute count larger than the catalog allows")
            attrs = []
            for _ in range(acount):
                a = {"id": c.u32(), "name": c.string()}
                a["type"] = c.u8()
                if a["type"] not in TYPE_NAMES:
                    c.fail(f"unknown attribute type tag {a['type']}")
                a["typeName"] = c.string() if a["type"] == 8 else None
                if a["typeName"] is not None and not 1 <= len(a["typeName"].encode()) <= 1024:
                    c.fail("codable type name length out of range")
                a["flags"] = c.u8()
                if a["flags"] & ~(0b1111 if fmt >= 3 else 0b0111):
                    c.fail("unknown attribute flags")
                d_at = c.o
                a["default"] = read_value(c, allow_null=True, allow_refs=False)
                a["defaultBytes"] = bytes(c.b[d_at:c.o])
                if a["default"][0] != 0 and a["default"][0] not in VALUE_TAG_OF_TYPE[a["type"]]:
                    c.fail("default of the wrong type", d_at)
                a["originalName"] = c.string() if a["flags"] & 8 else None
                attrs.append(a)
            rcount = c.u32()
            if rcount > c.left() // 16:
                c.fail("relationship count larger than the catalog allows")
            rels = []
            for _ in range(rcount):
                r = {"id": c.u32(), "name": c.string(), "destination": c.u32(),
                     "inverse": c.u32(), "cardinality": c.u8(), "deleteRule": c.u8()}
                if r["cardinality"] not in (1, 2) or not 1 <= r["deleteRule"] <= 4:
                    c.fail("invalid cardinality or delete rule")
                r["flags"] = c.u8()
                if r["flags"] & ~(0b11 if fmt >= 3 else 0b01):
                    c.fail("unknown relationship flags")
                r["originalName"] = c.string() if r["flags"] & 2 else None
                rels.append(r)
            for item in [e] + attrs + rels:
                if not 1 <= len(item["name"].encode()) <= 255:
                    c.fail(f"name {item['name']!r} length out of range")
                any_original |= item["originalName"] is not None
            e["attributes"], e["relationships"] = attrs, rels
            entities.append(e)
        versions.append(dict(id=vid, version=(major, minor, patch), checksum=checksum,
                             entities=entities, at=v_at))
    if c.left():
        c.fail("bytes after the last version")
    if (fmt == 3) != any_original:
        c.fail("format version 3 exactly when an original name is kept", 8)
    # Invariants 1, 2 and the stored checksum (invariant 6, partly: the shape's hash).
    previous_vid = 0
    for v in versions:
        where = v["at"]
        if not previous_vid < v["id"] < next_version:
            c.fail("version ids not ascending or not below next version id", where)
        previous_vid = v["id"]
        ids, pids = [e["id"] for e in v["entities"]], []
        if ids != sorted(set(ids)) or (ids and (ids[0] < 1 or ids[-1] >= next_entity)):
            c.fail("entity ids not ascending or out of range", where)
        for e in v["entities"]:
            for lst in (e["attributes"], e["relationships"]):
                own = [x["id"] for x in lst]
                if own != sorted(set(own)) or (own and own[0] < 1):
                    c.fail("property ids not ascending", where)
                pids += own
        if len(pids) != len(set(pids)) or any(p >= next_property for p in pids):
            c.fail("property ids not unique or not below next property id", where)
        if schema_checksum(v) != v["checksum"]:
            c.fail("stored schema checksum differs from the version's shape", where)
    return dict(format=fmt, next_version=next_version, next_entity=next_entity,
                next_property=next_property, versions=versions)


def schema_checksum(version):
    """SHA-256 of the canonical shape (§Schema checksum)."""
    by_id = {e["id"]: e for e in version["entities"]}

    def optional_name(name):
        return b"\x00" if name is None else b"\x01" + _enc_string(name)

    items = []
    for e in version["entities"]:
        parent = by_id[e["parent"]]["name"] if e["parent"] in by_id else None
        attrs = [_enc_string(a["name"]) + bytes([a["type"]])
                 + (_enc_string(a["typeName"]) if a["type"] == 8 else b"")
                 + bytes([a["flags"] & 0b111]) + a["defaultBytes"] for a in e["attributes"]]
        rels = []
        for r in e["relationships"]:
            dest = by_id.get(r["destination"])
            inverse = None
            if r["inverse"]:
                for x in version["entities"]:
                    for rr in x["relationships"]:
                        if rr["id"] == r["inverse"]:
                            inverse = rr["name"]
            rels.append(_enc_string(r["name"]) + _enc_string(dest["name"] if dest else "")
                        + optional_name(inverse)
                        + bytes([r["cardinality"], r["deleteRule"], r["flags"] & 1]))
        items.append(_enc_string(e["name"]) + optional_name(parent) + bytes([e["abstract"]])
                     + _sorted_items(attrs) + _sorted_items(rels))
    shape = b"strata.schema-shape.v1" + _sorted_items(items)
    return hashlib.sha256(shape).digest()


# ---------------------------------------------------------------------------------------
# Record layer (§Record layer): store root, record trees, overflow records
# ---------------------------------------------------------------------------------------


class RecordStore:
    def __init__(self, log):
        self.log = log
        self.catalog_page, self.entities, self.migration = 0, [], None
        page = log.read_page(0)
        if page is not None:
            self._decode_root(page[1])

    def _decode_root(self, p):
        """§Store root, versions 1 to 6."""
        c = Cursor(p, "store root, " + self.where(0))
        if c.take(4) != b"SROT":
            c.fail("bad magic", 0)
        version = struct.unpack("<H", c.take(2))[0]
        if not 1 <= version <= 6:
            raise Unsupported(f"store root: unsupported version {version}")
        flags = struct.unpack("<H", c.take(2))[0]
        allowed = {4: 0b01, 5: 0b11, 6: 0b11}.get(version, 0)
        if flags & ~allowed:
            c.fail(f"invalid store root flags {flags:#x}", 6)
        self.catalog_page = c.u64()
        entity_count, index_count = c.u32(), c.u32()
        if entity_count > 1 << 20 or index_count > 1 << 20:
            c.fail("entity or index count above 2^20", 16)
        if (version == 1 and index_count) or (version == 2 and index_count == 0):
            c.fail(f"index count {index_count} in a version {version} store root", 20)
        previous = 0
        for _ in range(entity_count):
            at = c.o
            eid, eflags, root, count, next_row = c.u32(), c.u32(), c.u64(), c.u64(), c.u64()
            if eid <= previous:
                c.fail("entity ids not strictly ascending", at)
            if eflags & ~(1 if version >= 5 else 0):
                c.fail("invalid entity flags", at + 4)
            if (root == 0) != (count == 0):
                c.fail("root page and count disagree", at + 8)
            if next_row == 0:
                c.fail("next row id 0", at + 24)
            self.entities.append(dict(id=eid, root=root, count=count, next_row=next_row))
            previous = eid
        counts = {e["id"]: e["count"] for e in self.entities}
        prev_key = (-1, -1)
        for _ in range(index_count):  # index entries: checked and skipped (§Index trees)
            at = c.o
            eid, aid, root, count, iflags, dlen = c.u32(), c.u32(), c.u64(), c.u64(), c.u32(), c.u32()
            if (eid, aid) <= prev_key:
                c.fail("index entries not strictly ascending", at)
            prev_key = (eid, aid)
            if (root == 0) != (count == 0) or count != counts.get(eid, 0):
                c.fail("index root or count invalid", at + 8)
            if iflags & ~1:
                c.fail("invalid index flags", at + 24)
            if dlen == 0 or dlen > c.left():
                c.fail("invalid default key length", at + 28)
            c.take(dlen)
        has_history = version == 4 or (version >= 5 and flags & 2)
        has_migration = version == 3 or (version >= 4 and flags & 1)
        if has_history:  # history root: checked and skipped (§History journal)
            at = c.o
            root, count, next_token, horizon = c.u64(), c.u64(), c.u64(), c.u64()
            c.take(24)  # timestamps and bytes
            consumers, hflags = c.u32(), c.u32()
            if (root == 0) != (count == 0) or not 1 <= next_token <= 1 << 40 \
                    or horizon >= next_token or hflags & ~1 or consumers > 1024:
                c.fail("invalid history root", at)
            last = None
            for _ in range(consumers):
                token, nlen = c.u64(), struct.unpack("<H", c.take(2))[0]
                name = bytes(c.take(nlen))
                if token >= next_token or not 1 <= nlen <= 255 or (last is not None and name <= last):
                    c.fail("invalid history consumer")
                last = name
        if has_migration:
            at = c.o
            if c.left() < 76 or c.take(4) != b"MIGR":
                c.fail("bad migration marker", at)
            phase, mflags = c.u8(), c.u8()
            if phase > 2 or mflags & ~(1 if version == 6 else 0):
                c.fail("invalid migration phase or flags", at + 4)
            if version == 6 and not mflags & 1:
                c.fail("version 6 store root without the closure flushed flag", at + 5)
            c.take(2 + 16 + 8 + 32 + 8)
            shadows = c.u32()
            if shadows > 1 << 20:
                c.fail("shadow count above 2^20")
            c.take(40 * shadows)
            retired = c.u32()
            if retired > 1 << 20 or c.left() != 24 * retired:
                c.fail("retired trees do not fill the marker")
            c.take(24 * retired)
            self.migration = dict(phase=phase)
        elif version == 6:
            c.fail("version 6 store root without a migration marker", 4)
        if c.left():
            c.fail("bytes after the store root")

    def page(self, page_id, what):
        p = self.log.read_page(page_id)
        if p is None:
            raise RecordError(f"{what}: page {page_id} is missing")
        return p[1]

    def where(self, page_id):
        """Where a page's frame is, for error messages about its (decoded) payload."""
        seg, off, _l, _lsn = self.log.page_table[page_id]
        return f"page {page_id} ({seg_name(seg)}, frame at offset {off})"

    def catalog(self):
        if self.catalog_page == 0:
            return None
        data = self.page(self.catalog_page, "schema catalog")
        return decode_catalog(data, "schema catalog, " + self.where(self.catalog_page))

    def records(self, entity):
        """§Record trees: yields (record id, record bytes) in id order."""
        if entity["root"] == 0:
            return
        yield from self._walk(entity["root"], 0, 1 << 64, 1, entity["id"])

    def _walk(self, page_id, lo, hi, depth, entity_id):
        what = f"record tree node, page {page_id}"
        if depth > 64:
            raise RecordError(f"{what}: path deeper than 64 nodes")
        b = self.page(page_id, what)
        what = "record tree node, " + self.where(page_id)
        if len(b) < 8:
            raise RecordError(f"{what}: shorter than its 8-byte header")
        kind, version, count, reserved = struct.unpack_from("<BBHI", b, 0)
        if version != 1:
            raise Unsupported(f"{what}: unsupported node version {version}")
        # reserved: written as zero (§Conventions); FileFormat.md states no reader check
        # for record tree nodes (it does for index nodes) and the reference tool accepts a
        # non-zero value, so it is not checked here.
        if kind == 2:
            if count < 1 or len(b) != 8 + 16 * count:
                raise RecordError(f"{what}: interior node of the wrong size")
            children = [struct.unpack_from("<QQ", b, 8 + 16 * i) for i in range(count)]
            firsts = [f for f, _ in children]
            # firstID(0) is 0 in every interior node, the root and the ones below it (as
            # the stores' bytes show); child 0's range then starts at the parent's bound.
            if firsts[0] != 0:
                raise RecordError(f"{what}: first id of child 0 is not 0")
            for i, (first, child) in enumerate(children):
                if child == 0 or (i and first <= firsts[i - 1]):
                    raise RecordError(f"{what}: child {i} invalid")
                c_lo = max(first, lo)
                c_hi = firsts[i + 1] if i + 1 < count else hi
                if c_hi > hi or (i and first < lo):
                    raise RecordError(f"{what}: child {i} outside the parent's range")
                yield from self._walk(child, c_lo, c_hi, depth + 1, entity_id)
        elif kind == 1:
            data_at = 8 + 12 * count
            if len(b) < data_at:
                raise RecordError(f"{what}: directory runs past the page")
            data, previous_end, previous_id = b[data_at:], 0, None
            for i in range(count):
                rid, end_field = struct.unpack_from("<QI", b, 8 + 12 * i)
                end = end_field & 0x7FFFFFFF
                if (previous_id is not None and rid <= previous_id) or end < previous_end \
                        or end > len(data):
                    raise RecordError(f"{what}: directory entry {i} invalid")
                if not lo <= rid < hi:
                    raise RecordError(f"{what}: record id {rid} outside the node's range")
                body = data[previous_end:end]
                if end_field & 0x80000000:
                    body = self._overflow(body, f"{what}, record {rid}")
                yield rid, body
                previous_end, previous_id = end, rid
            if previous_end != len(data):
                raise RecordError(f"{what}: trailing bytes after the last record")
        else:
            raise RecordError(f"{what}: node kind {kind} is not a record tree node")

    def _overflow(self, ref, what):
        """§Overflow records."""
        if len(ref) < 12:
            raise RecordError(f"{what}: overflow reference too short")
        length, count = struct.unpack_from("<QI", ref, 0)
        if len(ref) != 12 + 8 * count or length > count * MAX_RAW:
            raise RecordError(f"{what}: invalid overflow reference")
        parts = [self.page(u64(ref, 12 + 8 * i), f"{what}, overflow chunk {i}")
                 for i in range(count)]
        body = b"".join(parts)
        if len(body) != length:
            raise RecordError(f"{what}: overflow chunks hold {len(body)} bytes, not {length}")
        return body


# ---------------------------------------------------------------------------------------
# Export (Docs/Tools.md, "The export format", version 1)
# ---------------------------------------------------------------------------------------


class RawJSON:
    """JSON text to be written verbatim (a codable value's stored JSON)."""

    def __init__(self, text):
        self.text = text


def to_json(v):
    if isinstance(v, RawJSON):
        return v.text
    if isinstance(v, dict):
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + to_json(x)
                              for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ",".join(to_json(x) for x in v) + "]"
    if isinstance(v, float):
        return repr(v)  # shortest form that reads back to the same double
    return json.dumps(v, ensure_ascii=False)


def _reject_constant(name):
    raise ValueError(name)


def codable_json(raw):
    """The stored JSON when it is one JSON value on one line with nothing around it."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if "\n" in text or "\r" in text or text != text.strip(" \t\r\n") or not text:
        return None
    try:
        json.loads(text, parse_constant=_reject_constant)
    except ValueError:
        return None
    return RawJSON(text)


def double_json(x):
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return x


def uuid_text(b):
    h = b.hex().upper()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def plain_value_json(tag, value):
    """A stored value of tags 1-8 as export writes it (Tools.md table)."""
    if tag in (1, 2, 3, 5):
        return value
    if tag in (4, 7):
        return double_json(value)
    if tag == 6:
        return base64.b64encode(value).decode()
    if tag == 8:
        return uuid_text(value)
    raise ValueError(tag)


def attribute_json(attr, tag, value, what):
    """A value under an attribute; returns (json value, codable bytes or None)."""
    if tag == 0:
        return None, None
    if attr["type"] == 8:
        if tag == 9:
            text = codable_json(value)
            return (text, None) if text is not None else (None, value)
        # A plain value (tags 1-8) under a codable attribute (§Record encoding, "A plain
        # value under a codable attribute"). FileFormat.md says it reads as the JSON writers
        # store for that scalar (an infinity as "+Infinity"); Tools.md does not say how the
        # export writes it. The reference tool writes it as the plain value is exported
        # (an infinity as "Infinity"), found by storing such values by hand; we do the same.
        return plain_value_json(tag, value), None
    if tag not in VALUE_TAG_OF_TYPE[attr["type"]]:
        raise RecordError(f"{what}: value tag {tag} under a {TYPE_NAMES[attr['type']]} attribute")
    return plain_value_json(tag, value), None


def type_text(a):
    return f"codable({a['typeName']})" if a["type"] == 8 else TYPE_NAMES[a["type"]]


def version_json(v):
    entities = []
    for e in v["entities"]:
        attrs = []
        for a in e["attributes"]:
            default, extra = attribute_json(a, *a["default"], "catalog default")
            item = {"id": a["id"], "name": a["name"], "type": type_text(a),
                    "optional": bool(a["flags"] & 1), "default": default,
                    "unique": bool(a["flags"] & 2), "indexed": bool(a["flags"] & 4)}
            if extra is not None:
                item["defaultBytes"] = base64.b64encode(extra).decode()
            if a["originalName"] is not None:
                item["originalName"] = a["originalName"]
            attrs.append(item)
        rels = []
        for r in e["relationships"]:
            item = {"id": r["id"], "name": r["name"], "destinationID": r["destination"],
                    "inverseID": r["inverse"] or None,
                    "cardinality": "to-one" if r["cardinality"] == 1 else "to-many",
                    "deleteRule": ["nullify", "cascade", "deny", "noAction"][r["deleteRule"] - 1],
                    "optional": bool(r["flags"] & 1)}
            if r["originalName"] is not None:
                item["originalName"] = r["originalName"]
            rels.append(item)
        item = {"id": e["id"], "name": e["name"], "parentID": e["parent"] or None,
                "abstract": e["abstract"], "attributes": attrs, "relationships": rels}
        if e["originalName"] is not None:
            item["originalName"] = e["originalName"]
        entities.append(item)
    return {"schemaVersion": {"id": v["id"], "version": "%d.%d.%d" % v["version"],
                              "checksum": v["checksum"].hex(), "entities": entities}}


def export(folder, out):
    log = PageLog(folder)
    store = RecordStore(log)
    if store.migration is not None:
        raise Unsupported("a migration is in progress; open the store with the app to finish it")
    catalog = store.catalog()
    versions = catalog["versions"] if catalog else []
    newest = {}  # entity id -> (its definition in the newest version that has it, version)
    for v in versions:
        for e in v["entities"]:
            newest[e["id"]] = (e, v)
    for e in store.entities:
        if e["id"] not in newest:
            raise Unsupported(f"records of entity {e['id']}, which no schema version describes")
    total = sum(e["count"] for e in store.entities)
    write = lambda obj: out.write(to_json(obj) + "\n")
    write({"format": "strata-export", "version": 1, "catalogVersions": len(versions),
           "entities": len(store.entities), "records": total})
    write({"catalog": {"nextVersionID": catalog["next_version"] if catalog else 1,
                       "nextEntityID": catalog["next_entity"] if catalog else 1,
                       "nextPropertyID": catalog["next_property"] if catalog else 1}})
    for v in versions:
        write(version_json(v))
    written = 0
    for entry in store.entities:
        definition, version = newest[entry["id"]]
        by_id = {x["id"]: x for x in version["entities"]}
        chain, x = [], definition
        while x is not None:  # the entity and its ancestors, root first
            chain.insert(0, x)
            x = by_id.get(x["parent"]) if x["parent"] else None
        attrs = [a for x in chain for a in x["attributes"]]
        rels = [r for x in chain for r in x["relationships"]]
        name = definition["name"]
        write({"entityTree": {"entity": name, "entityID": entry["id"],
                              "records": entry["count"], "nextID": entry["next_row"]}})
        n = 0
        for rid, body in store.records(entry):
            what = f"record {rid} of {name} (tree of entity {entry['id']})"
            fields = decode_record(body, what)
            values, codable_bytes = {}, {}
            for a in attrs:
                tag, value = fields.get(a["id"], a["default"])
                if tag == 0 and a["id"] in fields and not a["flags"] & 1:
                    # §Record encoding, "Null fields": under a required attribute a null
                    # field reads as the default, as if absent.
                    tag, value = a["default"]
                if a["id"] in fields and tag == 10:
                    raise RecordError(f"{what}: references under attribute {a['name']}")
                values[a["name"]], extra = attribute_json(a, tag, value, what)
                if extra is not None:
                    codable_bytes[a["name"]] = base64.b64encode(extra).decode()
            for r in rels:
                tag, ids = fields.get(r["id"], (0, None))
                if tag not in (0, 10):
                    raise RecordError(f"{what}: value tag {tag} under relationship {r['name']}")
                if r["cardinality"] == 1:
                    if ids and len(ids) > 1:
                        raise RecordError(f"{what}: to-one {r['name']} holds {len(ids)} ids")
                    values[r["name"]] = ids[0] if ids else None
                else:
                    values[r["name"]] = ids or []
            line = {"entity": name, "id": rid, "values": values}
            if codable_bytes:
                line["codableBytes"] = codable_bytes
            write(line)
            n += 1
        if n != entry["count"]:
            raise RecordError(f"entity {name}: tree holds {n} records, the store root says "
                              f"{entry['count']}")
        written += n
    write({"end": {"records": written}})


def list_pages(folder, out):
    """Every page of the page table: id, raw length, CRC32C (the fixtures' expected.txt)."""
    log = PageLog(folder)
    for page_id in sorted(log.page_table):
        _h, raw = log.read_page(page_id)
        out.write(f"{page_id} {len(raw)} {crc32c(raw):x}\n")


def main(argv):
    if len(argv) != 3 or argv[1] not in ("export", "pages"):
        sys.stderr.write(__doc__)
        return 2
    try:
        out = open(sys.stdout.fileno(), "w", encoding="utf-8", newline="\n", closefd=False)
        (export if argv[1] == "export" else list_pages)(argv[2], out)
        out.flush()
        return 0
    except (Corruption, Unsupported, RecordError) as e:
        sys.stderr.write(f"strata_reader: {argv[2]}: {e}\n")
        return 3
    except BrokenPipeError:  # e.g. piped into `head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
