#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
@testable import StrataSchema
import StrataTestSupport

/// `RecordFilter`: a scan's sessions answer what `RecordCondition.evaluate` answers, and a
/// `FieldShape` locates a field where the plain walk does — in every record of the shape it
/// learned, and nowhere else.
@Suite struct RecordFilterTests {
    /// The kinds of stored fields, with the payloads the walks skip differently.
    enum Kind: CaseIterable { case shortString, longString, data, codable, smallInt, largeInt, double, date, uuid, bool, references }

    static func value(_ kind: Kind, _ random: inout SeededRandom) -> Value {
        let letters = Array("abKZ~ é".unicodeScalars)
        func text(_ count: Int) -> String {
            String(String.UnicodeScalarView((0..<count).map { _ in letters[Int(random.next() % UInt64(letters.count))] }))
        }
        switch kind {
        case .shortString: return .string(text(Int(random.next() % 12)))
        case .longString: return .string(text(120 + Int(random.next() % 300)))  // two-byte lengths
        case .data: return .data((0..<Int(random.next() % 200)).map { _ in UInt8(truncatingIfNeeded: random.next()) })
        case .codable: return .codable(Array("{\"a\":\(random.next() % 1000)}".utf8))
        case .smallInt: return .int(Int64(random.next() % 100) - 50)
        case .largeInt: return .int(Int64(bitPattern: random.next()) >> Int64(random.next() % 60))
        case .double: return .double(Double(random.next() % 1000) / 8)
        case .date: return .date(Date(timeIntervalSinceReferenceDate: Double(random.next() % 100_000)))
        case .uuid: return .uuid(UUID(uuid: (UInt8(random.next() % 4), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)))
        case .bool: return .bool(random.next() % 2 == 0)
        case .references: return .references([1 + random.next() % 9])
        }
    }

    /// A record shape: ascending attribute ids (some past 127), each with a kind.
    static func template(_ random: inout SeededRandom) -> [(id: UInt32, kind: Kind)] {
        var id: UInt32 = 0
        return (0..<(1 + Int(random.next() % 7))).map { _ in
            id += 1 + UInt32(random.next() % 3)
            if random.next() % 40 == 0 { id += 130 }
            let kinds = Kind.allCases.filter { $0 != .references || random.next() % 4 == 0 }
            return (id, kinds[Int(random.next() % UInt64(kinds.count))])
        }
    }

    /// A record of `template`: every field, or (`sparse`) some left out.
    static func record(_ template: [(id: UInt32, kind: Kind)], sparse: Bool, _ random: inout SeededRandom) -> [UInt8] {
        RecordCodec.encode(fields: template.compactMap { field in
            sparse && random.next() % 3 == 0 ? nil : (field.id, value(field.kind, &random))
        })
    }

    /// A copy of `bytes` with one byte changed, a byte dropped, or cut short.
    static func corrupted(_ bytes: [UInt8], _ random: inout SeededRandom) -> [UInt8] {
        guard !bytes.isEmpty else { return [1] }
        var copy = bytes
        let at = Int(random.next() % UInt64(bytes.count))
        switch random.next() % 4 {
        case 0: copy[at] = UInt8(truncatingIfNeeded: random.next())
        case 1: copy[at] ^= 0x80
        case 2: copy.remove(at: at)
        default: copy.removeLast(1 + at / 2)
        }
        return copy
    }

