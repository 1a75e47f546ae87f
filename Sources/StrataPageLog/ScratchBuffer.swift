import Synchronization

/// One reusable buffer for a short piece of work — decompressing part of a page for a point
/// lookup — taken by one caller at a time; a caller that finds it taken uses a temporary
/// allocation instead. Saves a heap allocation and its release on most uncached lookups (a
/// 4 KiB temporary allocation is not put on the stack).
package final class ScratchBuffer: @unchecked Sendable {
    /// The largest request served from the buffer; larger ones are temporary.
    package static let largestKept = 64 << 10

    private let inUse = Atomic<Bool>(false)
    /// Touched only by the holder of `inUse` (its acquire and release order the accesses).
    private var storage: UnsafeMutableRawBufferPointer?

    package init() {}

    deinit { storage?.deallocate() }

    /// Calls `body` with `byteCount` bytes of uninitialized memory, valid during the call.
    package func with(byteCount: Int, _ body: (UnsafeMutableRawBufferPointer) throws -> Void) throws {
        guard byteCount <= Self.largestKept,
              inUse.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else {
            return try withUnsafeTemporaryAllocation(byteCount: byteCount, alignment: 8, body)
        }
        defer { inUse.store(false, ordering: .releasing) }
        let buffer: UnsafeMutableRawBufferPointer
        if let storage, storage.count >= byteCount {
            buffer = storage
        } else {
            storage?.deallocate()
            buffer = .allocate(byteCount: max(byteCount, 4096), alignment: 8)
            storage = buffer
        }
        try body(UnsafeMutableRawBufferPointer(rebasing: buffer[0..<byteCount]))
    }
}
