import CStrataChecksum

/// CRC32C (Castagnoli), hardware-accelerated where the CPU allows.
/// Docs/FileFormat.md, "Checksums".
package enum CRC32C {
    /// The CRC32C of `bytes`, continuing from `seed` (the result of a previous call, or 0).
    @inlinable
    package static func checksum(_ bytes: UnsafeRawBufferPointer, seed: UInt32 = 0) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return seed }
        return strata_crc32c(seed, base, bytes.count)
    }

    /// The CRC32C of a byte array.
    package static func checksum(_ bytes: [UInt8], seed: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0, seed: seed) }
    }

    /// The portable implementation, for tests comparing the two paths.
    package static func portableChecksum(_ bytes: [UInt8], seed: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress, raw.count > 0 else { return seed }
            return strata_crc32c_portable(seed, base, raw.count)
        }
    }

    /// Whether the hardware instruction is used on this machine.
    package static var isHardwareAccelerated: Bool { strata_crc32c_is_hardware() != 0 }
}

/// Hints to the CPU about memory about to be read.
package enum MemoryHint {
    /// Starts loading the cache lines of `bytes` (at most the first 16 KiB) without waiting
    /// for them: a hint, with no effect on results (nor a fault, for a mapped page that is not
    /// resident). For bytes about to be read that are probably not cached — a frame found at
    /// a random place, before its checksum — so reading them waits for one memory round trip
    /// instead of one per line.
    @inlinable
    package static func prefetch(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        strata_prefetch(base, bytes.count)
    }
}
