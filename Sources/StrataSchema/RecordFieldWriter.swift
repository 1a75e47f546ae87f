import FoundationEssentials

/// Writes the fields of one ``RecordCodec`` record into a byte array: the hot path of
/// `RecordCodec.encode`. It writes exactly the bytes `ByteWriter` with the varint helpers of
/// ByteCoding+Varint.swift and `Value.append(to:)` would; it exists because those generic
/// appends were not specialized across the module boundary (type metadata lookups per byte).
///
/// Used by one call on one thread.
struct RecordFieldWriter {
    private(set) var bytes: [UInt8] = []

    /// An empty writer.
    init() {}

    /// The bytes written, leaving the writer empty (no copy).
    mutating func takeBytes() -> [UInt8] {
        var taken: [UInt8] = []
        swap(&taken, &bytes)
        return taken
    }

    /// Starts again, writing into `buffer` (emptied, its capacity kept).
    mutating func reset(_ buffer: consuming [UInt8]) {
        bytes = buffer
        bytes.removeAll(keepingCapacity: true)
    }

    /// Makes room for `capacity` bytes in all.
    mutating func reserve(_ capacity: Int) { bytes.reserveCapacity(capacity) }

    /// A writer with room for a record of `fields`, so it grows at most once.
    init(reservingFor fields: [(id: UInt32, value: Value)]) {
        var capacity = 16
        for (_, value) in fields {
            capacity += 16
            switch value {
            case .string(let string): capacity += string.utf8.count
            case .data(let bytes), .codable(let bytes): capacity += bytes.count
            case .references(let ids): capacity += 10 * ids.count
            default: break
            }
        }
        bytes.reserveCapacity(capacity)
    }

    @inline(__always)
    mutating func append(_ byte: UInt8) { bytes.append(byte) }

    /// Bytes already encoded (a field copied from another buffer).
    mutating func append(contentsOf field: ArraySlice<UInt8>) { bytes.append(contentsOf: field) }

    /// Raw bytes (a string's UTF-8).
    @inline(__always)
    mutating func append(contentsOf raw: UnsafeBufferPointer<UInt8>) { bytes.append(contentsOf: raw) }

    /// As `ByteWriter.appendVarint`.
    @inline(__always)
    mutating func appendVarint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    /// Eight bytes, little-endian, as `ByteWriter.append(_: UInt64)`.
    mutating func append(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// As `Value.append(to:)`: the tag, then the payload.
    mutating func append(_ value: Value) {
        bytes.append(value.tag.rawValue)
        switch value {
        case .null, .bool: break
        case .int(let int): appendVarint(UInt64(bitPattern: (int << 1) ^ (int >> 63)))
        case .double(let double): append(double.bitPattern)
        case .string(var string):
            appendVarint(UInt64(string.utf8.count))
            string.withUTF8 { bytes.append(contentsOf: $0) }
        case .data(let payload), .codable(let payload):
            appendVarint(UInt64(payload.count))
            bytes.append(contentsOf: payload)
        case .date(let date): append(date.timeIntervalSinceReferenceDate.bitPattern)
        case .uuid(let uuid): withUnsafeBytes(of: uuid.uuid) { bytes.append(contentsOf: $0) }
        case .references(let ids):
            appendVarint(UInt64(ids.count))
            for id in ids { appendVarint(id) }
        }
    }
}
