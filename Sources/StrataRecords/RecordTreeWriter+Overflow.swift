import StrataPageLog

/// Records too large for a leaf (`RecordTreeOptions.maximumInlineRecord`) are written as
/// overflow chunks (`overflowChunkSize` bytes each, the last shorter), and the leaf keeps an
/// `OverflowReference`. A large value is written from the bytes it is given — one array, one
/// encoding session's memory, or pieces around a payload still in the caller's value — and is
/// never copied whole on its way to the log.
extension RecordTreeWriter {
    /// Inserts a new record given as consecutive pieces (an encoding session's header and
    /// fields around a large payload still in the caller's value): as `insert(_:raw:)`, the
    /// overflow chunks written from the pieces — a chunk within one piece straight from it, one
    /// spanning pieces gathered first — so the record is never assembled whole. A record that
    /// fits in a leaf, or a tree with indexes, gets it assembled.
    package func insert(_ id: UInt64, pieces: [UnsafeRawBufferPointer]) throws {
        let count = pieces.reduce(0) { $0 + $1.count }
        guard indexes == nil, count > options.maximumInlineRecord else {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(count)
            for piece in pieces { bytes.append(contentsOf: piece.assumingMemoryBound(to: UInt8.self)) }
            return try bytes.withUnsafeBytes { try insert(id, raw: $0) }
        }
        try journal?.recordInsert(entityID: entityID, id: id)  // as `insert(_:raw:)`
        _ = try overflowReference(writing: pieces, count: count).withUnsafeBytes {
            try place(id, stored: $0, overflow: true, mustExist: false, mustNotExist: true)
        }
    }

    /// Writes the record whose `count` bytes are `pieces`, one after another, as overflow
    /// chunks and returns the reference the leaf keeps. A chunk within one piece is written
    /// straight from it; one spanning pieces is gathered into a buffer first: the record is
    /// never copied whole.
    func overflowReference(writing pieces: [UnsafeRawBufferPointer], count: Int) throws -> [UInt8] {
        var chunks: [UInt64] = []
        var gathered: UnsafeMutableRawBufferPointer?
        defer { gathered?.deallocate() }
        var piece = 0, offset = 0  // where the next chunk starts: in `pieces[piece]`, at `offset`
        var start = 0
        while start < count {
            let length = min(count - start, options.overflowChunkSize)
            while offset == pieces[piece].count { piece += 1; offset = 0 }
            let chunk: UnsafeRawBufferPointer
            if pieces[piece].count - offset >= length {
                chunk = UnsafeRawBufferPointer(rebasing: pieces[piece][offset..<(offset + length)])
                offset += length
            } else {
                let buffer = gathered ?? .allocate(byteCount: options.overflowChunkSize, alignment: 8)
                gathered = buffer
                var filled = 0
                while filled < length {
                    while offset == pieces[piece].count { piece += 1; offset = 0 }
                    let take = min(length - filled, pieces[piece].count - offset)
                    (buffer.baseAddress! + filled).copyMemory(from: pieces[piece].baseAddress! + offset, byteCount: take)
                    filled += take
                    offset += take
                }
                chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<length])
            }
            let pageID = try transaction.allocatePageID()
            try transaction.write(pageID, entityID: entityID, schemaVersion: schemaVersion, bytes: chunk)
            chunks.append(pageID)
            start += length
        }
        return OverflowReference(length: UInt64(count), chunks: chunks).encoded()
    }
}
