import StrataSchema

/// Reassembles an overflowed record from its chunk pages: `read(chunk, append)` passes the
/// chunk's bytes to `append` (valid during the call) and returns false when there is no such
/// page. The record's buffer is allocated once, from the first chunk, and each chunk copied
/// into it once.
enum OverflowReader {
    /// The record as an array (the writer's reads: an update's old record).
    static func assemble(_ reference: OverflowReference,
                         read: (UInt64, (UnsafeRawBufferPointer) throws -> Void) throws -> Bool) throws -> [UInt8] {
        var buffer = ArrayBuffer()
        try assemble(reference, into: &buffer, read: read)
        return buffer.bytes
    }

    /// The record in memory its large data values may share when decoded (`SharedRecordBytes`:
    /// reads, which decode the record and drop it).
    static func assembleShared(_ reference: OverflowReference,
                               read: (UInt64, (UnsafeRawBufferPointer) throws -> Void) throws -> Bool) throws -> SharedRecordBytes {
        var buffer = SharedBuffer()
        try assemble(reference, into: &buffer, read: read)
        return buffer.shared
    }

    /// Appends each chunk's bytes in order to `buffer`, sized from the first, until they pass
    /// the record's length.
    /// - Throws: `RecordTreeError.missingPage` for a missing chunk, `.corruptNode` when the
    ///   chunks hold more or fewer bytes than the reference says.
    private static func assemble<Buffer: AssemblyBuffer>(_ reference: OverflowReference, into buffer: inout Buffer,
                                                         read: (UInt64, (UnsafeRawBufferPointer) throws -> Void) throws -> Bool) throws {
        for (position, chunk) in reference.chunks.enumerated() {
            let present = try read(chunk) { part in
                if position == 0 { buffer.reserve(reservation(for: reference, firstChunk: part.count)) }
                buffer.append(part)
            }
            guard present else { throw RecordTreeError.missingPage(pageID: chunk) }
            guard UInt64(buffer.count) <= reference.length else { break }  // reported below
        }
        guard UInt64(buffer.count) == reference.length else {
            throw RecordTreeError.corruptNode(pageID: reference.chunks.first ?? 0,
                                              reason: "overflow chunks hold \(buffer.count) bytes, the reference says \(reference.length)")
        }
    }

    /// The bytes to reserve for an overflowed record once its first chunk is read: its length,
    /// but no more than its chunks hold if each is as large as the first — the length is a
    /// stored number, not trusted with an allocation before the chunks confirm it.
    static func reservation(for reference: OverflowReference, firstChunk: Int) -> Int {
        Int(min(reference.length, UInt64(firstChunk) * UInt64(reference.chunks.count)))
    }
}

/// Where `OverflowReader` assembles a record.
private protocol AssemblyBuffer {
    /// The bytes appended so far.
    var count: Int { get }
    /// Makes room for `capacity` bytes in all (called once, before the first append).
    mutating func reserve(_ capacity: Int)
    /// Appends `part` (growing past the reservation if need be: a damaged record's chunks).
    mutating func append(_ part: UnsafeRawBufferPointer)
}

/// An array.
private struct ArrayBuffer: AssemblyBuffer {
    var bytes: [UInt8] = []
    var count: Int { bytes.count }
    mutating func reserve(_ capacity: Int) { bytes.reserveCapacity(capacity) }
    mutating func append(_ part: UnsafeRawBufferPointer) { bytes.append(contentsOf: part.assumingMemoryBound(to: UInt8.self)) }
}

/// Memory a record's decoded values may share.
private struct SharedBuffer: AssemblyBuffer {
    var shared = SharedRecordBytes(capacity: 0)
    var count: Int { shared.count }
    mutating func reserve(_ capacity: Int) { shared = SharedRecordBytes(capacity: capacity) }
    mutating func append(_ part: UnsafeRawBufferPointer) { shared.append(part) }
}
