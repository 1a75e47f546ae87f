import StrataFormat

// Variable-length integers and length-prefixed bytes of the general byte reader and writer,
// used by the schema catalog, the checksum's canonical form and the history journal
// (Docs/FileFormat.md, "Record layer conventions"). They are the record layer's one
// implementation: reads go through `RecordFieldReader`, appends through `RecordByteSink`.

extension ByteWriter: RecordByteSink {}

extension ByteReader {
    /// Runs `body` on a `RecordFieldReader` at this reader's position, then moves this reader
    /// to where that one stopped (also when it throws: past the bytes it read).
    @inline(__always)
    private mutating func reading<T>(_ body: (inout RecordFieldReader) throws(FormatError) -> T) throws(FormatError) -> T {
        var reader = RecordFieldReader(buffer, position: position)
        defer { advance(to: reader.position) }
        return try body(&reader)
    }

    /// Reads an unsigned LEB128 varint (`RecordFieldReader.readVarint`).
    ///
    /// - Throws: `FormatError` when the bytes end inside it, when it is longer than 10 bytes
    ///   or overflows 64 bits, or when it is not in its shortest form (a final byte of 0 after
    ///   another byte), so every number has exactly one encoding.
    package mutating func readVarint(_ what: @autoclosure () -> String) throws -> UInt64 {
        try reading { (reader) throws(FormatError) in try reader.readVarint(what()) }
    }

    /// Reads a zigzag varint written by `appendZigZag`.
    package mutating func readZigZag(_ what: @autoclosure () -> String) throws -> Int64 {
        try reading { (reader) throws(FormatError) in try reader.readZigZag(what()) }
    }

    /// Reads a varint and checks it against `maximum` before any use as a size or index.
    ///
    /// - Throws: `FormatError` when the varint is invalid or larger than `maximum`.
    package mutating func readVarint(atMost maximum: Int, _ what: @autoclosure () -> String) throws -> Int {
        try reading { (reader) throws(FormatError) in try reader.readVarint(atMost: maximum, what()) }
    }

    /// Reads a varint length, then that many bytes; the length is checked against the bytes
    /// left before anything is allocated.
    package mutating func readLengthPrefixed(_ what: @autoclosure () -> String) throws -> [UInt8] {
        try reading { (reader) throws(FormatError) in [UInt8](try reader.readLengthPrefixedSlice(what())) }
    }

    /// Reads a length-prefixed string that must be valid UTF-8 (never repaired).
    package mutating func readString(_ what: @autoclosure () -> String) throws -> String {
        try reading { (reader) throws(FormatError) in try reader.readString(what()) }
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
