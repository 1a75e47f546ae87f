#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import StrataFormat
import StrataIO
import StrataPageLog
import StrataRecords
import StrataSchema
import StrataTestSupport

/// The journal's updates and deletes are written from the records' bytes (`RecordChanges`);
/// these tests hold them to what decoding the records into values, comparing the values and
/// encoding the changed ones gives — the way the journal was written before, kept here as the
/// reference (`Reference`) — byte for byte: no format change.
@Suite struct HistoryJournalBytesTests {
    typealias Values = [UInt32: Value]

    /// The journal as it was written from values: an update's changed properties with their
    /// old and new values, a delete's tombstone (HistoryRecorder before it compared bytes).
    enum Reference {
        static func update(entityID: UInt32, id: UInt64, old: [UInt8], new: [UInt8], visible: Values?) throws -> HistoryOperation? {
            guard old != new else { return nil }
            let before = try RecordCodec.decodeFields(old), after = try RecordCodec.decodeFields(new)
            var changed: [UInt32] = [], oldFields: [(id: UInt32, value: Value)] = [], newFields: [(id: UInt32, value: Value)] = []
            func compare(_ id: UInt32, _ stored: Value?, _ written: Value?) {
                var oldValue = stored ?? .null, newValue = written ?? .null
                if let visible {
                    guard let absent = visible[id] else { return }
                    if stored == nil { oldValue = absent }
                    if written == nil { newValue = absent }
                }
                guard oldValue != newValue else { return }
                changed.append(id)
                if !oldValue.isNull { oldFields.append((id, oldValue)) }
                if !newValue.isNull { newFields.append((id, newValue)) }
            }
            var i = 0, j = 0
            while i < before.count || j < after.count {
                if j == after.count || (i < before.count && before[i].id < after[j].id) {
                    compare(before[i].id, before[i].value, nil); i += 1
                } else if i == before.count || after[j].id < before[i].id {
                    compare(after[j].id, nil, after[j].value); j += 1
                } else {
                    compare(before[i].id, before[i].value, after[j].value); i += 1; j += 1
                }
            }
            guard !changed.isEmpty else { return nil }
            return .update(entityID: entityID, id: id, changed: changed,
                           old: RecordCodec.encode(fields: oldFields), new: RecordCodec.encode(fields: newFields))
        }

        static func delete(entityID: UInt32, id: UInt64, old: [UInt8], kept: Set<UInt32>?, visible: Values?) throws -> HistoryOperation {
            var tombstone: [UInt8] = []
            if let kept, !kept.isEmpty {
                let stored = Dictionary(try RecordCodec.decodeFields(old).map { ($0.id, $0.value) }, uniquingKeysWith: { first, _ in first })
                tombstone = RecordCodec.encode(fields: kept.sorted().compactMap { id in
                    guard let value = stored[id] ?? visible?[id], !value.isNull else { return nil }
                    return (id: id, value: value)
                })
            }
            return .delete(entityID: entityID, id: id, tombstone: tombstone)
        }
    }

    /// Per entity, the bound version's properties and their defaults (entity 2 has none:
    /// compared as stored). Attributes 4 and 7 are in stored records but not in entity 1's
    /// version (removed attributes); 2, 3 and 8 read as a default when absent.
    static let visible: [UInt32: Values] = [
        1: [1: .null, 2: .int(7), 3: .string("d\u{E9}j\u{E0}"), 5: .null, 6: .null, 8: .bool(false)],
        3: [1: .null, 2: .null, 3: .string("K"), 4: .null, 5: .null, 6: .null, 7: .null, 8: .null],
    ]
    /// Per entity, the attributes a delete keeps (entity 3 keeps none).
    static let tombstones: [UInt32: Set<UInt32>] = [1: [2, 3, 4, 6], 2: [1, 3, 5, 8]]

