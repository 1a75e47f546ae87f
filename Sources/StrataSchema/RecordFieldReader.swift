import FoundationEssentials
import StrataFormat

/// Reads the fields of one ``RecordCodec`` record straight from its buffer: the hot path of
/// `RecordCodec.decodeFields`. It reads exactly what `ByteReader` with the varint helpers of
/// ByteCoding+Varint.swift and `Value.read` would, and throws the same `FormatError`s (same
/// reasons, same offsets); it exists because those generic reads were not specialized across
/// the module boundary, and their type metadata lookups were a fifth of decoding time.
///
/// The buffer must stay valid while the reader is used. Never traps on malformed input.
struct RecordFieldReader {
    let base: UnsafeRawBufferPointer
    private(set) var position = 0
    /// The record's format byte, once the header was read.
    private(set) var format: UInt8 = 0

    init(_ buffer: UnsafeRawBufferPointer) { base = buffer }

    var remaining: Int { base.count - position }

    private func truncated(_ what: String, needs size: Int) -> FormatError {
        FormatError("truncated: \(what) needs \(size) bytes, \(max(0, remaining)) left", at: position)
    }

    @inline(__always)
    mutating func readByte(_ what: @autoclosure () -> String) throws(FormatError) -> UInt8 {
        guard position < base.count else { throw truncated(what(), needs: 1) }
        defer { position += 1 }
        return base[position]
    }

    mutating func readUInt64(_ what: @autoclosure () -> String) throws(FormatError) -> UInt64 {
        guard remaining >= 8 else { throw truncated(what(), needs: 8) }
        defer { position += 8 }
        return UInt64(littleEndian: base.loadUnaligned(fromByteOffset: position, as: UInt64.self))
    }

    /// As `ByteReader.readVarint(_:)`.
    @inline(__always)
    mutating func readVarint(_ what: @autoclosure () -> String) throws(FormatError) -> UInt64 {
        // One byte, the common case.
        if position < base.count, base[position] < 0x80 {
            defer { position += 1 }
            return UInt64(base[position])
        }
        return try readLongVarint(what())
    }

