#if STRATA_TSAN
import StrataIO

/// Only in ThreadSanitizer builds: this module's `Mutex` is the pthread mutex
/// ThreadSanitizer sees, shadowing `Synchronization.Mutex` (Sources/StrataIO/TSanMutex.swift says why).
typealias Mutex<Value> = TSanMutex<Value>
#endif
