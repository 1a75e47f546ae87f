import StrataFormat

// Variable-length integers and length-prefixed bytes, shared by the record encoding, the
// schema catalog and the checksum's canonical form. Docs/FileFormat.md, "Record layer conventions".

extension ByteWriter {
    /// Appends `value` as an unsigned LEB128 varint: 7 bits per byte, least significant
    /// first, high bit set on every byte but the last; 1 to 10 bytes, always the shortest form.
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
    package mutating func appendZigZag(_ value: Int64) {
        appendVarint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    /// Appends a varint byte count, then the bytes.
    package mutating func appendLengthPrefixed(_ other: some Collection<UInt8>) {
        appendVarint(UInt64(other.count))
        append(bytes: other)
    }
}

extension ByteReader {
    /// Reads an unsigned LEB128 varint written by `appendVarint`.
    ///
    /// - Throws: `FormatError` when the bytes end inside it, when it is longer than 10 bytes
    ///   or overflows 64 bits, or when it is not in its shortest form (a final byte of 0 after
    ///   another byte), so every number has exactly one encoding.
    package mutating func readVarint(_ what: @autoclosure () -> String) throws -> UInt64 {
        let start = position
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = try read(UInt8.self, what())
            if shift == 63 && byte > 1 {
                throw FormatError("\(what()): varint overflows 64 bits", at: start)
            }
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 {
                if byte == 0 && shift > 0 { throw FormatError("\(what()): varint is not in its shortest form", at: start) }
                return result
            }
            shift += 7
        }
    }

    /// Reads a zigzag varint written by `appendZigZag`.
    package mutating func readZigZag(_ what: @autoclosure () -> String) throws -> Int64 {
        let raw = try readVarint(what())
        return Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
    }

    /// Reads a varint and checks it against `maximum` before any use as a size or index.
    ///
    /// - Throws: `FormatError` when the varint is invalid or larger than `maximum`.
    package mutating func readVarint(atMost maximum: Int, _ what: @autoclosure () -> String) throws -> Int {
        let start = position
        let value = try readVarint(what())
        guard value <= UInt64(max(0, maximum)) else {
            throw FormatError("\(what()) \(value) exceeds the limit \(maximum)", at: start)
        }
        return Int(value)
    }

    /// Reads a varint length, then that many bytes; the length is checked against the bytes
    /// left before anything is allocated.
    package mutating func readLengthPrefixed(_ what: @autoclosure () -> String) throws -> [UInt8] {
        let count = try readVarint(atMost: remaining, "length of \(what())")
        return try readBytes(count, what())
    }

    /// Reads a length-prefixed string that must be valid UTF-8 (never repaired).
    package mutating func readString(_ what: @autoclosure () -> String) throws -> String {
        let start = position
        let bytes = try readLengthPrefixed(what())
        guard let string = String(validating: bytes, as: UTF8.self) else {
            throw FormatError("\(what()) is not valid UTF-8", at: start)
        }
        return string
    }
}

/// Runs a decoder written against `ByteReader` (whose reads throw untyped errors) and
/// reports its failure as the `FormatError` it is.
package func decodingFormat<T>(_ body: () throws -> T) throws(FormatError) -> T {
    do {
        return try body()
    } catch let error as FormatError {
        throw error
    } catch {
        throw FormatError("unexpected decoding failure: \(error)")
    }
}