    private mutating func readLongVarint(_ what: @autoclosure () -> String) throws(FormatError) -> UInt64 {
        let start = position
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = try readByte(what())
            if shift == 63 && byte > 1 { throw FormatError("\(what()): varint overflows 64 bits", at: start) }
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 {
                if byte == 0 && shift > 0 { throw FormatError("\(what()): varint is not in its shortest form", at: start) }
                return result
            }
            shift += 7
        }
    }

    /// As `ByteReader.readVarint(atMost:_:)`.
    mutating func readVarint(atMost maximum: Int, _ what: @autoclosure () -> String) throws(FormatError) -> Int {
        let start = position
        let value = try readVarint(what())
        guard value <= UInt64(max(0, maximum)) else { throw FormatError("\(what()) \(value) exceeds the limit \(maximum)", at: start) }
        return Int(value)
    }

    /// The bytes of a length-prefixed payload, as `ByteReader.readLengthPrefixed`, without copying them.
    mutating func readLengthPrefixedSlice(_ what: @autoclosure () -> String) throws(FormatError) -> UnsafeRawBufferPointer {
        // The limit is the bytes left *before* the length, as in `ByteReader`: a length one
        // too large passes it and must fail here, as `readBytes` fails.
        let count = try readVarint(atMost: remaining, "length of \(what())")
        guard remaining >= count else { throw truncated(what(), needs: count) }
        defer { position += count }
        return UnsafeRawBufferPointer(rebasing: base[position..<(position + count)])
    }

    /// As `RecordCodec.readHeader`: the format byte and the field count.
    mutating func readHeader() throws(FormatError) -> Int {
        format = try readByte("record format byte")
        guard format != 0 else { throw FormatError("record format byte 0 is invalid", at: 0) }
        guard format <= RecordCodec.formatVersion else {
            throw FormatError("record format \(format) is newer than \(RecordCodec.formatVersion)", at: 0, unsupportedVersion: UInt16(format))
        }
        return try readVarint(atMost: remaining / 2, "record field count")
    }

    /// As `RecordCodec.readAttributeID`.
    mutating func readAttributeID(after previous: UInt32?) throws(FormatError) -> UInt32 {
        let start = position
        let raw = try readVarint("attribute id")
        guard let id = UInt32(exactly: raw) else { throw FormatError("attribute id \(raw) exceeds the limit \(UInt32.max)", at: start) }
        if let previous, id <= previous {
            throw FormatError("attribute id \(id) follows \(previous): ids must strictly increase", at: start)
        }
        return id
    }

    /// As `RecordCodec.readFieldValue`: a tag (never null) and its payload.
    mutating func readFieldValue(id: UInt32) throws(FormatError) -> Value {
        let start = position
        let raw = try readByte("type tag of attribute \(id)")
        guard let tag = ValueTag(rawValue: raw), tag != .null, tag != .references || format >= RecordCodec.referencesFormat else {
            throw FormatError(raw == 0 ? "attribute \(id) stores a null tag; nulls are omitted"
                                       : "unknown value tag \(raw) for attribute \(id)", at: start)
        }
        switch tag {
        case .null: return .null
        case .false: return .bool(false)
        case .true: return .bool(true)
        case .int:
            let raw = try readVarint("value of attribute \(id)")
            return .int(Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1))
        case .double: return .double(Double(bitPattern: try readUInt64("value of attribute \(id)")))
        case .date:
            return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: try readUInt64("value of attribute \(id)"))))
        case .string:
            let start = position
            let bytes = try readLengthPrefixedSlice("value of attribute \(id)").bindMemory(to: UInt8.self)
            // ASCII is valid UTF-8 as it is; `String(validating:)` costs a generic metadata lookup.
            if Self.isASCII(bytes) { return .string(String(decoding: bytes, as: UTF8.self)) }
            guard let string = String(validating: bytes, as: UTF8.self) else {
                throw FormatError("value of attribute \(id) is not valid UTF-8", at: start)
            }
            return .string(string)
        case .data: return .data([UInt8](try readLengthPrefixedSlice("value of attribute \(id)")))
        case .codable: return .codable([UInt8](try readLengthPrefixedSlice("value of attribute \(id)")))
        case .uuid:
            guard remaining >= 16 else { throw truncated("value of attribute \(id)", needs: 16) }
            var uuid = UUID().uuid
            withUnsafeMutableBytes(of: &uuid) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: base[position..<(position + 16)])) }
            position += 16
            return .uuid(UUID(uuid: uuid))
        case .references: return .references(try readReferences("value of attribute \(id)"))
        }
    }

    /// As `Value.readReferences`: a count from 1 to the bytes left, then distinct ids ≥ 1.
    private mutating func readReferences(_ what: String) throws(FormatError) -> [UInt64] {
        let countStart = position
        let count = try readVarint(atMost: remaining, "count of \(what)")
        guard count >= 1 else { throw FormatError("\(what): an empty list of references is stored as absent", at: countStart) }
        var ids: [UInt64] = []
        ids.reserveCapacity(count)
        var seen = Set<UInt64>(minimumCapacity: count)
        for _ in 0..<count {
            let start = position
            let id = try readVarint(what)
            guard id >= 1 else { throw FormatError("\(what): record id 0 is invalid", at: start) }
            guard seen.insert(id).inserted else { throw FormatError("\(what): record id \(id) is listed twice", at: start) }
            ids.append(id)
        }
        return ids
    }

    /// Whether every byte is below 0x80, eight at a time.
    private static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let raw = UnsafeRawBufferPointer(bytes)
        var index = 0
        while index + 8 <= raw.count {
            if raw.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { return false }
            index += 8
        }
        while index < raw.count {
            if raw[index] >= 0x80 { return false }
            index += 1
        }
        return true
    }
}
