#if STRATA_TSAN
import StrataIO

/// Only in ThreadSanitizer builds: this module's `Mutex` is the pthread mutex
/// ThreadSanitizer sees, shadowing `Synchronization.Mutex` (Sources/StrataIO/TSanMutex.swift says why).
/// `package` because `PageLog.backgroundError` is a `package` property of this type.
package typealias Mutex<Value> = TSanMutex<Value>
#endif
