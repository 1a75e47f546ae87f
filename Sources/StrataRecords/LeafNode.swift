import StrataFormat

/// A leaf of a record tree: records sorted by id, packed (Docs/FileFormat.md, "Record trees").
///
/// Encoded form (the page payload, before the page log compresses it):
/// `kind:u8 = 1, version:u8 = 1, count:u16, reserved:u32`, then `count` entries
/// `(id:u64, end:u32)` — record i's bytes are `data[end(i-1) ..< end(i)]` with bit 31 of
/// `end` set when the bytes are an overflow reference instead of the record — then the data.
struct LeafNode: Equatable {
    static let headerSize = 8
    static let entrySize = 12
    static let overflowFlag: UInt32 = 1 << 31

    var ids: [UInt64] = []
    /// End offset of each record in `data`, with `overflowFlag` marking overflow references.
    var ends: [UInt32] = []
    var data: [UInt8] = []

    var count: Int { ids.count }
    var encodedSize: Int { Self.headerSize + ids.count * Self.entrySize + data.count }

    func start(_ index: Int) -> Int { index == 0 ? 0 : Int(ends[index - 1] & ~Self.overflowFlag) }
    func end(_ index: Int) -> Int { Int(ends[index] & ~Self.overflowFlag) }
    func isOverflow(_ index: Int) -> Bool { ends[index] & Self.overflowFlag != 0 }
    func bytes(_ index: Int) -> ArraySlice<UInt8> { data[start(index)..<end(index)] }

    /// The index of `id`, or where it would be inserted.
    func search(_ id: UInt64) -> (found: Bool, index: Int) {
        // Past the last id (ascending inserts, the common case): the end, without a search.
        if let last = ids.last, id > last { return (false, ids.count) }
        var low = 0, high = ids.count
        while low < high {
            let middle = (low + high) / 2
            if ids[middle] < id { low = middle + 1 } else { high = middle }
        }
        return (low < ids.count && ids[low] == id, low)
    }

    mutating func insert(_ id: UInt64, bytes: some Collection<UInt8>, overflow: Bool, at index: Int) {
        let position = start(index)
        let length = bytes.count
        data.insert(contentsOf: bytes, at: position)
        Self.shiftEnds(&ends, from: index, by: UInt32(truncatingIfNeeded: length))
        ids.insert(id, at: index)
        ends.insert(UInt32(position + length) | (overflow ? Self.overflowFlag : 0), at: index)
    }

    mutating func append(_ id: UInt64, bytes: UnsafeRawBufferPointer, overflow: Bool) {
        // Typed: appending a raw buffer copies byte by byte, a typed one is one memcpy.
        data.append(contentsOf: bytes.assumingMemoryBound(to: UInt8.self))
        ids.append(id)
        ends.append(UInt32(data.count) | (overflow ? Self.overflowFlag : 0))
    }

    /// Appends records whose ids ascend past the last one (none overflowed): `ids`, and their
    /// bytes back to back in `bytes`, record i's ending `ends[i] - origin` bytes in. One copy of
    /// the bytes, the directory appended whole.
    mutating func append(ids: UnsafeBufferPointer<UInt64>, bytes: UnsafeRawBufferPointer, ends: UnsafeBufferPointer<Int>, origin: Int) {
        let shift = data.count - origin
        data.append(contentsOf: bytes.assumingMemoryBound(to: UInt8.self))
        self.ids.append(contentsOf: ids)
        // Grown at once, then stored into (appending a lazily mapped sequence went element by
        // element through its iterator).
        let first = self.ends.count
        self.ends.append(contentsOf: repeatElement(0, count: ends.count))
        self.ends.withUnsafeMutableBufferPointer { stored in
            for index in ends.indices { stored[first + index] = UInt32(ends[index] + shift) }
        }
    }

