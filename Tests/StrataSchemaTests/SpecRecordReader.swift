#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataFormat
import StrataSchema

/// A reader of the record encoding written from Docs/FileFormat.md ("Record layer
/// conventions", "Values", "Record encoding") alone, sharing no code with the library's
/// reader, so tests can hold that reader to the spec: the same values, and the same errors
/// (reason and offset) on malformed bytes. Slow and plain on purpose.
struct SpecRecordReader {
    let bytes: [UInt8]
    var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var remaining: Int { bytes.count - position }

    func truncated(_ what: String, needs size: Int) -> FormatError {
        FormatError("truncated: \(what) needs \(size) bytes, \(max(0, remaining)) left", at: position)
    }

    mutating func byte(_ what: String) throws(FormatError) -> UInt8 {
        guard position < bytes.count else { throw truncated(what, needs: 1) }
        position += 1
        return bytes[position - 1]
    }

    mutating func fixed(_ count: Int, _ what: String) throws(FormatError) -> [UInt8] {
        guard remaining >= count else { throw truncated(what, needs: count) }
        position += count
        return Array(bytes[(position - count)..<position])
    }

    mutating func u64(_ what: String) throws(FormatError) -> UInt64 {
        try fixed(8, what).reversed().reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// LEB128, shortest form, at most 64 bits (a 10th byte of 0 or 1).
    mutating func varint(_ what: String) throws(FormatError) -> UInt64 {
        let start = position
        var result: UInt64 = 0
        for index in 0..<10 {
            let next = try byte(what)
            if index == 9 && next > 1 { throw FormatError("\(what): varint overflows 64 bits", at: start) }
            result |= UInt64(next & 0x7F) << UInt64(7 * index)
            if next < 0x80 {
                if next == 0 && index > 0 { throw FormatError("\(what): varint is not in its shortest form", at: start) }
                return result
            }
        }
        throw FormatError("\(what): varint overflows 64 bits", at: start)
    }

    mutating func varint(atMost maximum: Int, _ what: String) throws(FormatError) -> Int {
        let start = position
        let value = try varint(what)
        guard value <= UInt64(max(0, maximum)) else { throw FormatError("\(what) \(value) exceeds the limit \(maximum)", at: start) }
        return Int(value)
    }

    mutating func lengthPrefixed(_ what: String) throws(FormatError) -> [UInt8] {
        try fixed(try varint(atMost: remaining, "length of \(what)"), what)
    }

    /// The payload of a value of `tag` (tags 0 to 10).
    mutating func payload(_ tag: UInt8, _ what: String) throws(FormatError) -> Value {
        switch tag {
        case 0: return .null
        case 1: return .bool(false)
        case 2: return .bool(true)
        case 3:
            let raw = try varint(what)
            return .int(Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1))
        case 4: return .double(Double(bitPattern: try u64(what)))
        case 5:
            let start = position
            guard let text = String(validating: try lengthPrefixed(what), as: UTF8.self) else {
                throw FormatError("\(what) is not valid UTF-8", at: start)
            }
            return .string(text)
        case 6: return .data(try lengthPrefixed(what))
        case 7: return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: try u64(what))))
        case 8:
            let b = try fixed(16, what)
            return .uuid(UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])))
        case 9: return .codable(try lengthPrefixed(what))
        default:
            let countStart = position
            let count = try varint(atMost: remaining, "count of \(what)")
            guard count >= 1 else { throw FormatError("\(what): an empty list of references is stored as absent", at: countStart) }
            var ids: [UInt64] = []
            for _ in 0..<count {
                let start = position
                let id = try varint(what)
                guard id >= 1 else { throw FormatError("\(what): record id 0 is invalid", at: start) }
                guard !ids.contains(id) else { throw FormatError("\(what): record id \(id) is listed twice", at: start) }
                ids.append(id)
            }
            return .references(ids)
        }
    }

    /// Moves past a payload as a field lookup does: lengths and varints read, nothing else checked.
    mutating func skipPayload(_ tag: UInt8, _ what: String) throws(FormatError) {
        switch tag {
        case 0, 1, 2: return
        case 3: _ = try varint(what)
        case 4, 7: _ = try fixed(8, what)
        case 8: _ = try fixed(16, what)
        case 5, 6, 9: _ = try lengthPrefixed(what)
        default:
            let count = try varint(atMost: remaining, "count of \(what)")
            for _ in 0..<count { _ = try varint(what) }
        }
    }

    /// The format byte and field count.
    mutating func header() throws(FormatError) -> (format: UInt8, count: Int) {
        let format = try byte("record format byte")
        guard format != 0 else { throw FormatError("record format byte 0 is invalid", at: 0) }
        guard format <= 3 else { throw FormatError("record format \(format) is newer than 3", at: 0, unsupportedVersion: UInt16(format)) }
        return (format, try varint(atMost: remaining / 2, "record field count"))
    }

    /// A field's id (after `previous`) and tag (1–9, or 10 in format 2).
    mutating func field(after previous: UInt32?, format: UInt8) throws(FormatError) -> (id: UInt32, tag: UInt8) {
        let id = try attributeID(after: previous)
        return (id, try tag(of: id, format: format))
    }

    /// A field's id, greater than `previous`'s.
    mutating func attributeID(after previous: UInt32?) throws(FormatError) -> UInt32 {
        let start = position
        let raw = try varint("attribute id")
        guard let id = UInt32(exactly: raw) else { throw FormatError("attribute id \(raw) exceeds the limit \(UInt32.max)", at: start) }
        if let previous, id <= previous {
            throw FormatError("attribute id \(id) follows \(previous): ids must strictly increase", at: start)
        }
        return id
    }

    /// The tag of the field `id`: 1–9, 10 in formats 2 and 3, 0 (a null field) in format 3.
    mutating func tag(of id: UInt32, format: UInt8) throws(FormatError) -> UInt8 {
        let tagStart = position
        let tag = try byte("type tag of attribute \(id)")
        guard (tag >= 1 && tag <= 9) || (tag == 10 && format >= 2) || (tag == 0 && format == 3) else {
            throw FormatError(tag == 0 ? "attribute \(id) stores a null tag in a record of format \(format); null fields need format 3"
                                       : "unknown value tag \(tag) for attribute \(id)",
                              at: tagStart)
        }
        return tag
    }

    /// Every value of a record, every rule checked.
    static func decode(_ bytes: [UInt8]) -> Result<[UInt32: Value], FormatError> {
        Result { () throws(FormatError) in
            var reader = SpecRecordReader(bytes)
            let (format, count) = try reader.header()
            var values: [UInt32: Value] = [:]
            var previous: UInt32?
            for _ in 0..<count {
                let (id, tag) = try reader.field(after: previous, format: format)
                values[id] = try reader.payload(tag, "value of attribute \(id)")
                previous = id
            }
            guard reader.remaining == 0 else {
                throw FormatError("\(reader.remaining) bytes after the last field of the record", at: reader.position)
            }
            // The lowest format that holds the fields: 3 with a null field, else 2 with references, else 1.
            let nulls = values.values.contains { $0.isNull }
            let references = values.values.contains { if case .references = $0 { true } else { false } }
            let needed: UInt8 = nulls ? 3 : references ? 2 : 1
            guard format == needed else {
                throw FormatError("a record of format \(format) holds " + (format == 3 ? "no null field" : "no references")
                                  + "; it must be written in format \(needed)", at: 0)
            }
            return values
        }
    }

    /// One attribute's value as a field lookup finds it: the fields before it skipped, the
    /// walk ended at the first larger id; `.null` when absent (or a null field).
    static func lookUp(_ attributeID: UInt32, in bytes: [UInt8]) -> Result<Value, FormatError> {
        Result { () throws(FormatError) in
            var reader = SpecRecordReader(bytes)
            let (format, count) = try reader.header()
            var previous: UInt32?
            for _ in 0..<count {
                let id = try reader.attributeID(after: previous)
                if id > attributeID { return .null }
                let tag = try reader.tag(of: id, format: format)
                if id == attributeID { return try reader.payload(tag, "value of attribute \(id)") }
                try reader.skipPayload(tag, "value of attribute \(id)")
                previous = id
            }
            return .null
        }
    }
}
