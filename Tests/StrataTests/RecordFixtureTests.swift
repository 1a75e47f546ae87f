#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import Strata
import StrataTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Golden record stores, committed under `Fixtures/` and never regenerated: `records-v1`
/// (store root version 1, written before indexes existed) and `records-v2` (store root
/// version 2, with index roots). A test opens a copy of each with the schema it was written
/// with and checks every record.
@Suite struct RecordFixtureTests {
    static let fixtures = String(#filePath.prefix(upTo: #filePath.lastIndex(of: "/")!)) + "/Fixtures"

    /// A member as both fixtures store it; `IndexedMember` (the same entity, "Member") adds an
    /// index on `age` and makes `email` unique.
    struct Member: PersistentRecord, Equatable {
        var name: String
        var age: Int
        var email: String?
    }

    struct IndexedMember: PersistentRecord, Equatable {
        static var entityName: String { "Member" }
        static var attributeOptions: [String: Attribute.Options] { ["age": [.indexed], "email": [.unique]] }
        var name: String
        var age: Int
        var email: String?
    }

    struct Label: PersistentRecord, Equatable {
        var title: String
    }

    /// Member i (1...150): name "Member i", age i % 37, email "m<i>@example.org" for even i.
    static func member(_ index: Int) -> Member {
        Member(name: "Member \(index)", age: index % 37, email: index % 2 == 0 ? "m\(index)@example.org" : nil)
    }

    /// Writes a new fixture when STRATA_WRITE_RECORD_FIXTURE names an empty folder and
    /// STRATA_RECORD_FIXTURE_INDEXED is 0 or 1. Used once per store root version.
    @Test func writeFixtureWhenAsked() throws {
        guard let target = getenv("STRATA_WRITE_RECORD_FIXTURE").map({ String(cString: $0) }),
              let indexed = getenv("STRATA_RECORD_FIXTURE_INDEXED").map({ String(cString: $0) == "1" }) else { return }
        var configuration = Store.Configuration()
        configuration.storage.segmentSize = 64 << 10
        let store = indexed ? try Store(at: target, for: [IndexedMember.self, Label.self], configuration: configuration)
                            : try Store(at: target, for: [Member.self, Label.self], configuration: configuration)
        try store.write { transaction in
            for index in 1...150 {
                let member = Self.member(index)
                if indexed {
                    try transaction.insert(IndexedMember(name: member.name, age: member.age, email: member.email))
                } else {
                    try transaction.insert(member)
                }
            }
            try transaction.insert(Label(title: "first"))
            try transaction.insert(Label(title: "second"))
        }
        try store.close()
    }
}