    /// Appends records `range` of `other` (their ids ascending past this leaf's last), their
    /// bytes copied at once and overflow references kept as they are.
    mutating func append(_ range: Range<Int>, of other: LeafNode) {
        guard !range.isEmpty else { return }
        let from = other.start(range.lowerBound), to = other.end(range.upperBound - 1)
        let shift = UInt32(truncatingIfNeeded: data.count &- from)
        other.data.withUnsafeBufferPointer { data.append(contentsOf: UnsafeBufferPointer(rebasing: $0[from..<to])) }
        ids.append(contentsOf: other.ids[range])
        let first = ends.count
        ends.append(contentsOf: other.ends[range])
        ends.withUnsafeMutableBufferPointer { stored in
            // The flag bit is above any offset: adding the shift leaves it as it is.
            for index in first..<stored.count { stored[index] &+= shift }
        }
    }

    /// Replaces record `index`'s bytes (its id stays): the bytes after it move once.
    mutating func replace(at index: Int, with bytes: UnsafeRawBufferPointer, overflow: Bool) {
        let range = start(index)..<end(index)
        data.replaceSubrange(range, with: bytes.assumingMemoryBound(to: UInt8.self))
        let delta = UInt32(truncatingIfNeeded: bytes.count &- range.count)
        if delta != 0 { Self.shiftEnds(&ends, from: index + 1, by: delta) }
        ends[index] = UInt32(range.lowerBound + bytes.count) | (overflow ? Self.overflowFlag : 0)
    }

    mutating func remove(at index: Int) {
        let range = start(index)..<end(index)
        data.removeSubrange(range)
        Self.shiftEnds(&ends, from: index + 1, by: 0 &- UInt32(truncatingIfNeeded: range.count))
        ids.remove(at: index)
        ends.remove(at: index)
    }

    /// Adds `delta` (two's complement: a negative shift wraps) to the ends from `first` on, as
    /// their records' bytes move: one pass over the buffer, with no bounds or overflow check
    /// per entry (deleting a leaf's first record, the loop was a third of the delete). Offsets
    /// stay below bit 31 (the overflow flag), which the wrapping sum leaves as it is.
    private static func shiftEnds(_ ends: inout [UInt32], from first: Int, by delta: UInt32) {
        guard first < ends.count else { return }
        ends.withUnsafeMutableBufferPointer { stored in
            for index in first..<stored.count { stored[index] &+= delta }
        }
    }

    /// How many of the first records, all but the last at most, fit after `size` encoded bytes
    /// (a leaf's: `encodedSize`) without passing `maximum`.
    func prefixCount(fittingAfter size: Int, maximum: Int) -> Int {
        var size = size, fitting = 0
        while fitting < ids.count - 1 {
            let grown = size + Self.entrySize + end(fitting) - start(fitting)
            guard grown <= maximum else { break }
            size = grown
            fitting += 1
        }
        return fitting
    }

    /// Removes the first `count` records (0 ≤ count ≤ `self.count`).
    mutating func removeFirst(_ count: Int) {
        guard count > 0 else { return }
        let base = end(count - 1)
        ids.removeFirst(count)
        ends.removeFirst(count)
        data.removeFirst(base)
        // The flag bit is above any offset: subtracting leaves it as it is.
        let shift = UInt32(base)
        ends.withUnsafeMutableBufferPointer { for index in $0.indices { $0[index] &-= shift } }
    }

    /// Moves the upper half (by bytes) into a new leaf and returns it.
    mutating func splitOff() -> LeafNode {
        var splitAt = 1
        let half = data.count / 2
        while splitAt < ids.count - 1 && end(splitAt - 1) < half { splitAt += 1 }
        return splitOff(at: splitAt)
    }

    /// Moves records `splitAt...` (1 ≤ splitAt < count) into a new leaf and returns it.
    mutating func splitOff(at splitAt: Int) -> LeafNode {
        var right = LeafNode()
        let base = start(splitAt)
        right.ids = Array(ids[splitAt...])
        right.ends = ends[splitAt...].map { (($0 & ~Self.overflowFlag) - UInt32(base)) | ($0 & Self.overflowFlag) }
        right.data = Array(data[base...])
        ids.removeSubrange(splitAt...)
        ends.removeSubrange(splitAt...)
        data.removeSubrange(base...)
        return right
    }