    /// Values chosen to collide: equal values spelled differently (composed and decomposed
    /// accents, the Kelvin sign and K), -0.0 and 0.0, NaN, data and codable of the same bytes,
    /// references in another order, the entities' defaults, and values too large for a leaf.
    static func randomValue(_ random: inout SeededRandom) -> Value {
        switch Int.random(in: 0..<16, using: &random) {
        case 0: return .bool(Bool.random(using: &random))
        case 1: return .int([0, 1, 7, -1, 300, Int64.min].randomElement(using: &random) ?? 0)
        case 2: return .double([0.0, -0.0, .nan, 1.5, .infinity].randomElement(using: &random) ?? 0)
        case 3: return .string(["d\u{E9}j\u{E0}", "de\u{301}ja\u{300}", "K", "\u{212A}", "plain", "", "\u{1F600}"]
            .randomElement(using: &random) ?? "")
        case 4: return .string(String(repeating: "x", count: Int.random(in: 0...200, using: &random)))
        case 5: return .data([1, 2, 3])
        case 6: return .codable([1, 2, 3])
        case 7: return .data(random.bytes(Int.random(in: 0...300, using: &random)))
        case 8: return .date(Date(timeIntervalSinceReferenceDate: [0.0, -0.0, 1e9].randomElement(using: &random) ?? 0))
        case 9: return .uuid(UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, UInt8.random(in: 0...1, using: &random))))
        case 10: return .references([[1], [1, 2], [2, 1], [300]].randomElement(using: &random) ?? [1])
        case 11: return .int(Int64.random(in: -1000...1000, using: &random))
        default: return .null
        }
    }

    static func randomRecord(_ random: inout SeededRandom) -> Values {
        var values: Values = [:]
        for id in UInt32(1)...8 where Bool.random(using: &random) { values[id] = randomValue(&random) }
        return values.filter { !$0.value.isNull }  // as stored: a null is an absent value
    }

    /// An update of `values`: some attributes kept, some changed, some removed, some set to a
    /// value equal to the old one but spelled differently.
    static func randomUpdate(of values: Values, _ random: inout SeededRandom) -> Values {
        var result = values
        for id in UInt32(1)...8 {
            switch Int.random(in: 0..<6, using: &random) {
            case 0, 1: break
            case 2: result[id] = randomValue(&random)
            case 3: result[id] = nil
            case 4:
                if case .string(let text)? = values[id] {
                    result[id] = .string(text == "d\u{E9}j\u{E0}" ? "de\u{301}ja\u{300}" : text == "K" ? "\u{212A}" : text)
                }
            default: result[id] = (Self.visible[1]?[id]).flatMap { $0.isNull ? nil : $0 }
            }
        }
        return result.filter { !$0.value.isNull }
    }

    /// A seeded sequence of transactions of inserts, updates and deletes over three entities,
    /// journaled: every entry equals, byte for byte, the entry the values give (inserts in runs,
    /// updates and deletes as `Reference` writes them); the entries decode to what the values say.
    @Test func journalEqualsTheValuesPath() throws {
        let seed = SeededRandom.seed(default: 0x20_4A0C)
        print("journalEqualsTheValuesPath seed \(seed)")
        var random = SeededRandom(seed: seed)
        let store = RecordStore(log: try PageLog.open(directory: "/s", fileSystem: MemoryFileSystem(), options: RecordStoreTests.options()),
                                treeOptions: RecordStoreTests.treeOptions())
        let visibleDefaults = Self.visible.mapValues { RecordDefaults($0) }
        var model: [UInt32: [UInt64: Values]] = [:]
        var expected: [[HistoryOperation]] = []
        var updates = 0, unchangedUpdates = 0, deletes = 0, overflowing = 0
        for number in 0..<60 {
            var operations: [HistoryOperation] = []
            var run: (entity: UInt32, first: UInt64, count: UInt64)?
            func flushRun() {
                if let current = run { operations.append(.insert(entityID: current.entity, firstID: current.first, count: current.count)) }
                run = nil
            }
            try store.write { transaction in
                let recorder = transaction.journal(author: "test", timestamp: Int64(number))
                // The defaults made once and shared by every transaction, as a store gives them.
                recorder.visibleDefaults = visibleDefaults
                recorder.tombstoneAttributes = Self.tombstones
                for _ in 0..<Int.random(in: 1...40, using: &random) {
                    let entity = UInt32.random(in: 1...3, using: &random)
                    let tree = transaction.tree(for: entity, schemaVersion: 1)
                    let existing = model[entity]?.keys.sorted().randomElement(using: &random)
                    switch (Int.random(in: 0..<10, using: &random), existing) {
                    case (0..<4, _), (_, nil):
                        let id = transaction.allocateRowID(for: entity)
                        let values = Self.randomRecord(&random)
                        try tree.insert(id, bytes: RecordCodec.encode(values))
                        model[entity, default: [:]][id] = values
                        if let current = run, current.entity == entity, current.first + current.count == id {
                            run?.count += 1
                        } else {
                            flushRun()
                            run = (entity, id, 1)
                        }
                    case (4..<8, let id?):
                        let old = model[entity]?[id] ?? [:]
                        let new = Self.randomUpdate(of: old, &random)
                        let oldBytes = RecordCodec.encode(old), newBytes = RecordCodec.encode(new)
                        if oldBytes.count > 200 || newBytes.count > 200 { overflowing += 1 }
                        #expect(try tree.update(id, bytes: newBytes))
                        model[entity]?[id] = new
                        updates += 1
                        if let operation = try Reference.update(entityID: entity, id: id, old: oldBytes, new: newBytes, visible: Self.visible[entity]) {
                            flushRun()
                            operations.append(operation)
                            try Self.checkUpdate(operation, old: old, new: new, visible: Self.visible[entity])
                        } else {
                            unchangedUpdates += 1
                        }
                    case (_, let id?):
                        let old = model[entity]?[id] ?? [:]
                        #expect(try tree.delete(id))
                        model[entity]?[id] = nil
                        deletes += 1
                        flushRun()
                        operations.append(try Reference.delete(entityID: entity, id: id, old: RecordCodec.encode(old),
                                                               kept: Self.tombstones[entity], visible: Self.visible[entity]))
                    }
                }
            }
            flushRun()
            expected.append(operations)
        }
        print("journalEqualsTheValuesPath: \(updates) updates (\(unchangedUpdates) changing no value), \(deletes) deletes, "
            + "\(overflowing) updates of records overflowing their leaf")
        #expect(updates > 300 && unchangedUpdates > 10 && deletes > 100 && overflowing > 10)
        var entries: [HistoryEntry] = []
        try store.snapshot().historyEntries(after: 0, through: .max, backward: false) { entries.append($0); return true }
        let journaled = entries.map(\.operations)
        #expect(journaled.count == expected.filter { !$0.isEmpty }.count)
        for (index, (actual, wanted)) in zip(journaled, expected.filter { !$0.isEmpty }).enumerated() where actual != wanted {
            let difference = zip(actual, wanted).first { $0 != $1 }.map { "\($0)" } ?? "none"
            Issue.record(Comment(rawValue: "entry \(index): \(actual.count) operations, expected \(wanted.count); first difference \(difference)"))
        }
    }

    /// What an update's operation says, read as values: every changed property's value differs
    /// as the app reads it, the old and new records hold exactly those values, and every other
    /// property reads the same.
    static func checkUpdate(_ operation: HistoryOperation, old: Values, new: Values, visible: Values?) throws {
        guard case .update(_, _, let changed, let oldBytes, let newBytes) = operation else {
            Issue.record("\(operation) is not an update")
            return
        }
        let oldValues = try RecordCodec.decode(oldBytes), newValues = try RecordCodec.decode(newBytes)
        func read(_ values: Values, _ id: UInt32) -> Value { values[id] ?? visible?[id] ?? .null }
        let properties = visible.map { Set($0.keys) } ?? Set(old.keys).union(new.keys)
        for id in properties.sorted() {
            if changed.contains(id) {
                #expect(read(old, id) != read(new, id))
                #expect((oldValues[id] ?? .null) == read(old, id))
                #expect((newValues[id] ?? .null) == read(new, id))
            } else {
                #expect(read(old, id) == read(new, id))
            }
        }
        #expect(Set(changed).isSubset(of: properties))
        #expect(Set(oldValues.keys).isSubset(of: changed) && Set(newValues.keys).isSubset(of: changed))
    }

    /// A stored record that is not a valid record: the journaled update throws what decoding
    /// it throws (the stored record checked before the written one), the delete too, and the
    /// store is left as it was.
    @Test func invalidStoredRecordThrowsItsDecodingError() throws {
        let store = RecordStore(log: try PageLog.open(directory: "/s", fileSystem: MemoryFileSystem(), options: RecordStoreTests.options()),
                                treeOptions: RecordStoreTests.treeOptions())
        let corrupt: [UInt8] = [1, 2, 1, 3, 2, 1, 3, 4]  // attribute 1 given twice
        let alsoCorrupt: [UInt8] = [1, 1, 2, 0]  // a null tag
        try store.write { transaction in
            let tree = transaction.tree(for: 1, schemaVersion: 1)
            try tree.insert(1, bytes: corrupt)
        }
        func reason(_ bytes: [UInt8]) -> String? {
            do { _ = try RecordCodec.decodeFields(bytes); return nil } catch { return error.reason }
        }
        let expectedReason = try #require(reason(corrupt))
        #expect(reason(alsoCorrupt) != nil && reason(alsoCorrupt) != expectedReason)
        let before = try RecordStoreTests.contents(store)
        for change in 0..<3 {
            #expect(throws: RecordTreeError.invalidRecord(entityID: 1, recordID: 1, reason: expectedReason)) {
                try store.write { transaction in
                    let recorder = transaction.journal(author: nil, timestamp: 1)
                    recorder.tombstoneAttributes = [1: [1]]
                    let tree = transaction.tree(for: 1, schemaVersion: 1)
                    switch change {
                    case 0: try tree.update(1, bytes: RecordCodec.encode([1: .int(5)]))
                    case 1: try tree.update(1, bytes: alsoCorrupt)
                    default: try tree.delete(1)
                    }
                }
            }
        }
        #expect(try RecordStoreTests.contents(store) == before)
    }

    /// The journal is read in order only, so its leaves are stored as one LZ4 block each
    /// (codec 1; raw when LZ4 would not save an eighth), never for partial reads as the
    /// entities' leaves are (codec 3, FileFormat.md "Codecs"); they read back as written.
    @Test func journalLeavesAreCompressedWhole() throws {
        let seed = SeededRandom.seed(default: 0x10_7A5)
        print("journalLeavesAreCompressedWhole seed \(seed)")
        var random = SeededRandom(seed: seed)
        let fs = MemoryFileSystem()
        // The default options: parts (up to 1,900 bytes) stay inline in the journal's leaves.
        let store = RecordStore(log: try PageLog.open(directory: "/s", fileSystem: fs, options: RecordStoreTests.options()), treeOptions: RecordTreeOptions())
        func record(_ number: Int, _ round: Int) -> [UInt8] {
            RecordCodec.encode([1: .string("item \(number) round \(round) " + String(repeating: "x", count: number % 40)), 2: .int(Int64(round))])
        }
        let count = 400
        try store.write { transaction in
            _ = transaction.journal(author: nil, timestamp: 1)
            let tree = transaction.tree(for: 1, schemaVersion: 1)
            for number in 1...count { try tree.insert(transaction.allocateRowID(for: 1), bytes: record(number, 0)) }
        }
        var expected: [[UInt64]] = []
        for round in 1...6 {
            var ids: [UInt64] = []
            try store.write { transaction in
                _ = transaction.journal(author: nil, timestamp: Int64(round + 1))
                let tree = transaction.tree(for: 1, schemaVersion: 1)
                for number in 1...count where Int.random(in: 0..<3, using: &random) > 0 {
                    if try tree.update(UInt64(number), bytes: record(number, round)) { ids.append(UInt64(number)) }
                }
            }
            expected.append(ids)
        }
        // Every page frame: the journal's (entity 0xFFFFFFFF) compressed whole, the entity's in blocks.
        var codecs: [UInt32: Set<String>] = [:]
        for name in try fs.contentsOfDirectory("/s") where name.hasSuffix(".seg") {
            let file = try fs.openFile("/s/" + name, create: false)
            let bytes = try file.read(count: Int(try file.size()), at: 0)
            var offset = SegmentHeader.size
            while offset + FrameHeader.size <= bytes.count,
                  let header = try? bytes.withUnsafeBytes({ try FrameHeader.decode(UnsafeRawBufferPointer(rebasing: $0[offset...])) }),
                  header.frameLength > 0, offset + header.frameLength <= bytes.count {
                if header.kind == .page { codecs[header.entityID, default: []].insert("\(header.codec)") }
                offset += header.frameLength
            }
        }
        let journal = codecs[RecordTransaction.historyEntityID] ?? []
        #expect(journal.contains("lz4") && !journal.contains("lz4Blocks"), "journal frames: \(codecs)")
        #expect(codecs[1]?.contains("lz4Blocks") == true, "entity frames: \(codecs)")
        // And the journal reads back: the insert run, then each round's updates in order.
        var read: [[UInt64]] = []
        try store.snapshot().historyEntries(after: 1, through: .max, backward: false) { entry in
            read.append(entry.operations.compactMap { if case .update(1, let id, [1, 2], _, _) = $0 { id } else { nil } })
            return true
        }
        #expect(read == expected)
    }

    /// An update to a record too large for its leaf, of a stored record that does not decode:
    /// the new record's overflow pages are written before the journal compares the two, and
    /// freed when it throws — a caller that catches the error and commits leaves no page behind.
    @Test func aFailedJournaledUpdateLeavesNoOverflowPages() throws {
        let store = RecordStore(log: try PageLog.open(directory: "/s", fileSystem: MemoryFileSystem(), options: RecordStoreTests.options()),
                                treeOptions: RecordStoreTests.treeOptions())
        let corrupt: [UInt8] = [1, 2, 1, 3, 2, 1, 3, 4]  // attribute 1 given twice
        try store.write { transaction in try transaction.tree(for: 1, schemaVersion: 1).insert(1, bytes: corrupt) }
        let pagesBefore = store.log.statistics.pageCount
        let large = RecordCodec.encode([1: .data([UInt8](repeating: 7, count: 5_000))])
        #expect(large.count > RecordStoreTests.treeOptions().maximumInlineRecord)
        var caught: RecordTreeError?
        try store.write { transaction in
            _ = transaction.journal(author: nil, timestamp: 1)
            do { try transaction.tree(for: 1, schemaVersion: 1).update(1, bytes: large) } catch let error as RecordTreeError { caught = error }
        }
        guard case .invalidRecord(1, 1, _)? = caught else {
            Issue.record("the update threw \(String(describing: caught)), not invalidRecord")
            return
        }
        #expect(store.log.statistics.pageCount == pagesBefore)
        #expect(try RecordStoreTests.contents(store) == [1: [1: corrupt]])
    }
}
