import Synchronization

#if !STRATA_TSAN
/// The mutex every module of Strata locks with: `Synchronization.Mutex`, except in
/// ThreadSanitizer builds, where it is `TSanMutex` (below). Declared once, here, in the lowest
/// layer every module that locks depends on; code writes `Lock`, never `Mutex`
/// (`Scripts/check-platform.sh` checks it), so no module can lock with a mutex the
/// ThreadSanitizer builds do not swap.
package typealias Lock<Value> = Mutex<Value>
#else
/// The mutex every module of Strata locks with: in ThreadSanitizer builds, `TSanMutex`.
package typealias Lock<Value> = TSanMutex<Value>

/// Only in ThreadSanitizer builds (`-D STRATA_TSAN`, `make test-sanitizers`): a pthread mutex,
/// which ThreadSanitizer intercepts, that stands in for `Synchronization.Mutex`. On Linux the
/// latter takes a contended lock with a PI futex in uninstrumented code
/// (libswiftSynchronization's `_lockSlow` / `_unlockSlow`), so ThreadSanitizer misses that
/// happens-before edge and reports every access to state a contended `Mutex` protects as a race
/// (Docs/Testing.md, "Sanitizers in CI"). Regular builds never compile it. Same interface as
/// the uses of `Lock` need: `init(_:)` and `withLock(_:)`.
package final class TSanMutex<Value>: @unchecked Sendable {
    /// Outside the object, so the accesses ThreadSanitizer checks are the value's own (a
    /// stored `Void` property shared its address with the object's other fields).
    private let storage: UnsafeMutablePointer<Value>
    private let mutex = Platform.ThreadMutex()

    package init(_ value: Value) {
        storage = .allocate(capacity: 1)
        storage.initialize(to: value)
    }

    deinit {
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        mutex.lock()
        defer { mutex.unlock() }
        return try body(&storage.pointee)
    }
}
#endif
