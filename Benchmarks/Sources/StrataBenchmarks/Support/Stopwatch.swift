/// Measures elapsed wall-clock time on the monotonic clock.
struct Stopwatch {
    private let start = ContinuousClock.now

    /// Seconds since the stopwatch was created.
    var elapsedSeconds: Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
    }

    /// Runs `body` and returns its result with the seconds it took.
    static func time<T>(_ body: () throws -> T) rethrows -> (value: T, seconds: Double) {
        let stopwatch = Stopwatch()
        let value = try body()
        return (value, stopwatch.elapsedSeconds)
    }
}
