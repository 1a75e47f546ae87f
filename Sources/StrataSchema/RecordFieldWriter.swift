#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A record's bytes written into an array (`RecordCodec.encode`, `RecordEncoder.encode`):
/// non-generic, its appends inlined where the encodings of `RecordByteSink` are specialized
/// for it (generic appends across a module boundary cost type metadata lookups per byte).
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
}

/// Where the record layer's encodings are written: an array (`RecordFieldWriter`), memory an
/// encoding state owns (`RecordScratch`), or the general `ByteWriter` (the schema catalog, the
/// checksum's canonical form, the history journal). The one writer of varints, zigzag
/// integers, length-prefixed bytes and values (Docs/FileFormat.md, "Record layer
/// conventions", "Values"): written once, here, and specialized for each sink.
package protocol RecordByteSink {
    /// Appends one byte.
    mutating func append(_ byte: UInt8)
    /// Appends raw bytes.
    mutating func append(contentsOf raw: UnsafeBufferPointer<UInt8>)
}

extension RecordByteSink {
    /// Raw bytes (a data payload, a field copied from another buffer).
    @inline(__always)
    mutating func append(raw: UnsafeRawBufferPointer) { append(contentsOf: raw.assumingMemoryBound(to: UInt8.self)) }

    /// Appends `value` as an unsigned LEB128 varint: 7 bits per byte, least significant
    /// first, high bit set on every byte but the last; 1 to 10 bytes, always the shortest form.
    @inline(__always)
    package mutating func appendVarint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        append(UInt8(rest))
    }

    /// Appends a signed integer zigzag-encoded (0, -1, 1, -2, … → 0, 1, 2, 3, …) as a varint,
    /// so small negative numbers stay short.
    @inline(__always)
    package mutating func appendZigZag(_ value: Int64) {
        appendVarint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    /// Appends a varint byte count, then the bytes.
    package mutating func appendLengthPrefixed(_ bytes: [UInt8]) {
        appendVarint(UInt64(bytes.count))
        bytes.withUnsafeBufferPointer { append(contentsOf: $0) }
    }

    /// Appends a string's UTF-8 byte count, then its UTF-8.
    package mutating func appendLengthPrefixed(_ text: String) {
        appendVarint(UInt64(text.utf8.count))
        appendUTF8(of: text)
    }

    /// A string's UTF-8, with no length.
    @inline(__always)
    private mutating func appendUTF8(of text: String) {
        // A native or small string's UTF-8 in place; a copy (made contiguous) only for others
        // (bridged ones), instead of copying every string to call the mutating `withUTF8`.
        if text.utf8.withContiguousStorageIfAvailable({ append(contentsOf: $0) }) == nil {
            var contiguous = text
            contiguous.withUTF8 { append(contentsOf: $0) }
        }
    }

    /// Eight bytes, little-endian.
    @inline(__always)
    mutating func append(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0.assumingMemoryBound(to: UInt8.self)) }
    }

    /// A text value's tag, length and UTF-8: what `append(.string(text))` writes, without the `Value`.
    @inline(__always)
    mutating func append(string text: String) {
        append(ValueTag.string.rawValue)
        appendVarint(UInt64(text.utf8.count))
        appendUTF8(of: text)
    }

    /// Appends a value (Docs/FileFormat.md, "Values"): the tag, then the payload. The encoding
    /// is canonical: equal values (by `==`, except canonically equivalent but differently
    /// spelled strings) give equal bytes.
    package mutating func append(_ value: Value) {
        switch value {
        case .string(let string):
            append(string: string)
            return
        default: append(value.tag.rawValue)
        }
        switch value {
        case .null, .bool, .string: break
        case .int(let int): appendVarint(UInt64(bitPattern: (int << 1) ^ (int >> 63)))
        case .double(let double): append(double.bitPattern)
        case .data(let payload), .codable(let payload):
            appendVarint(UInt64(payload.count))
            payload.withUnsafeBufferPointer { append(contentsOf: $0) }
        case .date(let date): append(date.timeIntervalSinceReferenceDate.bitPattern)
        case .uuid(let uuid): withUnsafeBytes(of: uuid.uuid) { append(contentsOf: $0.assumingMemoryBound(to: UInt8.self)) }
        case .references(let ids):
            appendVarint(UInt64(ids.count))
            for id in ids { appendVarint(id) }
        }
    }
}

extension RecordFieldWriter: RecordByteSink {}

