#if STRATA_TSAN

/// Only in ThreadSanitizer builds (`-D STRATA_TSAN`, `make test-sanitizers`): a pthread mutex,
/// which ThreadSanitizer intercepts, that stands in for `Synchronization.Mutex`. On Linux the
/// latter takes a contended lock with a PI futex in uninstrumented code
/// (libswiftSynchronization's `_lockSlow` / `_unlockSlow`), so ThreadSanitizer misses that
/// happens-before edge and reports every access to state a contended `Mutex` protects as a race
/// (Docs/Testing.md, "Sanitizers in CI"). It lives here because StrataIO is the lowest layer
/// and every module that locks depends on it. The `Mutex` alias below shadows
/// `Synchronization.Mutex` in every file that imports both StrataIO and Synchronization (a
/// module's declaration shadows those of the modules it imports), so a file that locks imports
/// StrataIO (`Scripts/check-platform.sh` checks it); regular builds never compile any of it.
/// Same interface as the uses need: `init(_:)` and `withLock(_:)`.
package final class TSanMutex<Value>: @unchecked Sendable {
    /// Outside the object, so the accesses ThreadSanitizer checks are the value's own (a
    /// stored `Void` property shared its address with the object's other fields).
    private let storage: UnsafeMutablePointer<Value>
    private let lock = Platform.ThreadMutex()

    package init(_ value: Value) {
        storage = .allocate(capacity: 1)
        storage.initialize(to: value)
    }

    deinit {
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&storage.pointee)
    }
}

/// `Mutex` in ThreadSanitizer builds, in this module and in every file that imports it (see above).
package typealias Mutex<Value> = TSanMutex<Value>
#endif
