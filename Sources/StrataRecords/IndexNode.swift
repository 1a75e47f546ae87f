import StrataFormat
import StrataSchema

/// A node of an index tree (Docs/FileFormat.md, "Index trees"): sorted byte-string entries
/// (a leaf) or children with the lowest entry each covers (an interior node).
///
/// ```
/// index-leaf     := kind:u8 = 3  version:u8 = 1  count:u16  reserved:u32
///                   (end:u16){count}  keys
/// index-interior := kind:u8 = 4  version:u8 = 1  count:u16  reserved:u32
///                   (child:u64){count}  (end:u16){count}  keys
/// ```
///
/// Key i is `keys[end(i−1) ..< end(i)]`. Leaf keys are index entries (9 to
/// `maximumKeyLength` bytes), strictly ascending. Interior key i is the lowest entry child i
/// holds; key 0 is empty (the child covers everything below key 1), the others strictly ascend.
struct IndexNode: Equatable, Sendable {
    static let headerSize = 8
    /// The longest entry: a stored value key and an 8-byte record id.
    static let maximumKeyLength = IndexKey.maximumStoredLength + 8
    /// Key ends are u16: nodes are split long before their keys reach this.
    static let maximumKeyBytes = Int(UInt16.max)

    enum Kind: UInt8 {
        case leaf = 3
        case interior = 4
    }

    var kind: Kind
    var keys: [[UInt8]] = []
    /// Child page ids (interior nodes only).
    var children: [UInt64] = []
    private(set) var keyBytes = 0

    init(kind: Kind, keys: [[UInt8]] = [], children: [UInt64] = []) {
        self.kind = kind
        self.keys = keys
        self.children = children
        keyBytes = keys.reduce(0) { $0 + $1.count }
    }

    var isLeaf: Bool { kind == .leaf }
    var count: Int { keys.count }
    var encodedSize: Int { Self.headerSize + count * (isLeaf ? 2 : 10) + keyBytes }

    /// The first index whose key is ≥ `key`, and whether that key equals it.
    func search(_ key: [UInt8]) -> (found: Bool, index: Int) {
        var low = 0, high = keys.count
        while low < high {
            let middle = (low + high) / 2
            if Self.compare(keys[middle], key) < 0 { low = middle + 1 } else { high = middle }
        }
        return (low < keys.count && Self.compare(keys[low], key) == 0, low)
    }

    /// The child whose range holds `key` (interior nodes): the last i with keys[i] ≤ key.
    func childIndex(for key: [UInt8]) -> Int {
        var low = 1, high = keys.count
        while low < high {
            let middle = (low + high) / 2
            if Self.compare(keys[middle], key) <= 0 { low = middle + 1 } else { high = middle }
        }
        return low - 1
    }

    mutating func insert(_ key: [UInt8], child: UInt64? = nil, at index: Int) {
        keys.insert(key, at: index)
        if let child { children.insert(child, at: index) }
        keyBytes += key.count
    }

    mutating func remove(at index: Int) {
        keyBytes -= keys[index].count
        keys.remove(at: index)
        if !isLeaf { children.remove(at: index) }
    }

    /// Interior nodes: makes key 0 empty (after child 0 was removed, the new first child
    /// covers everything below key 1).
    mutating func clearFirstKey() {
        guard let first = keys.first, !first.isEmpty else { return }
        keyBytes -= first.count
        keys[0] = []
    }

    /// Moves entries `at...` (1 ≤ at < count) into a new node and returns it.
    mutating func splitOff(at index: Int) -> IndexNode {
        let right = IndexNode(kind: kind, keys: Array(keys[index...]), children: isLeaf ? [] : Array(children[index...]))
        keys.removeSubrange(index...)
        if !isLeaf { children.removeSubrange(index...) }
        keyBytes -= right.keyBytes
        return right
    }

    /// Splits at the middle by bytes.
    mutating func splitOffHalf() -> IndexNode {
        var index = 1, bytes = keys[0].count
        while index < keys.count - 1 && bytes < keyBytes / 2 {
            bytes += keys[index].count
            index += 1
        }
        return splitOff(at: index)
    }

