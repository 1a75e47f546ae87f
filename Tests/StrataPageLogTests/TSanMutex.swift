#if STRATA_TSAN
import Glibc

/// Only in ThreadSanitizer builds (`-D STRATA_TSAN`): the tests' own `Mutex`, a pthread mutex
/// ThreadSanitizer sees, as in the library (Sources/StrataIO/TSanMutex.swift says why).
final class Mutex<Value>: @unchecked Sendable {
    /// Outside the object, so the accesses ThreadSanitizer checks are the value's own (a
    /// stored `Void` property shared its address with the object's other fields).
    private let storage: UnsafeMutablePointer<Value>
    private let lock: UnsafeMutablePointer<pthread_mutex_t>

    init(_ value: Value) {
        storage = .allocate(capacity: 1)
        storage.initialize(to: value)
        lock = .allocate(capacity: 1)
        pthread_mutex_init(lock, nil)
    }

    deinit {
        pthread_mutex_destroy(lock)
        lock.deallocate()
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        return try body(&storage.pointee)
    }
}
#endif