    @Test func fieldShapeLocatesWhereThePlainWalkDoes() {
        let seed = SeededRandom.seed(default: 0xF1E1_D5A9)
        print("RecordFilterTests.fieldShapeLocatesWhereThePlainWalkDoes seed: \(seed)")
        var random = SeededRandom(seed: seed)
        var locatedByShape = 0, full = 0
        for _ in 0..<300 {
            let template = Self.template(&random)
            let records = (0..<30).map { _ in Self.record(template, sparse: false, &random) }
            for target in template.map(\.id) + [0, 200] {
                // `clean` learns from the template's full records only, so each after the first
                // must be located by shape; `shape` learns from every record it sees.
                var clean = FieldShape(), shape = FieldShape()
                var learned = false  // `clean` learned from a record (not one the walk left unsure: ten-byte integers)
                for record in records {
                    record.withUnsafeBytes { raw in
                        let walked = StoredField.locatePlain(target, in: raw, recordLength: raw.count)
                        full += 1
                        if let located = clean.locate(in: raw) {
                            locatedByShape += 1
                            #expect(located == walked, "field \(target) in \(record): shape \(located), walk \(walked) (seed \(seed))")
                        } else if learned, walked.offset >= 0 {
                            Issue.record("field \(target) in \(record) not located by its shape (seed \(seed))")
                        }
                        if walked.offset >= 0 {
                            clean.learn(target, from: raw)
                            learned = true
                        }
                    }
                    for bytes in [record, Self.corrupted(record, &random), Self.record(template, sparse: true, &random)] {
                        bytes.withUnsafeBytes { raw in
                            let walked = StoredField.locatePlain(target, in: raw, recordLength: raw.count)
                            if let located = shape.locate(in: raw) {
                                #expect(located == walked, "field \(target) in \(bytes): shape \(located), walk \(walked) (seed \(seed))")
                            }
                            if walked.offset >= 0 { shape.learn(target, from: raw) }
                        }
                    }
                }
            }
        }
        #expect(locatedByShape > full / 3, "located \(locatedByShape) by shape of \(full) full records")
    }

    /// Conditions on one field of `template` (or one it lacks), of each form a session
    /// evaluates by shape, and a few it does not.
    static func conditions(_ template: [(id: UInt32, kind: Kind)], _ random: inout SeededRandom) -> [RecordCondition] {
        let field = template[Int(random.next() % UInt64(template.count))]
        let id = random.next() % 8 == 0 ? 300 : field.id
        let constant = value(field.kind == .references ? .smallInt : field.kind, &random)
        let absent: Value? = [nil, .null, constant][Int(random.next() % 3)]
        let comparisons: [RecordCondition.Comparison] = [.equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual]
        let comparison = comparisons[Int(random.next() % 6)]
        let prefixes: [[UInt8]] = [[], Array("a".utf8), Array("ab".utf8), Array("K".utf8)]
        let prefix = prefixes[Int(random.next() % 4)]
        let startsWith = RecordCondition.startsWith(attributeID: id, prefix: prefix, absent: absent)
        let compare = RecordCondition.compare(attributeID: id, comparison, constant, absent: absent)
        return [startsWith, compare, .and(startsWith, compare), .not(compare)]
    }

    @Test func sessionsAnswerAsTheConditionDoes() {
        let seed = SeededRandom.seed(default: 0x5E55_1075)
        print("RecordFilterTests.sessionsAnswerAsTheConditionDoes seed: \(seed)")
        var random = SeededRandom(seed: seed)
        var decided = 0, total = 0
        for _ in 0..<200 {
            // Runs of records of one shape, then of another, some sparse, some corrupted.
            let templates = (0..<3).map { _ in Self.template(&random) }
            var records: [[UInt8]] = []
            for _ in 0..<6 {
                let template = templates[Int(random.next() % 3)]
                for _ in 0..<Int(1 + random.next() % 8) {
                    let record = Self.record(template, sparse: random.next() % 4 == 0, &random)
                    records.append(random.next() % 6 == 0 ? Self.corrupted(record, &random) : record)
                }
            }
            for condition in Self.conditions(templates[0], &random) {
                var session = RecordFilter(condition).session()
                for record in records {
                    record.withUnsafeBytes { raw in
                        let expected = condition.evaluate(raw)
                        let answer = session.evaluate(raw)
                        total += 1
                        if answer != nil { decided += 1 }
                        #expect(answer == expected, "\(condition) on \(record): session \(String(describing: answer)), evaluate \(String(describing: expected)) (seed \(seed))")
                    }
                }
            }
        }
        #expect(decided > total / 10, "decided \(decided) of \(total)")
    }

    @Test func aFunctionFilterCallsTheFunction() {
        let filter = RecordFilter { bytes in bytes.count > 3 ? true : bytes.isEmpty ? nil : false }
        var session = filter.session()
        #expect([[], [1], [1, 2, 3, 4]].map { (bytes: [UInt8]) in bytes.withUnsafeBytes { session.evaluate($0) } } == [nil, false, true])
    }
}
