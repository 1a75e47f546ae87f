/// What a part process reported (`PartProcess`): a JSON object, read with accessors that
/// throw, naming the key, when a value is missing or of another type.
struct PartReport {
    /// "WORKLOAD:PART".
    let partName: String
    let json: JSONValue

    /// A number.
    func double(_ key: String) throws -> Double {
        guard let value = json[key]?.doubleValue else { throw missing(key, "a number") }
        return value
    }

    /// A whole number.
    func int(_ key: String) throws -> Int {
        guard let value = json[key]?.int64Value, let int = Int(exactly: value) else { throw missing(key, "a whole number") }
        return int
    }

    /// An unsigned whole number (a byte count, a checksum).
    func uint64(_ key: String) throws -> UInt64 {
        guard let value = json[key]?.int64Value else { throw missing(key, "a whole number") }
        return UInt64(bitPattern: value)
    }

    /// A list of numbers.
    func doubles(_ key: String) throws -> [Double] {
        guard case .array(let elements)? = json[key] else { throw missing(key, "a list of numbers") }
        return try elements.map { element in
            guard let value = element.doubleValue else { throw missing(key, "a list of numbers") }
            return value
        }
    }

    /// The part process's peak resident memory.
    var peakMemoryBytes: UInt64 {
        get throws { try uint64("peak_memory_bytes") }
    }

    /// The part process's peak anonymous resident memory (`PeakMemory`); 0 when not reported.
    var peakAnonymousMemoryBytes: UInt64 {
        (json["peak_anon_memory_bytes"]?.int64Value).map { UInt64(clamping: $0) } ?? 0
    }

    private func missing(_ key: String, _ kind: String) -> BenchmarkError {
        .malformedOutput("part '\(partName)' reported no \(kind) for '\(key)': \(json.compactText)")
    }
}
