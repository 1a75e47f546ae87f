#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import StrataSchema
import StrataFormat
import StrataTestSupport

/// `Sample`, coding itself by hand through `RecordWriter` / `RecordReader` (the fast path)
/// instead of its `Codable` conformance: the same entity, so the same layout.
struct HandCodedSample: PersistentRecord, Equatable {
    static var entityName: String { "Sample" }
    static let attributeDefaults: [String: Value] = ["count": 0]
    var sample: Sample

    init(_ sample: Sample) { self.sample = sample }

    // The `Codable` conformance the entity is derived from: Sample's.
    init(from decoder: any Decoder) throws { sample = try Sample(from: decoder) }
    func encode(to encoder: any Encoder) throws { try sample.encode(to: encoder) }

    func encode(to writer: inout RecordWriter) throws {
        writer.encode(sample.flag, forKey: "flag")
        writer.encode(sample.count, forKey: "count")
        try writer.encode(sample.small, forKey: "small")
        try writer.encode(sample.unsigned, forKey: "unsigned")
        try writer.encode(sample.big, forKey: "big")
        writer.encode(sample.score, forKey: "score")
        try writer.encode(sample.ratio, forKey: "ratio")
        writer.encode(sample.title, forKey: "title")
        writer.encode(sample.blob, forKey: "blob")
        try writer.encode(sample.bytes, forKey: "bytes")
        writer.encode(sample.createdAt, forKey: "createdAt")
        writer.encode(sample.id, forKey: "id")
        try writer.encode(sample.address, forKey: "address")
        try writer.encode(sample.status, forKey: "status")
        try writer.encode(sample.tags, forKey: "tags")
        writer.encode(sample.note, forKey: "note")
        writer.encode(sample.rating, forKey: "rating")
        writer.encode(sample.lastSeen, forKey: "lastSeen")
        try writer.encode(sample.backup, forKey: "backup")
    }

    init(from reader: RecordReader) throws {
        sample = Sample(
            flag: try reader.decode(Bool.self, forKey: "flag"), count: try reader.decode(Int.self, forKey: "count"),
            small: try reader.decode(Int8.self, forKey: "small"), unsigned: try reader.decode(UInt32.self, forKey: "unsigned"),
            big: try reader.decode(UInt64.self, forKey: "big"), score: try reader.decode(Double.self, forKey: "score"),
            ratio: try reader.decode(Float.self, forKey: "ratio"), title: try reader.decode(String.self, forKey: "title"),
            blob: try reader.decode(Data.self, forKey: "blob"), bytes: try reader.decode([UInt8].self, forKey: "bytes"),
            createdAt: try reader.decode(Date.self, forKey: "createdAt"), id: try reader.decode(UUID.self, forKey: "id"),
            address: try reader.decode(Sample.Address.self, forKey: "address"), status: try reader.decode(Sample.Status.self, forKey: "status"),
            tags: try reader.decode([String].self, forKey: "tags"), note: try reader.decodeIfPresent(String.self, forKey: "note"),
            rating: try reader.decodeIfPresent(Double.self, forKey: "rating"), lastSeen: try reader.decodeIfPresent(Date.self, forKey: "lastSeen"),
            backup: try reader.decodeIfPresent(Sample.Address.self, forKey: "backup"))
    }
}

/// A record coded by hand gives exactly what its `Codable` conformance gives: the same bytes,
/// the same record from any bytes, the same errors.
@Suite struct RecordHandCodingTests {
    let encoder = RecordEncoder()
    let decoder = RecordDecoder()

