/// Appends little-endian fixed-width integers to a byte array.
package struct ByteWriter {
    // Inlinable, so codecs in other modules specialize it (unspecialized generic calls
    // showed up in profiles as type metadata lookups).
    @usableFromInline
    package internal(set) var bytes: [UInt8]

    @inlinable
    package init(capacity: Int = 64) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    @inlinable
    package mutating func append<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    // The integer types codecs write, as functions of their own: other modules of the package
    // get no serialized body of an `@inlinable package` generic (the compiler does not
    // optimize package declarations across modules), so a call from there would run the
    // unspecialized generic — a type metadata lookup per value.
    package mutating func append(_ value: UInt8) { bytes.append(value) }
    package mutating func append(_ value: UInt16) { appendInteger(value) }
    package mutating func append(_ value: UInt32) { appendInteger(value) }
    package mutating func append(_ value: UInt64) { appendInteger(value) }
    package mutating func append(_ value: Int64) { appendInteger(value) }

    private mutating func appendInteger<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    @inlinable
    package mutating func append(bytes other: some Collection<UInt8>) { bytes.append(contentsOf: other) }

    /// Appends `other` (a concrete overload, for the reason given at `append(_: UInt8)`).
    package mutating func append(bytes other: [UInt8]) { bytes.append(contentsOf: other) }

    /// Appends raw bytes (a concrete overload, for the reason given at `append(_: UInt8)`).
    package mutating func append(raw: UnsafeRawBufferPointer) { bytes.append(contentsOf: raw) }
    /// Appends raw bytes in place (a concrete overload, for the reason given at `append(_: UInt8)`).
    package mutating func append(contentsOf raw: UnsafeBufferPointer<UInt8>) { bytes.append(contentsOf: raw) }

    package mutating func appendZeros(_ count: Int) { bytes.append(contentsOf: repeatElement(0, count: count)) }

    /// Overwrites a little-endian integer at an absolute position already written.
    package mutating func set<T: FixedWidthInteger>(_ value: T, at position: Int) {
        withUnsafeBytes(of: value.littleEndian) { raw in
            for (index, byte) in raw.enumerated() { bytes[position + index] = byte }
        }
    }

    package var count: Int { bytes.count }

    /// Empties the writer, keeping its capacity for what is written next.
    package mutating func removeAll() { bytes.removeAll(keepingCapacity: true) }
}

/// Reads little-endian fixed-width integers from a byte buffer, bounds-checked: reading
/// past the end throws `FormatError`, it never traps.
package struct ByteReader {
    @usableFromInline
    let base: UnsafeRawBufferPointer
    @usableFromInline
    package internal(set) var position: Int

    /// The buffer must stay valid while the reader is used.
    @inlinable
    package init(_ buffer: UnsafeRawBufferPointer, position: Int = 0) {
        base = buffer
        self.position = position
    }

    @inlinable
    package var remaining: Int { base.count - position }

    /// The whole buffer read: with ``advance(to:)``, what lets a reader of an upper layer
    /// (the record layer's value reader) continue from `position` and hand back where it stopped.
    package var buffer: UnsafeRawBufferPointer { base }

    /// Moves on to `newPosition`, which must lie between the current position and the end.
    package mutating func advance(to newPosition: Int) {
        precondition(newPosition >= position && newPosition <= base.count, "a reader moves forward within its buffer")
        position = newPosition
    }

    @inlinable
    package mutating func read<T: FixedWidthInteger>(_: T.Type = T.self, _ what: @autoclosure () -> String) throws -> T {
        try readInteger(what)
    }

    // The integer types codecs read, as functions of their own (see `ByteWriter.append(_: UInt8)`:
    // from another module, the generic `read` runs unspecialized, with a type metadata lookup
    // per value).
    package mutating func read(_: UInt8.Type, _ what: @autoclosure () -> String) throws -> UInt8 { try readInteger(what) }
    package mutating func read(_: UInt16.Type, _ what: @autoclosure () -> String) throws -> UInt16 { try readInteger(what) }
    package mutating func read(_: UInt32.Type, _ what: @autoclosure () -> String) throws -> UInt32 { try readInteger(what) }
    package mutating func read(_: UInt64.Type, _ what: @autoclosure () -> String) throws -> UInt64 { try readInteger(what) }
    package mutating func read(_: Int64.Type, _ what: @autoclosure () -> String) throws -> Int64 { try readInteger(what) }

    @usableFromInline
    mutating func readInteger<T: FixedWidthInteger>(_ what: () -> String) throws -> T {
        let size = MemoryLayout<T>.size
        guard position >= 0, remaining >= size else {
            throw FormatError("truncated: \(what()) needs \(size) bytes, \(max(0, remaining)) left", at: position)
        }
        let value = base.loadUnaligned(fromByteOffset: position, as: T.self)
        position += size
        return T(littleEndian: value)
    }

    @inlinable
    package mutating func readBytes(_ count: Int, _ what: @autoclosure () -> String) throws -> [UInt8] {
        guard count >= 0, remaining >= count else {
            throw FormatError("truncated: \(what()) needs \(count) bytes, \(max(0, remaining)) left", at: position)
        }
        defer { position += count }
        return [UInt8](UnsafeRawBufferPointer(rebasing: base[position..<(position + count)]))
    }

    /// The next `count` bytes, in place (valid while the reader's buffer is).
    package mutating func readRawBytes(_ count: Int, _ what: @autoclosure () -> String) throws -> UnsafeRawBufferPointer {
        guard count >= 0, remaining >= count else {
            throw FormatError("truncated: \(what()) needs \(count) bytes, \(max(0, remaining)) left", at: position)
        }
        defer { position += count }
        return UnsafeRawBufferPointer(rebasing: base[position..<(position + count)])
    }

    @inlinable
    package mutating func skip(_ count: Int, _ what: @autoclosure () -> String) throws {
        guard count >= 0, remaining >= count else {
            throw FormatError("truncated: \(what()) needs \(count) bytes, \(max(0, remaining)) left", at: position)
        }
        position += count
    }
}
