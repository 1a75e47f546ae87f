#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A record's bytes in memory of their own that the `Data` values decoded from them may share
/// instead of copying: a large record (an overflowed one, assembled from its chunks) read
/// once. While `SharedRecordBytes.current` is bound to it — around the call that decodes the
/// record — a data attribute of `sharedPayloadMinimum` bytes or more in it is decoded as a
/// `Data` over these bytes, which then live as long as that `Data` (or any other) does. A
/// 200 MB value read back then costs its own size once, not twice.
///
/// Thread-safety: the bytes are written once, before the object is shared, and never
/// changed after (`@unchecked Sendable`); `Data` values over them are read-only views (a
/// mutation copies).
package final class SharedRecordBytes: @unchecked Sendable {
    /// The record's bytes (`count` of the allocation's bytes are written).
    private var storage: UnsafeMutableRawBufferPointer
    /// How many bytes are written.
    package private(set) var count = 0

    /// The record being decoded on this task or thread, whose large data values may be shared.
    @TaskLocal package static var current: SharedRecordBytes?

    /// Data attributes shorter than this are copied (sharing would keep the whole record alive
    /// for a small value).
    package static let sharedPayloadMinimum = 64 << 10

    /// Room for `capacity` bytes, none written yet.
    package init(capacity: Int) {
        storage = .allocate(byteCount: max(capacity, 1), alignment: 16)
    }

    deinit { storage.deallocate() }

    /// The bytes written so far.
    package var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: storage[0..<count]) }

    /// Appends `part`, moving the bytes to a larger allocation if it does not fit (as an
    /// array grows: only when the capacity given was too small). Only while the record is
    /// assembled, before anything shares its bytes.
    package func append(_ part: UnsafeRawBufferPointer) {
        if part.count > storage.count - count {
            let larger = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count + part.count, 2 * storage.count), alignment: 16)
            larger.baseAddress!.copyMemory(from: storage.baseAddress!, byteCount: count)
            storage.deallocate()
            storage = larger
        }
        if let source = part.baseAddress, part.count > 0 { (storage.baseAddress! + count).copyMemory(from: source, byteCount: part.count) }
        count += part.count
    }

    /// `payload` as a `Data`: sharing these bytes when `payload` lies in the record bound to
    /// `current` and is large enough, else a copy.
    package static func data(_ payload: UnsafeRawBufferPointer) -> Data {
        guard payload.count >= sharedPayloadMinimum, let shared = current, let start = payload.baseAddress,
              let base = shared.storage.baseAddress, start >= base, start + payload.count <= base + shared.count else {
            return Data(payload)
        }
        return Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: start), count: payload.count,
                    deallocator: .custom { _, _ in withExtendedLifetime(shared) {} })
    }
}
