#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import Strata
import StrataTestSupport

/// Relationships between typed records: round trips, inverse maintenance and delete rules,
/// through `Context.save()` and `Store.write`.
@Suite struct RelationshipTests {
    /// A store of every graph type in a fresh folder; `body` gets the store and the folder.
    func withStore(_ body: (Store, String) throws -> Void) throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Store(at: folder, for: graphTypes)
        defer { try? store.close() }
        try body(store, folder)
    }

    @Test func derivedSchemaHasTheDeclaredRelationships() throws {
        let schema = try Schema(types: graphTypes)
        try schema.validate()
        // Types reached only through relationships and parents are included.
        #expect(Set(schema.entities.map(\.name)) == ["Author", "Book", "Chapter", "Tag", "Library", "Citizen", "Passport", "Node",
                                                     "Dog", "Animal", "Zoo", "Puppy", "Cat", "Circle", "Shape"])
        let book = try #require(schema.entity(named: "Book"))
        #expect(book.attributes.map(\.name) == ["title"])
        #expect(book.relationships == [
            .toOne("author", destination: "Author", inverse: "books"),
            .toMany("chapters", destination: "Chapter", inverse: "book", deleteRule: .cascade),
            .toMany("tags", destination: "Tag", inverse: "books"),
        ])
        #expect(schema.entity(named: "Chapter")?.relationships == [.toOne("book", destination: "Book", inverse: "chapters", isOptional: false)])
        #expect(schema.entity(named: "Library")?.relationships == [.toMany("books", destination: "Book", deleteRule: .deny)])
        #expect(schema.entity(named: "Tag")?.relationships.first?.deleteRule == .noAction)
        // Sub-entities: parent, own properties only, abstractness.
        let dog = try #require(schema.entity(named: "Dog"))
        #expect(dog.parent == "Animal" && dog.attributes.map(\.name) == ["breed"] && dog.relationships.isEmpty)
        #expect(try schema.resolvedAttributes(of: "Puppy").map(\.name) == ["name", "age", "breed", "toy"])
        #expect(try schema.resolvedRelationships(of: "Puppy").map(\.name) == ["zoo"])
        #expect(schema.entity(named: "Shape")?.isAbstract == true && schema.entity(named: "Circle")?.parent == "Shape")
    }

    @Test func derivationErrorsNameTheProblem() {
        struct Typo: PersistentRecord {
            var owner: RecordID<Author>?
            static let relationshipRules = ["ownr": RelationshipRule()]
        }
        struct RuleOnAttribute: PersistentRecord {
            var name: String
            static let relationshipRules = ["name": RelationshipRule()]
        }
        struct Orphan: PersistentRecord {  // claims Animal as parent but lacks `age` and `zoo`
            var name: String
            static var parentRecordType: (any PersistentRecord.Type)? { Animal.self }
        }
        struct Mismatch: PersistentRecord {  // `age` has another type than Animal's
            var name: String
            var age: String
            var zoo: RecordID<Zoo>?
            static var parentRecordType: (any PersistentRecord.Type)? { Animal.self }
        }
        #expect(throws: RecordCodingError.unknownAttribute(type: "Typo", attribute: "ownr")) { try Typo.entity() }
        #expect(throws: RecordCodingError.unknownAttribute(type: "RuleOnAttribute", attribute: "name")) { try RuleOnAttribute.entity() }
        #expect { try Orphan.entity() } throws: { "\($0)".contains("lacks the property") }
        #expect { try Mismatch.entity() } throws: { "\($0)".contains("property age differs") }
    }

    @Test func relationshipsRoundTripAcrossReopen() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        var author = RecordID<Author>(rawValue: 0), book = RecordID<Book>(rawValue: 0), tags: [RecordID<Tag>] = []
        do {
            let store = try Store(at: folder, for: graphTypes)
            let context = Context(store)
            author = try context.insert(Author(name: "Le Guin"))
            tags = try (0..<3).map { try context.insert(Tag(label: "t\($0)")) }
            book = try context.insert(Book(title: "The Dispossessed", author: author, tags: [tags[2], tags[0]]))
            try context.insert(Book(title: "Untitled", author: nil))  // optional to-one left empty
            try context.save()
            try store.close()
        }
        let store = try Store(at: folder, for: graphTypes)
        defer { try? store.close() }
        let context = Context(store)
        #expect(try context.record(for: book) == Book(title: "The Dispossessed", author: author, tags: [tags[2], tags[0]]))  // order kept
        #expect(try context.record(for: author)?.books == [book])
        #expect(try context.record(for: tags[0])?.books == [book])
        #expect(try context.record(for: tags[1])?.books == [])
        let untitled = try context.fetch(FetchDescriptor<Book>(predicate: #Predicate { $0.author == nil }))
        #expect(untitled.map(\.title) == ["Untitled"])
    }

    @Test func settingAToOneMaintainsTheInverseToMany() throws {
        try withStore { store, _ in
            let context = Context(store)
            let first = try context.insert(Author(name: "First")), second = try context.insert(Author(name: "Second"))
            let book = try context.insert(Book(title: "B", author: first))
            try context.save()
            #expect(try context.record(for: first)?.books == [book])

            try context.update(book, to: Book(title: "B", author: second))
            // Before saving, reads show exactly the context's own values.
            #expect(try context.record(for: first)?.books == [book])
            #expect(try context.record(for: second)?.books == [])
            try context.save()
            #expect(try context.record(for: first)?.books == [])
            #expect(try context.record(for: second)?.books == [book])

            try context.update(book, to: Book(title: "B", author: nil))
            try context.save()
            #expect(try context.record(for: second)?.books == [])
        }
    }

    @Test func settingAToManyMaintainsEachInverseToOne() throws {
        try withStore { store, _ in
            let context = Context(store)
            let books = try (0..<3).map { try context.insert(Book(title: "B\($0)")) }
            let first = try context.insert(Author(name: "First", books: [books[0], books[1]]))
            try context.save()
            #expect(try books.map { try context.record(for: $0)?.author } == [first, first, nil])

            // Another author takes books[1]: it leaves the first author's list.
            let second = try context.insert(Author(name: "Second", books: [books[1], books[2]]))
            try context.save()
            #expect(try books.map { try context.record(for: $0)?.author } == [first, second, second])
            #expect(try context.record(for: first)?.books == [books[0]])

            // Removing a book from a list clears its to-one.
            try context.update(second, to: Author(name: "Second", books: [books[2]]))
            try context.save()
            #expect(try context.record(for: books[1])?.author == nil)
        }
    }

    @Test func manyToManyKeepsBothSides() throws {
        try withStore { store, _ in
            let context = Context(store)
            let tags = try (0..<3).map { try context.insert(Tag(label: "t\($0)")) }
            let a = try context.insert(Book(title: "A", tags: [tags[0], tags[1]]))
            let b = try context.insert(Book(title: "B", tags: [tags[1]]))
            try context.save()
            #expect(try tags.map { try context.record(for: $0)?.books } == [[a], [a, b], []])
            try context.update(tags[2], to: Tag(label: "t2", books: [b, a]))
            try context.update(tags[1], to: Tag(label: "t1", books: [a]))
            try context.save()
            #expect(try context.record(for: a)?.tags == [tags[0], tags[1], tags[2]])
            #expect(try context.record(for: b)?.tags == [tags[2]])
        }
    }

    @Test func oneToOneClearsThePreviousPartner() throws {
        try withStore { store, _ in
            let context = Context(store)
            let ada = try context.insert(Citizen(name: "Ada")), bob = try context.insert(Citizen(name: "Bob"))
            let passport = try context.insert(Passport(number: "P1", holder: ada))
            let spare = try context.insert(Passport(number: "P2"))
            try context.save()
            #expect(try context.record(for: ada)?.passport == passport)

            try context.update(passport, to: Passport(number: "P1", holder: bob))
            try context.save()
            #expect(try context.record(for: ada)?.passport == nil)
            #expect(try context.record(for: bob)?.passport == passport)

            // Bob takes the spare passport: the old one loses its holder.
            try context.update(bob, to: Citizen(name: "Bob", passport: spare))
            try context.save()
            #expect(try context.record(for: passport)?.holder == nil)
            #expect(try context.record(for: spare)?.holder == bob)
        }
    }

    @Test func aStaleCopyDoesNotUndoAMaintainedInverse() throws {
        try withStore { store, _ in
            let context = Context(store)
            let author = try context.insert(Author(name: "A"))
            let book = try context.insert(Book(title: "B"))
            try context.save()
            var stale = try #require(try context.record(for: author))  // books == []
            try context.update(book, to: Book(title: "B", author: author))
            stale.name = "Renamed"
            try context.update(author, to: stale)
            try context.save()
            #expect(try context.record(for: author) == Author(name: "Renamed", books: [book]))
            #expect(try context.record(for: book)?.author == author)
        }
    }

    @Test func nullifyRemovesTheDeletedRecordFromInverses() throws {
        try withStore { store, _ in
            let context = Context(store)
            let author = try context.insert(Author(name: "A"))
            let tag = try context.insert(Tag(label: "t"))
            let kept = try context.insert(Book(title: "kept", author: author, tags: [tag]))
            let gone = try context.insert(Book(title: "gone", author: author, tags: [tag]))
            try context.save()
            try context.delete(gone)
            try context.save()
            #expect(try context.record(for: author)?.books == [kept])
            #expect(try context.record(for: tag)?.books == [kept])
        }
    }

    @Test func cascadeFollowsChainsAndStopsAtOtherRecords() throws {
        try withStore { store, _ in
            let context = Context(store)
            let author = try context.insert(Author(name: "A")), other = try context.insert(Author(name: "Other"))
            let tag = try context.insert(Tag(label: "t"))
            let books = try (0..<2).map { try context.insert(Book(title: "B\($0)", author: author, tags: [tag])) }
            let chapters = try (0..<4).map { try context.insert(Chapter(title: "C\($0)", book: books[$0 % 2])) }
            let survivor = try context.insert(Book(title: "S", author: other))
            let survivorChapter = try context.insert(Chapter(title: "SC", book: survivor))
            try context.save()
            #expect(try context.record(for: books[0])?.chapters == [chapters[0], chapters[2]])

            try context.delete(author)
            try context.save()
            #expect(try context.fetchCount(FetchDescriptor<Author>()) == 1)
            #expect(try context.fetch(FetchDescriptor<Book>()).map(\.id) == [survivor])
            #expect(try context.fetch(FetchDescriptor<Chapter>()).map(\.id) == [survivorChapter])
            #expect(try context.record(for: tag)?.books == [])  // the books' nullify rule on tags ran
        }
    }

    @Test func cascadeCyclesEnd() throws {
        try withStore { store, _ in
            let context = Context(store)
            // A one-to-one pair cascading both ways.
            let citizen = try context.insert(Citizen(name: "C"))
            try context.insert(Passport(number: "P", holder: citizen))
            // A ring of five nodes (each `next` set; `previous` maintained), plus a lone node.
            let nodes = try (0..<5).map { try context.insert(Node(label: $0)) }
            try context.save()
            for index in nodes.indices {
                try context.update(nodes[index], to: Node(label: index, next: nodes[(index + 1) % nodes.count]))
            }
            let lone = try context.insert(Node(label: 99))
            try context.save()
            #expect(try context.record(for: nodes[0])?.previous == nodes[4])

            try context.delete(citizen)
            try context.delete(nodes[2])
            try context.save()
            #expect(try context.fetchCount(FetchDescriptor<Citizen>()) == 0)
            #expect(try context.fetchCount(FetchDescriptor<Passport>()) == 0)
            #expect(try context.fetch(FetchDescriptor<Node>()).map(\.id) == [lone])
        }
    }

    @Test func denyRefusesTheSaveAndChangesNothing() throws {
        try withStore { store, folder in
            let context = Context(store)
            let books = try (0..<3).map { try context.insert(Book(title: "B\($0)")) }
            let library = try context.insert(Library(name: "L", books: [books[0], books[1]]))
            try context.save()

            try context.delete(library)
            try context.update(books[2], to: Book(title: "changed in the refused save"))
            #expect(throws: StrataError.deleteDenied(record: "Library#\(library.rawValue)", relationship: "books", count: 2)) {
                try context.save()
            }
            #expect(context.hasChanges)  // kept for the app to fix
            let fresh = Context(store)
            #expect(try fresh.record(for: library) == Library(name: "L", books: [books[0], books[1]]))
            #expect(try fresh.record(for: books[2])?.title == "B2")

            // Deleting the referenced records in the same save satisfies the rule.
            try context.delete(books[0])
            try context.delete(books[1])
            try context.save()
            #expect(try fresh.record(for: library) == nil)
            #expect(try fresh.fetch(FetchDescriptor<Book>()).map(\.title) == ["changed in the refused save"])
            _ = folder
        }
    }

    @Test func noActionLeavesReferencesToTheDeletedRecord() throws {
        try withStore { store, _ in
            let context = Context(store)
            let tag = try context.insert(Tag(label: "t"))
            let book = try context.insert(Book(title: "B", tags: [tag]))
            try context.save()
            try context.delete(tag)
            try context.save()
            #expect(try context.record(for: book)?.tags == [tag])  // dangling, as the rule says
            #expect(try context.record(for: tag) == nil)
            // An unrelated change to the book still saves: untouched references are not rechecked.
            try context.update(book, to: Book(title: "B2", tags: [tag]))
            try context.save()
            #expect(try context.record(for: book)?.title == "B2")
        }
    }

    @Test func referencesToMissingRecordsAreRefused() throws {
        try withStore { store, _ in
            let context = Context(store)
            let author = try context.insert(Author(name: "A"))
            try context.save()
            let missing = RecordID<Author>(rawValue: 999)
            try context.insert(Book(title: "B", author: missing))
            #expect(throws: StrataError.danglingReference(record: "Book#1", relationship: "author", destination: "Author#999")) {
                try context.save()
            }
            context.rollback()
            #expect(try context.fetchCount(FetchDescriptor<Book>()) == 0)
            #expect(try context.record(for: author)?.books == [])
            // A record inserted in the same save may be referred to.
            let book = try context.insert(Book(title: "B"))
            try context.insert(Library(name: "L", books: [book]))
            try context.save()
            #expect(try context.fetchCount(FetchDescriptor<Library>()) == 1)
        }
    }

    @Test func aRequiredToOneCannotBeLeftEmpty() throws {
        try withStore { store, _ in
            let context = Context(store)
            let book = try context.insert(Book(title: "B"))
            let chapter = try context.insert(Chapter(title: "C", book: book))
            try context.save()
            #expect(try context.record(for: book)?.chapters == [chapter])
            try context.update(book, to: Book(title: "B", chapters: []))
            #expect(throws: StrataError.requiredRelationship(record: "Chapter#\(chapter.rawValue)", relationship: "book")) {
                try context.save()
            }
            #expect(try Context(store).record(for: book)?.chapters == [chapter])
        }
    }

    @Test func storeWriteMaintainsRelationshipsToo() throws {
        try withStore { store, _ in
            let (author, books) = try store.write { transaction in
                let author = try transaction.insert(Author(name: "A"))
                let books = try (0..<3).map { try transaction.insert(Book(title: "B\($0)", author: author)) }
                #expect(try transaction.record(for: author)?.books == books)  // maintained at once
                try transaction.insert(Chapter(title: "C", book: books[0]))
                return (author, books)
            }
            let library = try store.write { transaction in
                try transaction.insert(Library(name: "L", books: [books[1]]))
            }
            // Deny inside a write: the change throws and the transaction is abandoned.
            #expect(throws: StrataError.deleteDenied(record: "Library#\(library.rawValue)", relationship: "books", count: 1)) {
                try store.write { transaction in
                    try transaction.delete(books[2])
                    try transaction.delete(library)
                }
            }
            let context = Context(store)
            #expect(try context.record(for: author)?.books == books)
            #expect(throws: StrataError.danglingReference(record: "Book#4", relationship: "author", destination: "Author#77")) {
                try store.write { transaction in _ = try transaction.insert(Book(title: "X", author: RecordID(rawValue: 77))) }
            }
            // Cascade through Store.write.
            try store.write { transaction in
                try transaction.update(library, to: Library(name: "L"))
                #expect(try transaction.delete(author))
                #expect(try !transaction.delete(author))
            }
            #expect(try context.fetchCount(FetchDescriptor<Book>()) == 0)
            #expect(try context.fetchCount(FetchDescriptor<Chapter>()) == 0)
        }
    }

    /// Random changes to authors and books through contexts, checked after every save against
    /// the rule that both sides agree: `book.author == a` exactly when `a.books` lists `book`.
    @Test func randomChangesKeepBothSidesConsistent() throws {
        let seed = SeededRandom.seed(default: 0x5EED_0003)
        print("RelationshipTests.randomChangesKeepBothSidesConsistent seed: \(seed)")
        var random = SeededRandom(seed: seed)
        try withStore { store, _ in
            let context = Context(store)
            var authors: [RecordID<Author>] = [], books: [RecordID<Book>] = []
            for round in 0..<60 {
                for _ in 0..<Int.random(in: 1...6, using: &random) {
                    switch Int.random(in: 0..<10, using: &random) {
                    case 0..<2: authors.append(try context.insert(Author(name: "A\(round)")))
                    case 2..<4:
                        books.append(try context.insert(Book(title: "B\(round)", author: authors.randomElement(using: &random))))
                    case 4..<6:
                        guard let book = books.randomElement(using: &random) else { continue }
                        try context.update(book, to: Book(title: "moved", author: authors.randomElement(using: &random)))
                    case 6..<8:
                        guard let author = authors.randomElement(using: &random) else { continue }
                        let picked = books.filter { _ in Int.random(in: 0..<4, using: &random) == 0 }
                        try context.update(author, to: Author(name: "listed", books: picked))
                    case 8:
                        guard let index = books.indices.randomElement(using: &random) else { continue }
                        try context.delete(books.remove(at: index))
                    default:
                        guard let index = authors.indices.randomElement(using: &random) else { continue }
                        try context.delete(authors.remove(at: index))  // cascades to its books
                    }
                }
                try context.save()
                let storedAuthors = try context.fetch(FetchDescriptor<Author>())
                let storedBooks = try context.fetch(FetchDescriptor<Book>())
                let bookIDs = Set(storedBooks.map(\.id))
                authors = storedAuthors.map(\.id)
                books = storedBooks.map(\.id)
                for author in storedAuthors {
                    #expect(Set(author.books).count == author.books.count, "round \(round), seed \(seed)")
                    for book in author.books {
                        #expect(bookIDs.contains(book), "round \(round): \(author.id) lists a missing \(book), seed \(seed)")
                    }
                }
                for book in storedBooks {
                    let listing = storedAuthors.filter { $0.books.contains(book.id) }.map(\.id)
                    #expect(listing == (book.author.map { [$0] } ?? []), "round \(round): \(book.id), seed \(seed)")
                }
            }
        }
    }
}