/// A record's bytes being written into memory its encoding state owns and reuses from record
/// to record: an append checks the room left and stores, with no uniqueness check or
/// reference counting (an array's appends were a fifth of encoding). Freed by its owner
/// (`deallocate()`); copies share the memory, so one owner only.
struct RecordScratch: RecordByteSink {
    private(set) var base: UnsafeMutableRawPointer
    private(set) var count = 0
    private(set) var capacity: Int

    init(capacity: Int) {
        self.capacity = max(capacity, 16)
        base = UnsafeMutableRawPointer.allocate(byteCount: self.capacity, alignment: 8)
    }

    func deallocate() { base.deallocate() }

    /// The bytes written, valid until the next change.
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    /// Forgets the bytes written (the memory stays).
    @inline(__always)
    mutating func removeAll() { count = 0 }

    /// Forgets the bytes written but the first `length`, which become unspecified bytes kept
    /// for a header written later (`overwriting(at:)`); `length` ≤ the capacity.
    @inline(__always)
    mutating func removeAll(keepingRoom length: Int) {
        reserve(length)
        count = length
    }

    /// Makes room for `extra` more bytes.
    @inline(__always)
    mutating func reserve(_ extra: Int) {
        if count + extra > capacity { grow(to: count + extra) }
    }

    private mutating func grow(to needed: Int) {
        var newCapacity = capacity * 2
        while newCapacity < needed { newCapacity *= 2 }
        let newBase = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 8)
        newBase.copyMemory(from: base, byteCount: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    @inline(__always)
    mutating func append(_ byte: UInt8) {
        reserve(1)
        base.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
        count += 1
    }

    @inline(__always)
    mutating func append(contentsOf raw: UnsafeBufferPointer<UInt8>) {
        append(raw: UnsafeRawBufferPointer(raw))
    }

    @inline(__always)
    mutating func append(raw: UnsafeRawBufferPointer) {
        guard let source = raw.baseAddress, raw.count > 0 else { return }
        reserve(raw.count)
        (base + count).copyMemory(from: source, byteCount: raw.count)
        count += raw.count
    }

    /// A sink that writes over bytes already written, from `offset` on (a header written in
    /// the room kept for it); it must not run past them.
    @inline(__always)
    func overwriting(at offset: Int) -> Overwriting { Overwriting(base: base, offset: offset) }

    /// Writes over a scratch's bytes (`overwriting(at:)`).
    struct Overwriting: RecordByteSink {
        let base: UnsafeMutableRawPointer
        var offset: Int

        @inline(__always)
        mutating func append(_ byte: UInt8) {
            base.storeBytes(of: byte, toByteOffset: offset, as: UInt8.self)
            offset += 1
        }

        @inline(__always)
        mutating func append(contentsOf raw: UnsafeBufferPointer<UInt8>) {
            guard let source = raw.baseAddress, !raw.isEmpty else { return }
            (base + offset).copyMemory(from: source, byteCount: raw.count)
            offset += raw.count
        }

        /// Raw bytes, likely few (an encoded value): up to 16 copied by two loads and stores
        /// that may overlap, not by a call.
        @inline(__always)
        mutating func appendShort(_ raw: UnsafeRawBufferPointer) {
            guard let source = raw.baseAddress else { return }
            let count = raw.count, destination = base + offset
            if count >= 8 && count <= 16 {
                destination.storeBytes(of: source.loadUnaligned(as: UInt64.self), as: UInt64.self)
                destination.storeBytes(of: source.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self), toByteOffset: count &- 8, as: UInt64.self)
            } else if count >= 4 && count < 8 {
                destination.storeBytes(of: source.loadUnaligned(as: UInt32.self), as: UInt32.self)
                destination.storeBytes(of: source.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self), toByteOffset: count &- 4, as: UInt32.self)
            } else if count < 4 {
                for index in 0..<count { destination.storeBytes(of: source.load(fromByteOffset: index, as: UInt8.self), toByteOffset: index, as: UInt8.self) }
            } else {
                destination.copyMemory(from: source, byteCount: count)
            }
            offset &+= count
        }
    }

    /// The bytes `appendVarint(value)` writes: 1 to 10.
    static func varintLength(_ value: UInt64) -> Int {
        var length = 1
        var rest = value
        while rest >= 0x80 { length += 1; rest >>= 7 }
        return length
    }

    /// Moves the end back or forward over bytes already reserved (writing a header in place).
    @inline(__always)
    mutating func setCount(_ newCount: Int) {
        precondition(newCount <= capacity)
        count = newCount
    }
}