    func encoded() -> [UInt8] {
        // Stored straight into the array's memory (appending integer by integer through
        // `ByteWriter` copied the directory byte by byte).
        let size = encodedSize
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            let raw = UnsafeMutableRawBufferPointer(buffer)
            raw.storeBytes(of: NodeKind.leaf.rawValue, toByteOffset: 0, as: UInt8.self)
            raw.storeBytes(of: UInt8(1), toByteOffset: 1, as: UInt8.self)
            raw.storeBytes(of: UInt16(ids.count).littleEndian, toByteOffset: 2, as: UInt16.self)
            raw.storeBytes(of: UInt32(0), toByteOffset: 4, as: UInt32.self)
            var offset = Self.headerSize
            for index in ids.indices {
                raw.storeBytes(of: ids[index].littleEndian, toByteOffset: offset, as: UInt64.self)
                raw.storeBytes(of: ends[index].littleEndian, toByteOffset: offset + 8, as: UInt32.self)
                offset += Self.entrySize
            }
            data.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: raw[offset...]).copyMemory(from: $0) }
            initialized = size
        }
    }

    static func decode(_ bytes: [UInt8]) throws -> LeafNode {
        try bytes.withUnsafeBytes { raw in
            let count = try LeafView.validate(raw)
            var node = LeafNode()
            node.ids.reserveCapacity(count)
            node.ends.reserveCapacity(count)
            for index in 0..<count {
                let base = headerSize + index * entrySize
                node.ids.append(UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: base, as: UInt64.self)))
                node.ends.append(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: base + 8, as: UInt32.self)))
            }
            node.data = Array(raw[(headerSize + count * entrySize)...])
            return node
        }
    }
}

/// Read-only access to an encoded leaf without decoding it (the read path).
struct LeafView {
    let raw: UnsafeRawBufferPointer
    let count: Int

    /// Checks the header and that ids ascend and ends are in bounds; returns the count.
    static func validate(_ raw: UnsafeRawBufferPointer) throws -> Int {
        let count = try validateHeader(raw)
        let dataStart = LeafNode.headerSize + count * LeafNode.entrySize
        guard dataStart <= raw.count else { throw FormatError("leaf of \(count) records is cut short", at: 2) }
        try validateDirectory(raw, count: count, dataCount: raw.count - dataStart)
        return count
    }

