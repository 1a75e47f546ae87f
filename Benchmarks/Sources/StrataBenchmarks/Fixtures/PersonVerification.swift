/// How the person workloads check a store: the record count, then a seeded sample of
/// records (the first and the last included) compared field by field with the records as
/// generated. Both stores of a workload are checked this way against the same records, and
/// the checksums of their samples are compared with each other too.
enum PersonVerification {
    /// How many records are compared (plus the first and the last).
    static let sampleSize = 1_000
    /// The seed of the sample ("SAMPLE").
    static let sampleSeed: UInt64 = 0x5341_4D50_4C45

    /// The ids to compare in a store of `recordCount` records (ids 1...recordCount).
    static func sampleIDs(recordCount: Int) -> [UInt64] {
        let last = UInt64(recordCount)
        return [1, last] + Sample.randomIDs(count: sampleSize, upTo: last, seed: sampleSeed)
    }

    /// Throws unless `count` records are stored.
    static func checkCount(_ count: Int, expected: Int, store: String) throws {
        guard count == expected else {
            throw BenchmarkError.verificationFailed("\(store) holds \(count) persons, \(expected) were written")
        }
    }

    /// Throws unless `actual` (nil: not found) equals `expected`, naming the first field that differs.
    static func checkRecord(_ actual: Person?, equals expected: Person, id: UInt64, store: String) throws {
        guard let actual else { throw BenchmarkError.verificationFailed("\(store): person \(id) is missing") }
        let field: String
        if actual.fullName != expected.fullName {
            field = "fullName"
        } else if actual.createdAt.bitPattern != expected.createdAt.bitPattern {
            field = "createdAt"
        } else if actual.note != expected.note {
            field = "note"
        } else {
            return
        }
        throw BenchmarkError.verificationFailed(
            "\(store): person \(id) differs in \(field): read \(actual.summary), wrote \(expected.summary)")
    }
}
