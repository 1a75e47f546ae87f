import StrataFormat

/// An interior node of a record tree: child i holds the ids from `firstIDs[i]` up to
/// `firstIDs[i + 1]` (exclusive); `firstIDs[0]` is 0.
///
/// Encoded form: `kind:u8 = 2, version:u8 = 1, count:u16, reserved:u32`, then `count`
/// entries `(firstID:u64, child page id:u64)`.
struct InteriorNode: Equatable {
    static let headerSize = 8
    static let entrySize = 16

    var firstIDs: [UInt64] = []
    var children: [UInt64] = []

    var count: Int { children.count }
    var encodedSize: Int { Self.headerSize + children.count * Self.entrySize }

    /// The child whose range holds `id`.
    func childIndex(for id: UInt64) -> Int {
        Self.childIndex(for: id, count: firstIDs.count) { firstIDs[$0] }
    }

    static func childIndex(for id: UInt64, count: Int, firstID: (Int) -> UInt64) -> Int {
        // The child before the first one (after child 0) whose first id is above `id`.
        guard id < UInt64.max else { return max(0, count - 1) }
        return InterpolationSearch.lowerBound(of: id + 1, in: 1..<max(1, count), key: firstID) - 1
    }

    /// Moves the upper half of the children into a new node and returns it.
    mutating func splitOff() -> InteriorNode { splitOff(at: children.count / 2) }

    /// Moves children `half...` (1 ≤ half < count) into a new node and returns it.
    mutating func splitOff(at half: Int) -> InteriorNode {
        var right = InteriorNode()
        right.firstIDs = Array(firstIDs[half...])
        right.children = Array(children[half...])
        firstIDs.removeSubrange(half...)
        children.removeSubrange(half...)
        return right
    }

    func encoded() -> [UInt8] {
        var writer = ByteWriter(capacity: encodedSize)
        writer.append(NodeKind.interior.rawValue)
        writer.append(UInt8(1))
        writer.append(UInt16(children.count))
        writer.append(UInt32(0))
        for index in children.indices {
            writer.append(firstIDs[index])
            writer.append(children[index])
        }
        return writer.bytes
    }

    static func decode(_ bytes: [UInt8]) throws -> InteriorNode {
        try bytes.withUnsafeBytes { raw in
            let count = try validate(raw)
            var node = InteriorNode()
            for index in 0..<count {
                let base = headerSize + index * entrySize
                node.firstIDs.append(UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: base, as: UInt64.self)))
                node.children.append(UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: base + 8, as: UInt64.self)))
            }
            return node
        }
    }

    /// Checks the header, the size, ascending first ids (the first one 0) and child ids.
    static func validate(_ raw: UnsafeRawBufferPointer) throws -> Int {
        guard raw.count >= headerSize, raw[0] == NodeKind.interior.rawValue else {
            throw FormatError("not a record tree interior node", at: 0)
        }
        guard raw[1] == 1 else { throw FormatError("record tree node version \(raw[1]) is not supported", at: 1) }
        let count = Int(UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: 2, as: UInt16.self)))
        guard count >= 1, raw.count == headerSize + count * entrySize else {
            throw FormatError("interior node of \(count) children has \(raw.count) bytes", at: 2)
        }
        var previous: UInt64 = 0
        for index in 0..<count {
            let base = headerSize + index * entrySize
            let first = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: base, as: UInt64.self))
            let child = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: base + 8, as: UInt64.self))
            guard index == 0 ? first == 0 : first > previous else { throw FormatError("interior first ids do not ascend", at: base) }
            guard child != 0 else { throw FormatError("interior child page id 0", at: base + 8) }
            previous = first
        }
        return count
    }
}