    static func randomSample(_ random: inout SeededRandom) -> Sample {
        func maybe<T>(_ value: T) -> T? { random.next() % 3 == 0 ? nil : value }
        let texts = ["", "a", "Zoë", "李雷", "line\r\nbreak", "😀", String(repeating: "x", count: 300)]
        return Sample(flag: random.next() % 2 == 0, count: Int(Int64(bitPattern: random.next())), small: Int8(truncatingIfNeeded: random.next()),
                      unsigned: UInt32(truncatingIfNeeded: random.next()), big: random.next() >> 1,
                      score: Double(bitPattern: random.next() & 0x7FEF_FFFF_FFFF_FFFF), ratio: Float(random.next() % 1000) / 7,
                      title: texts[Int(random.next() % UInt64(texts.count))], blob: Data(random.bytes(Int(random.next() % 20))),
                      bytes: random.bytes(Int(random.next() % 5)), createdAt: Date(timeIntervalSinceReferenceDate: Double(Int32(truncatingIfNeeded: random.next()))),
                      id: UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, UInt8(truncatingIfNeeded: random.next()))),
                      address: Sample.Address(street: texts[Int(random.next() % 3)], lines: ["l"], coordinates: maybe([1.5])),
                      status: random.next() % 2 == 0 ? .active : .archived, tags: Array(texts.prefix(Int(random.next() % 4))),
                      note: maybe(texts[Int(random.next() % UInt64(texts.count))]), rating: maybe(2.5),
                      lastSeen: maybe(Date(timeIntervalSinceReferenceDate: 99)), backup: maybe(Sample.Address(street: "b", lines: [], coordinates: nil)))
    }

    @Test func handCodingWritesAndReadsWhatCodableDoes() throws {
        let seed = SeededRandom.seed(default: 0x4A9D)
        print("RecordHandCodingTests seed: \(seed)")
        var random = SeededRandom(seed: seed)
        let layout = try RecordDirectCodingTests.sampleLayout()
        let session = RecordEncodingSession(layout: layout), handSession = RecordEncodingSession(layout: layout)
        for round in 0..<500 {
            let sample = Self.randomSample(&random)
            let codable = try encoder.encode(sample, layout: layout)
            // Both paths write scalars straight to bytes: the reference is the encoding of the
            // record's values (`Value`s by id, `RecordCodec.encode`).
            var byID: [UInt32: Value] = [:]
            for (name, value) in try encoder.encode(sample) { byID[try #require(layout.attributeIDs[name])] = value }
            #expect(codable == RecordCodec.encode(byID), "round \(round), seed \(seed)")
            #expect(try encoder.encode(HandCodedSample(sample), layout: layout) == codable, "round \(round), seed \(seed)")
            #expect(try handSession.encode(HandCodedSample(sample)) == (try session.encode(sample)), "round \(round), seed \(seed)")
            let decoded = try codable.withUnsafeBytes { try decoder.decode(HandCodedSample.self, bytes: $0, layout: layout) }
            #expect(try encoder.encode(decoded.sample, layout: layout) == codable, "round \(round), seed \(seed)")
        }
    }

    /// A private copy of a layout (what each thread of a concurrent transform codes with)
    /// codes as the original does: the same bytes, the same values, defaults included.
    @Test func privateLayoutCopiesCodeAsTheOriginal() throws {
        let seed = SeededRandom.seed(default: 0x1A70)
        print("RecordHandCodingTests.privateLayoutCopiesCodeAsTheOriginal seed: \(seed)")
        var random = SeededRandom(seed: seed)
        let layout = try RecordDirectCodingTests.sampleLayout()
        let copy = RecordLayout(privateCopyOf: layout)
        #expect(copy.attributeIDs == layout.attributeIDs)
        let countID = try #require(layout.attributeIDs["count"])
        for round in 0..<200 {
            let sample = Self.randomSample(&random)
            let bytes = try encoder.encode(sample, layout: layout)
            #expect(try encoder.encode(sample, layout: copy) == bytes, "round \(round), seed \(seed)")
            #expect(try RecordEncodingSession(layout: copy).encode(HandCodedSample(sample)) == bytes, "round \(round), seed \(seed)")
            let decoded = try bytes.withUnsafeBytes { try decoder.decode(HandCodedSample.self, bytes: $0, layout: copy) }
            #expect(try encoder.encode(decoded.sample, layout: layout) == bytes, "round \(round), seed \(seed)")
            // Without its `count`, the record reads the default (0) through either layout.
            var fields = try RecordDirectCodingTests.referenceDecode(bytes).get()
            fields[countID] = nil
            let withoutCount = RecordCodec.encode(fields)
            let original = try withoutCount.withUnsafeBytes { try decoder.decode(Sample.self, bytes: $0, layout: layout) }
            let copied = try withoutCount.withUnsafeBytes { try decoder.decode(Sample.self, bytes: $0, layout: copy) }
            #expect(original.count == 0 && copied.count == 0, "round \(round), seed \(seed)")
            #expect(try encoder.encode(copied, layout: layout) == (try encoder.encode(original, layout: layout)), "round \(round), seed \(seed)")
        }
    }

    @Test func handCodingReadsDamagedAndForeignBytesAsCodableDoes() throws {
        let seed = SeededRandom.seed(default: 0x4A9E)
        print("RecordHandCodingTests damaged seed: \(seed)")
        var random = SeededRandom(seed: seed)
        let layout = try RecordDirectCodingTests.sampleLayout()
        let good = try encoder.encode(Sample.make(), layout: layout)
        var inputs = (0..<good.count).map { Array(good[..<$0]) }
        for round in 0..<3_000 { inputs.append(Mutator.mutate(good, round: round, using: &random)) }
        // Values of the wrong kind, and absent attributes (defaults, missing values).
        let fields = try RecordCodec.decodeFields(good)
        for (index, field) in fields.enumerated() {
            inputs.append(RecordCodec.encode(fields: fields.enumerated().filter { $0.offset != index }.map(\.element)))
            inputs.append(RecordCodec.encode(fields: fields.map { $0.id == field.id ? (id: field.id, value: .string("wrong")) : $0 }))
            inputs.append(RecordCodec.encode(fields: fields.map { $0.id == field.id ? (id: field.id, value: .int(300)) : $0 }))
        }
        var decoded = 0
        for (index, input) in inputs.enumerated() {
            let viaCodable = Result { try input.withUnsafeBytes { try decoder.decode(Sample.self, bytes: $0, layout: layout) } }
            let viaHand = Result { try input.withUnsafeBytes { try decoder.decode(HandCodedSample.self, bytes: $0, layout: layout).sample } }
            switch (viaCodable, viaHand) {
            case (.success(let a), .success(let b)):
                #expect((try? encoder.encode(a, layout: layout)) == (try? encoder.encode(b, layout: layout)), "input \(index), seed \(seed)")
                decoded += 1
            case (.failure(let a), .failure(let b)): #expect("\(a)" == "\(b)", "input \(index), seed \(seed)")
            default: Issue.record("input \(index): only one path failed (\(viaCodable), \(viaHand)), seed \(seed)")
            }
        }
        #expect(decoded >= 2)
    }
}