    func encoded() -> [UInt8] {
        var writer = ByteWriter(capacity: encodedSize)
        writer.append(kind.rawValue)
        writer.append(UInt8(1))
        writer.append(UInt16(count))
        writer.append(UInt32(0))
        for child in children { writer.append(child) }
        var end = 0
        for key in keys {
            end += key.count
            writer.append(UInt16(end))
        }
        for key in keys { writer.append(bytes: key) }
        return writer.bytes
    }

    /// Decodes and checks a node (kind, version, sizes, key lengths, ascending keys, child ids).
    /// - Throws: `FormatError` naming the offset of the first invalid byte.
    static func decode(_ bytes: [UInt8]) throws -> IndexNode {
        try bytes.withUnsafeBytes { raw in
            guard raw.count >= headerSize, let kind = Kind(rawValue: raw[0]) else { throw FormatError("not an index tree node", at: 0) }
            guard raw[1] == 1 else { throw FormatError("index node version \(raw[1]) is not supported", at: 1) }
            let count = Int(UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: 2, as: UInt16.self)))
            guard raw.loadUnaligned(fromByteOffset: 4, as: UInt32.self) == 0 else { throw FormatError("reserved index node field is not zero", at: 4) }
            let childBytes = kind == .leaf ? 0 : 8 * count
            let keysStart = headerSize + childBytes + 2 * count
            guard count >= 1, keysStart <= raw.count, raw.count - keysStart <= maximumKeyBytes else {
                throw FormatError("index node of \(count) keys has \(raw.count) bytes", at: 2)
            }
            var node = IndexNode(kind: kind)
            node.keys.reserveCapacity(count)
            var start = 0
            for index in 0..<count {
                let at = headerSize + childBytes + 2 * index
                let end = Int(UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: at, as: UInt16.self)))
                guard end >= start, keysStart + end <= raw.count else { throw FormatError("index key end \(end) out of bounds", at: at) }
                let key = Array(raw[(keysStart + start)..<(keysStart + end)])
                let emptyFirst = kind == .interior && index == 0
                guard emptyFirst ? key.isEmpty : (9...maximumKeyLength).contains(key.count) else {
                    throw FormatError("index key \(index) has \(key.count) bytes", at: at)
                }
                if let previous = node.keys.last, index > 0, compare(previous, key) >= 0 {
                    throw FormatError("index keys do not ascend", at: at)
                }
                if kind == .interior {
                    let child = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: headerSize + 8 * index, as: UInt64.self))
                    guard child != 0 else { throw FormatError("index child page id 0", at: headerSize + 8 * index) }
                    node.children.append(child)
                }
                node.keys.append(key)
                start = end
            }
            guard keysStart + start == raw.count else { throw FormatError("index node has \(raw.count - keysStart - start) bytes after its last key", at: keysStart + start) }
            node.keyBytes = start
            return node
        }
    }

    /// Byte-wise comparison: negative, zero or positive; a proper prefix sorts first.
    @inline(__always)
    static func compare(_ a: [UInt8], _ b: [UInt8]) -> Int {
        a.withUnsafeBufferPointer { x in
            b.withUnsafeBufferPointer { y in
                let shared = min(x.count, y.count)
                var index = 0
                while index < shared {
                    if x[index] != y[index] { return x[index] < y[index] ? -1 : 1 }
                    index += 1
                }
                return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
            }
        }
    }
}

/// An index node read from the log, verified and decoded once, shared by every reader.
final class CachedIndexNode: CachedPage {
    let node: IndexNode
    let byteCount: Int

    init(pageID: UInt64, bytes: [UInt8]) throws {
        do { node = try IndexNode.decode(bytes) } catch let error as FormatError {
            throw RecordTreeError.corruptNode(pageID: pageID, reason: error.reason)
        }
        byteCount = bytes.count
    }

    static func cast(_ page: any CachedPage) -> CachedIndexNode? { page as? CachedIndexNode }
}
