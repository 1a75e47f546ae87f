#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import StrataSchema
import StrataTestSupport

@Suite struct ValueTests {
    @Test func doublesAndDatesCompareByBitPattern() {
        #expect(Value.double(.nan) == .double(.nan))
        #expect(Value.double(0.0) != .double(-0.0))
        #expect(Set<Value>([.double(.nan), .double(.nan), .double(0.0), .double(-0.0)]).count == 3)
        #expect(Value.date(Date(timeIntervalSinceReferenceDate: 0)) != .date(Date(timeIntervalSinceReferenceDate: -0.0)))
        #expect(Value.date(Date(timeIntervalSinceReferenceDate: 12.5)) == .date(Date(timeIntervalSinceReferenceDate: 12.5)))
        // Different kinds are never equal, even when they print alike.
        #expect(Value.int(1) != .double(1))
        #expect(Value.data([1]) != .codable([1]))
    }

    @Test func literalsBuildTheMatchingCase() {
        let values: [Value] = [nil, true, 42, 1.5, "Ada"]
        #expect(values == [.null, .bool(true), .int(42), .double(1.5), .string("Ada")])
    }

    @Test func descriptionsAreShortAndReadable() {
        #expect(Value.string("Ada").description == "string(\"Ada\")")
        #expect(Value.data([UInt8](repeating: 0, count: 2_000_000)).description == "data(2000000 bytes)")
        #expect(Value.int(-3).description == "int(-3)")
    }

    @Test func orderPutsNullFirstThenKindsInTheDocumentedOrder() {
        let uuid = UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16))
        let ascending: [Value] = [
            .null, .bool(false), .bool(true), .int(.min), .int(-1), .int(0), .int(.max),
            .double(-.nan), .double(-.infinity), .double(-1), .double(-0.0), .double(0.0), .double(1e300), .double(.infinity), .double(.nan),
            .string(""), .string("A"), .string("a"), .string("ab"), .string("é"),
            .data([]), .data([0]), .data([0, 0]), .data([1]),
            .date(Date(timeIntervalSinceReferenceDate: -1)), .date(Date(timeIntervalSinceReferenceDate: 0)),
            .uuid(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))), .uuid(uuid),
            .codable([]), .codable([0x7B]),
        ]
        for (i, a) in ascending.enumerated() {
            for (j, b) in ascending.enumerated() {
                #expect(Value.areInIncreasingOrder(a, b) == (i < j), "\(a) vs \(b)")
            }
        }
        let seed = SeededRandom.seed(default: 0x0DE2)
        print("ValueTests.orderPutsNullFirst… seed: \(seed)")
        var random = SeededRandom(seed: seed)
        #expect(ascending.shuffled(using: &random).sorted(by: Value.areInIncreasingOrder) == ascending, "seed \(seed)")
    }

    /// Canonically equivalent strings are equal as Swift strings, so the order treats them as equal too.
    @Test func orderAgreesWithStringEquality() {
        let composed = Value.string("\u{E9}")
        let decomposed = Value.string("e\u{301}")
        #expect(composed == decomposed)
        #expect(!Value.areInIncreasingOrder(composed, decomposed) && !Value.areInIncreasingOrder(decomposed, composed))
    }

    @Test func attributeTypesAcceptOnlyTheirKind() {
        let samples: [(AttributeType, Value)] = [
            (.bool, .bool(true)), (.int, .int(1)), (.double, .double(1)), (.string, .string("")), (.data, .data([])),
            (.date, .date(Date(timeIntervalSinceReferenceDate: 0))), (.uuid, .uuid(UUID())), (.codable(typeName: "X"), .codable([])),
        ]
        for (type, _) in samples {
            for (other, value) in samples {
                #expect(type.accepts(value) == (type.storageTag == other.storageTag), "\(type) accepts \(value)")
            }
            #expect(!type.accepts(.null))
        }
        #expect(Attribute.string("a", isOptional: true).accepts(.null))
        #expect(!Attribute.string("a", default: "x").accepts(.null))
    }
}

/// Regression: an empty array of another element type was stored as bytes (Swift casts an
/// empty `[String]` to `[UInt8]`), and could not be read back.
@Suite struct EmptyArrayRegressionTests {
    struct Tagged: PersistentRecord, Equatable {
        var tags: [String]
        var counts: [Int]
    }

    @Test func emptyArraysOfOtherTypesStayCodable() throws {
        let record = Tagged(tags: [], counts: [])
        let values = try RecordEncoder().encode(record)
        #expect(values["tags"].map { if case .codable = $0 { true } else { false } } == true)
        #expect(try RecordDecoder().decode(Tagged.self, from: values) == record)
    }
}