    /// Checks the header (the first `LeafNode.headerSize` bytes of `raw`, or fewer when the
    /// leaf is cut short); returns the record count.
    static func validateHeader(_ raw: UnsafeRawBufferPointer) throws -> Int {
        guard raw.count >= LeafNode.headerSize, raw[0] == NodeKind.leaf.rawValue else {
            throw FormatError("not a record tree leaf", at: 0)
        }
        guard raw[1] == 1 else { throw FormatError("record tree leaf version \(raw[1]) is not supported", at: 1) }
        return Int(UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: 2, as: UInt16.self)))
    }

    /// Checks the directory of a leaf of `count` records (in `raw`, which holds at least the
    /// header and the directory) whose data is `dataCount` bytes: ids ascend, ends ascend,
    /// and the last ends exactly at the end of the data.
    static func validateDirectory(_ raw: UnsafeRawBufferPointer, count: Int, dataCount: Int) throws {
        precondition(raw.count >= LeafNode.headerSize + count * LeafNode.entrySize)
        // Every lookup that opens a leaf checks its directory: first by one pass that only
        // notes whether anything is wrong (no branch per entry but the loop's), and only then
        // entry by entry, to name the first bad one.
        if count > 0, let base = raw.baseAddress, directoryIsValid(base + LeafNode.headerSize, count: count, dataCount: dataCount) { return }
        try reportDirectory(raw, count: count, dataCount: dataCount)
    }

    /// Whether the `count` entries at `entries` ascend by id and by end, the ends within
    /// `dataCount` and the last exactly there.
    @inline(__always)
    private static func directoryIsValid(_ entries: UnsafeRawPointer, count: Int, dataCount: Int) -> Bool {
        var previousID = UInt64(littleEndian: entries.loadUnaligned(as: UInt64.self))
        var previousEnd = UInt32(littleEndian: entries.loadUnaligned(fromByteOffset: 8, as: UInt32.self)) & ~LeafNode.overflowFlag
        guard dataCount <= Int(UInt32.max) else { return false }
        let limit = UInt32(dataCount)
        var bad: UInt8 = previousEnd > limit ? 1 : 0
        var offset = LeafNode.entrySize
        let end = count &* LeafNode.entrySize
        while offset < end {
            let id = UInt64(littleEndian: entries.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            let entryEnd = UInt32(littleEndian: entries.loadUnaligned(fromByteOffset: offset &+ 8, as: UInt32.self)) & ~LeafNode.overflowFlag
            bad |= (id <= previousID ? 1 : 0) | (entryEnd < previousEnd ? 1 : 0)
            previousID = id
            previousEnd = entryEnd
            offset &+= LeafNode.entrySize
        }
        return bad == 0 && previousEnd == limit
    }

    /// `validateDirectory`'s entry-by-entry check, which throws for the first bad entry.
    @inline(never)
    private static func reportDirectory(_ raw: UnsafeRawBufferPointer, count: Int, dataCount: Int) throws {
        let dataStart = LeafNode.headerSize + count * LeafNode.entrySize
        var previousID: UInt64 = 0
        var previousEnd = 0
        for index in 0..<count {
            let base = LeafNode.headerSize + index * LeafNode.entrySize
            let id = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: base, as: UInt64.self))
            let end = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: base + 8, as: UInt32.self)) & ~LeafNode.overflowFlag)
            guard index == 0 || id > previousID else { throw FormatError("leaf ids do not ascend", at: base) }
            guard end >= previousEnd, end <= dataCount else { throw FormatError("leaf record end \(end) out of bounds", at: base + 8) }
            previousID = id
            previousEnd = end
        }
        guard previousEnd == dataCount else { throw FormatError("leaf has \(dataCount - previousEnd) bytes after its last record", at: dataStart) }
    }

    init(validated raw: UnsafeRawBufferPointer, count: Int) {
        self.raw = raw
        self.count = count
    }

    func id(_ index: Int) -> UInt64 {
        UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: LeafNode.headerSize + index * LeafNode.entrySize, as: UInt64.self))
    }

    private func rawEnd(_ index: Int) -> UInt32 {
        UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: LeafNode.headerSize + index * LeafNode.entrySize + 8, as: UInt32.self))
    }

    func isOverflow(_ index: Int) -> Bool { rawEnd(index) & LeafNode.overflowFlag != 0 }

    /// Where record `index`'s bytes start, counted from the start of the leaf.
    func startOffset(_ index: Int) -> Int {
        LeafNode.headerSize + count * LeafNode.entrySize + (index == 0 ? 0 : Int(rawEnd(index - 1) & ~LeafNode.overflowFlag))
    }

    /// Where record `index`'s bytes end, counted from the start of the leaf.
    func endOffset(_ index: Int) -> Int {
        LeafNode.headerSize + count * LeafNode.entrySize + Int(rawEnd(index) & ~LeafNode.overflowFlag)
    }

    func bytes(_ index: Int) -> UnsafeRawBufferPointer {
        let dataStart = LeafNode.headerSize + count * LeafNode.entrySize
        let start = index == 0 ? 0 : Int(rawEnd(index - 1) & ~LeafNode.overflowFlag)
        let end = Int(rawEnd(index) & ~LeafNode.overflowFlag)
        return UnsafeRawBufferPointer(rebasing: raw[(dataStart + start)..<(dataStart + end)])
    }

    func search(_ id: UInt64) -> (found: Bool, index: Int) {
        let index = InterpolationSearch.lowerBound(of: id, in: 0..<count) { self.id($0) }
        return (index < count && self.id(index) == id, index)
    }
}

/// The kind byte at the start of every record tree node.
enum NodeKind: UInt8 {
    case leaf = 1
    case interior = 2
}
