#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Strata

// Record types of the relationship and inheritance tests: one schema exercising every
// cardinality pair and delete rule.

/// Author.books ↔ Book.author (to-many ↔ to-one); deleting an author cascades to its books.
struct Author: PersistentRecord, Equatable {
    var name: String
    var books: [RecordID<Book>] = []
    static let relationshipRules = ["books": RelationshipRule(inverse: "author", deleteRule: .cascade)]
}

/// Book.author nullifies; Book.chapters cascades (a chain Author → Book → Chapter); Book.tags ↔
/// Tag.books is many-to-many.
struct Book: PersistentRecord, Equatable {
    var title: String
    var author: RecordID<Author>?
    var chapters: [RecordID<Chapter>] = []
    var tags: [RecordID<Tag>] = []
    static let relationshipRules = [
        "author": RelationshipRule(inverse: "books"),
        "chapters": RelationshipRule(inverse: "book", deleteRule: .cascade),
        "tags": RelationshipRule(inverse: "books"),
    ]
}

/// A required to-one relationship.
struct Chapter: PersistentRecord, Equatable {
    var title: String
    var book: RecordID<Book>
    static let relationshipRules = ["book": RelationshipRule(inverse: "chapters")]
}

/// Tag.books ↔ Book.tags with the delete rule no action: deleting a tag leaves books' references.
struct Tag: PersistentRecord, Equatable {
    var label: String
    var books: [RecordID<Book>] = []
    static let relationshipRules = ["books": RelationshipRule(inverse: "tags", deleteRule: .noAction)]
}

/// A one-way to-many relationship (no inverse) with the delete rule deny.
struct Library: PersistentRecord, Equatable {
    var name: String
    var books: [RecordID<Book>] = []
    static let relationshipRules = ["books": RelationshipRule(deleteRule: .deny)]
}

/// Citizen.passport ↔ Passport.holder (to-one ↔ to-one), cascading both ways: a cycle.
struct Citizen: PersistentRecord, Equatable {
    var name: String
    var passport: RecordID<Passport>?
    static let relationshipRules = ["passport": RelationshipRule(inverse: "holder", deleteRule: .cascade)]
}

struct Passport: PersistentRecord, Equatable {
    var number: String
    var holder: RecordID<Citizen>?
    static let relationshipRules = ["holder": RelationshipRule(inverse: "passport", deleteRule: .cascade)]
}

/// A ring: Node.next ↔ Node.previous on one entity, cascading along `next`.
struct Node: PersistentRecord, Equatable {
    var label: Int
    var next: RecordID<Node>?
    var previous: RecordID<Node>?
    static let relationshipRules = [
        "next": RelationshipRule(inverse: "previous", deleteRule: .cascade),
        "previous": RelationshipRule(inverse: "next"),
    ]
}

// Inheritance: Animal ← Dog ← Puppy, Animal ← Cat; Zoo.animals ↔ Animal.zoo.

struct Animal: PersistentRecord, Equatable {
    var name: String
    var age: Int
    var zoo: RecordID<Zoo>?
    static let relationshipRules = ["zoo": RelationshipRule(inverse: "animals")]
}

struct Dog: PersistentRecord, Equatable {
    var name: String
    var age: Int
    var zoo: RecordID<Zoo>?
    var breed: String
    static var parentRecordType: (any PersistentRecord.Type)? { Animal.self }
}

struct Puppy: PersistentRecord, Equatable {
    var name: String
    var age: Int
    var zoo: RecordID<Zoo>?
    var breed: String
    var toy: String?
    static var parentRecordType: (any PersistentRecord.Type)? { Dog.self }
}

struct Cat: PersistentRecord, Equatable {
    var name: String
    var age: Int
    var zoo: RecordID<Zoo>?
    var isIndoor: Bool
    static var parentRecordType: (any PersistentRecord.Type)? { Animal.self }
}

struct Zoo: PersistentRecord, Equatable {
    var city: String
    var animals: [RecordID<Animal>] = []
    static let relationshipRules = ["animals": RelationshipRule(inverse: "zoo")]
}

/// An abstract parent and its concrete sub-entity.
struct Shape: PersistentRecord, Equatable {
    var area: Double
    static var isAbstractEntity: Bool { true }
}

struct Circle: PersistentRecord, Equatable {
    var area: Double
    var radius: Double
    static var parentRecordType: (any PersistentRecord.Type)? { Shape.self }
}

/// Every graph type (the others are found through relationships and parents).
var graphTypes: [any PersistentRecord.Type] {
    [Author.self, Library.self, Citizen.self, Node.self, Dog.self, Puppy.self, Cat.self, Circle.self]
}
