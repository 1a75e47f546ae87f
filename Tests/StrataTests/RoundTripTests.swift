#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import Strata
import StrataTestSupport

/// A nested Codable value, stored as a `.codable` attribute.
struct Address: Codable, Equatable {
    var street: String
    var zip: Int?
    var lines: [String]
}

/// One attribute of every type, and an optional of each.
struct Everything: PersistentRecord, Equatable {
    var flag: Bool
    var count: Int
    var small: Int8
    var big: UInt32
    var ratio: Double
    var text: String
    var blob: Data
    var when: Date
    var key: UUID
    var address: Address
    var maybeFlag: Bool?
    var maybeCount: Int?
    var maybeRatio: Double?
    var maybeText: String?
    var maybeBlob: Data?
    var maybeWhen: Date?
    var maybeKey: UUID?
    var maybeAddress: Address?
}

/// Every attribute type round-trips through the public API — through a save, a reopen and
/// both read paths (by id, by fetch) — with ordinary, edge (empty, non-ASCII, extreme, -0.0,
/// infinities) and large (over 1 MiB, overflow pages) values, and nil for each optional.
@Suite struct RoundTripTests {
    static func samples() -> [Everything] {
        let megabyteText = String(repeating: "Zoë 🙂 ", count: (1 << 20) / 8 + 1)  // > 1 MiB of UTF-8
        let megabyteData = Data((0..<((1 << 20) + 17)).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) })
        let ordinary = Everything(
            flag: true, count: 42, small: -7, big: 4_000_000_000, ratio: 3.25, text: "Lovelace, Ada", blob: Data([1, 2, 3]),
            when: Date(timeIntervalSince1970: 1_700_000_000.125), key: UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)),
            address: Address(street: "Main St", zip: 12345, lines: ["a", "b"]),
            maybeFlag: false, maybeCount: -1, maybeRatio: 0.5, maybeText: "x", maybeBlob: Data([0]), maybeWhen: Date(timeIntervalSinceReferenceDate: 0),
            maybeKey: UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1)), maybeAddress: Address(street: "", zip: nil, lines: []))
        let edges = Everything(
            flag: false, count: Int.min, small: Int8.max, big: 0, ratio: -0.0, text: "", blob: Data(),
            when: Date(timeIntervalSinceReferenceDate: -1e12), key: UUID(uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255)),
            address: Address(street: "Straße \u{301}e\u{301} \r\n \u{0}", zip: Int.max, lines: ["", "日本語"]),
            maybeFlag: nil, maybeCount: nil, maybeRatio: nil, maybeText: nil, maybeBlob: nil, maybeWhen: nil, maybeKey: nil, maybeAddress: nil)
        var large = ordinary
        large.text = megabyteText
        large.blob = megabyteData
        large.maybeText = megabyteText
        large.ratio = .infinity
        large.maybeRatio = -.infinity
        large.count = Int.max
        large.address.lines = [megabyteText]
        var empties = edges
        empties.maybeText = ""
        empties.maybeBlob = Data()
        empties.maybeCount = 0
        return [ordinary, edges, large, empties]
    }

    /// With pages read through memory maps (the default) and with `pread` only.
    @Test(arguments: [true, false]) func everyAttributeTypeRoundTrips(memoryMappedReads: Bool) throws {
        var configuration = Store.Configuration()
        configuration.storage.memoryMappedReads = memoryMappedReads
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let samples = Self.samples()
        var ids: [RecordID<Everything>] = []
        do {
            let store = try Store(at: folder, for: [Everything.self], configuration: configuration)
            let context = Context(store)
            ids = try samples.map { try context.insert($0) }
            // Unsaved, from the context.
            for (id, sample) in zip(ids, samples) { #expect(try context.record(for: id) == sample) }
            try context.save()
            try store.close()
        }
        let store = try Store(at: folder, for: [Everything.self], configuration: configuration)
        let context = Context(store)
        for (id, sample) in zip(ids, samples) {
            let read = try #require(try context.record(for: id))
            #expect(read == sample)
            #expect(read.ratio.sign == sample.ratio.sign, "-0.0 keeps its sign")
        }
        let fetched = try context.fetch(FetchDescriptor<Everything>())
        #expect(fetched.map(\.id) == ids && fetched.map(\.record) == samples)
        // Predicates on stored values of each kind select the right records.
        let empty = "", none: String? = nil
        #expect(try context.fetch(FetchDescriptor<Everything>(predicate: #Predicate { $0.text == empty })).map(\.id) == [ids[1], ids[3]])
        #expect(try context.fetch(FetchDescriptor<Everything>(predicate: #Predicate { $0.maybeText == none })).map(\.id) == [ids[1]])
        #expect(try context.fetch(FetchDescriptor<Everything>(predicate: #Predicate { $0.ratio > 1 })).map(\.id) == [ids[0], ids[2]])
        #expect(try context.fetch(FetchDescriptor<Everything>(predicate: #Predicate { !$0.flag })).map(\.id) == [ids[1], ids[3]])
        try store.close()
    }
}
