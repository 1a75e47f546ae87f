import StrataFormat
import StrataIO

/// Reads consecutive frames of one segment file through a read-ahead window, verifying
/// each. It stops at the first frame that is not valid; it never trusts a length it has not
/// bounded by the file size.
struct FrameScanner {
    enum Step {
        /// A valid frame (checksum verified); `stored` is its payload as stored.
        case frame(header: FrameHeader, stored: [UInt8], offset: UInt64)
        /// No valid frame at `offset`; `reason` says why.
        case end(offset: UInt64, reason: String)
    }

    static let window = 1 << 20
    let file: any StorageFile
    let size: UInt64
    private(set) var offset: UInt64
    private var buffer: [UInt8] = []
    private var bufferStart: UInt64 = 0

    init(file: any StorageFile, start: UInt64, size: UInt64) {
        self.file = file
        self.offset = start
        self.size = size
    }

    /// Bytes `[at, at + count)` of the file, from the window when possible.
    mutating func bytes(at position: UInt64, count: Int) throws -> [UInt8] {
        let end = position + UInt64(count)
        if position >= bufferStart && end <= bufferStart + UInt64(buffer.count) {
            let start = Int(position - bufferStart)
            return Array(buffer[start..<(start + count)])
        }
        if count > Self.window {
            return try read(count: count, at: position)
        }
        bufferStart = position
        buffer = try read(count: Int(min(UInt64(Self.window), size - position)), at: position)
        guard buffer.count >= count else { return Array(buffer) }
        return Array(buffer[0..<count])
    }

    /// Whether every byte from `start` to the end of the file is zero: zeros a writer wrote
    /// ahead of the log (Architecture.md, invariant 35), not a torn write.
    func isZero(from start: UInt64) throws -> Bool {
        var position = start
        while position < size {
            let piece = try read(count: Int(min(UInt64(Self.window), size - position)), at: position)
            guard !piece.isEmpty, piece.allSatisfy({ $0 == 0 }) else { return false }
            position += UInt64(piece.count)
        }
        return true
    }

    private func read(count: Int, at position: UInt64) throws -> [UInt8] {
        do { return try file.read(count: count, at: position) } catch let error as IOError { throw PageLogError.io(error) }
    }

    /// The next frame, or where and why the valid frames end. Advances past a valid frame.
    mutating func next() throws -> Step {
        guard offset + UInt64(FrameHeader.size) <= size else {
            return .end(offset: offset, reason: offset == size ? "end of file" : "partial frame header at end of file")
        }
        let headerBytes = try bytes(at: offset, count: FrameHeader.size)
        guard headerBytes.count == FrameHeader.size else { return .end(offset: offset, reason: "file shorter than its size") }
        let header: FrameHeader
        do {
            header = try headerBytes.withUnsafeBytes { try FrameHeader.decode($0) }
        } catch let error as FormatError {
            if let version = error.unsupportedVersion {
                // A newer library appended here: never cut its frames off as a torn tail.
                throw PageLogError.unsupportedFormatVersion(file: file.path, found: version, supported: currentFormatVersion)
            }
            return .end(offset: offset, reason: error.reason)
        }
        let length = UInt64(header.frameLength)
        guard offset + length <= size else {
            return .end(offset: offset, reason: "frame of \(length) bytes runs past the end of the file")
        }
        let stored = try bytes(at: offset + UInt64(FrameHeader.size), count: Int(header.storedLength))
        guard stored.count == Int(header.storedLength) else { return .end(offset: offset, reason: "file shorter than its size") }
        let valid = headerBytes.withUnsafeBytes { headerRaw in
            stored.withUnsafeBytes { FrameCodec.isIntact(header, headerBytes: headerRaw, stored: $0) }
        }
        guard valid else { return .end(offset: offset, reason: "frame checksum mismatch") }
        defer { offset += length }
        return .frame(header: header, stored: stored, offset: offset)
    }

    /// Looks at every aligned offset after `start` for a valid commit frame whose durable
    /// position is past `position`: proof that the bytes at `position` had been synced, so
    /// their damage is corruption rather than a torn write. Returns that frame's offset.
    mutating func findDurabilityProof(after start: UInt64, beyond position: LogPosition, segment: UInt64) throws -> UInt64? {
        var candidate = start + UInt64(FrameHeader.alignment)
        while candidate + UInt64(FrameHeader.size) <= size {
            defer { candidate += UInt64(FrameHeader.alignment) }
            let magic = try bytes(at: candidate, count: 4)
            guard magic == [0x53, 0x46, 0x52, 0x4D] else { continue }
            offset = candidate
            guard case .frame(let header, let stored, _)? = try? next(), header.kind == .commit, header.codec == .none,
                  let record = try? CommitRecord.decode(stored) else { continue }
            if LogPosition(segment: record.durableSegment, offset: record.durableOffset) > position {
                return candidate
            }
        }
        return nil
    }
}
