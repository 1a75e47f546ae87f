#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataSchema

/// Schemas shared by the tests.
enum Fixtures {
    /// A small library: an abstract parent, inheritance, every attribute type, options,
    /// defaults, and a many-to-many relationship with inverses.
    static let library = Schema(version: Schema.Version(1, 0, 0), [
        Entity("Item", isAbstract: true, attributes: [
            .uuid("id", options: [.unique]),
            .date("createdAt"),
        ]),
        Entity("Book", parent: "Item", attributes: [
            .string("title", options: [.indexed]),
            .int("pages", default: 0),
            .double("rating", isOptional: true),
            .data("cover", isOptional: true),
            .bool("isFavorite", default: false),
            .codable("metadata", typeName: "Metadata", isOptional: true),
        ], relationships: [
            .toMany("authors", destination: "Author", inverse: "books"),
        ]),
        Entity("Author", attributes: [
            .string("name"),
            .date("born", isOptional: true, options: [.preserveValueOnDeletion]),
        ], relationships: [
            .toMany("books", destination: "Book", inverse: "authors", deleteRule: .deny),
        ]),
    ])

    /// The reference workload's record (Docs/Benchmarks): fullName, createdAt, note.
    static let person = Schema(version: Schema.Version(1, 0, 0), [
        Entity("Person", attributes: [
            .string("fullName", options: [.indexed]),
            .date("createdAt"),
            .string("note", isOptional: true),
        ]),
    ])
}

extension Schema {
    /// A copy with `change` applied to the entity named `name`.
    func changing(_ name: String, _ change: (inout Entity) -> Void) -> Schema {
        var copy = self
        if let index = copy.entities.firstIndex(where: { $0.name == name }) { change(&copy.entities[index]) }
        return copy
    }
}

/// Hex of bytes, for readable pinned expectations.
func hex(_ bytes: [UInt8]) -> String {
    bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
}

/// Bytes from hex with optional spaces; traps only on malformed test literals.
func bytes(hex text: String) -> [UInt8] {
    let digits = Array(text.filter { !$0.isWhitespace })
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16) ?? 0 }
}
