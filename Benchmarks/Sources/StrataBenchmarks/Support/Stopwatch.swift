/// Measures elapsed wall-clock time on the monotonic clock.
struct Stopwatch {
    private let start = ContinuousClock.now

    /// Seconds since the stopwatch was created.
    var elapsedSeconds: Double {
        let elapsed = (ContinuousClock.now - start).components
        // Whole nanoseconds, so the figure prints as a short decimal.
        let nanoseconds = elapsed.seconds * 1_000_000_000 + elapsed.attoseconds / 1_000_000_000
        return Double(nanoseconds) / 1e9
    }

    /// Runs `body` and returns its result with the seconds it took.
    static func time<T>(_ body: () throws -> T) rethrows -> (value: T, seconds: Double) {
        let stopwatch = Stopwatch()
        let value = try body()
        return (value, stopwatch.elapsedSeconds)
    }
}
