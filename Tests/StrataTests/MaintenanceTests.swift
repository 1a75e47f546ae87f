#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import Strata
import StrataTestSupport

/// `Store.compact()` and `Store.checkpoint()`, for apps that turn automatic compaction off:
/// compaction gives back the space of overwritten records and keeps every record; a read-only
/// store refuses both.
@Suite struct MaintenanceTests {
    struct Note: PersistentRecord, Equatable {
        var title: String
        var body: String
    }

    /// Automatic compaction off, small segments (so a compaction has sealed ones to empty),
    /// and no journal: it would keep every version written as history (live data).
    static var configuration: Store.Configuration {
        var configuration = Store.Configuration()
        configuration.storage.automaticCompaction = false
        configuration.storage.segmentSize = 64 << 10
        configuration.history.isEnabled = false
        return configuration
    }

    @Test func compactGivesBackOverwrittenSpaceAndKeepsEveryRecord() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let configuration = Self.configuration
        let store = try Store(at: folder, for: [Note.self], configuration: configuration)
        var random = SeededRandom(seed: 0xC0FAC7)
        func note(_ index: Int, _ round: Int) -> Note {
            Note(title: "note \(index) round \(round)", body: String(decoding: random.recordLikeBytes(200), as: UTF8.self))
        }
        var expected: [RecordID<Note>: Note] = [:]
        try store.write { transaction in
            for index in 0..<2_000 {
                let value = note(index, 0)
                expected[try transaction.insert(value)] = value
            }
        }
        // Every record rewritten four times: the log holds mostly dead versions.
        for round in 1...4 {
            try store.write { transaction in
                for id in expected.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
                    let value = note(Int(id.rawValue), round)
                    try transaction.update(id, to: value)
                    expected[id] = value
                }
            }
        }
        try store.checkpoint()
        let before = folderBytes(folder)
        try store.compact()
        let after = folderBytes(folder)
        print("MaintenanceTests: \(before) bytes before compaction, \(after) after")
        #expect(after * 2 < before, "compaction kept \(after) of \(before) bytes")
        for (id, value) in expected { #expect(try Context(store).record(for: id) == value) }
        try store.close()

        let reopened = try Store(at: folder, for: [Note.self], configuration: configuration)
        #expect(try Context(reopened).fetchCount(FetchDescriptor<Note>()) == expected.count)
        for (id, value) in expected.prefix(200) { #expect(try Context(reopened).record(for: id) == value) }
        try reopened.close()

        var readOnly = configuration
        readOnly.isReadOnly = true
        let reader = try Store(at: folder, for: [Note.self], configuration: readOnly)
        #expect(throws: StrataError.readOnly) { try reader.compact() }
        #expect(throws: StrataError.readOnly) { try reader.checkpoint() }
        try reader.close()
    }

    /// The async forms run the same work off the cooperative pool.
    @Test func asyncFormsCompactAndCheckpoint() async throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let store = try Store(at: folder, for: [Note.self], configuration: Self.configuration)
        var random = SeededRandom(seed: 0xA5)
        let bodies = (0..<2_001).map { _ in String(decoding: random.recordLikeBytes(300), as: UTF8.self) }
        let body = bodies[0]
        let id = try await store.write { transaction in
            let id = try transaction.insert(Note(title: "first", body: body))
            for index in 1...2_000 { _ = try transaction.insert(Note(title: "filler \(index)", body: bodies[index])) }
            return id
        }
        try await store.write { transaction in
            for raw in 2...2_001 { try transaction.delete(RecordID<Note>(rawValue: UInt64(raw))) }
        }
        try await store.checkpoint()
        let before = folderBytes(folder)
        try await store.compact()
        #expect(folderBytes(folder) < before)
        #expect(try Context(store).record(for: id) == Note(title: "first", body: body))
        #expect(try Context(store).fetchCount(FetchDescriptor<Note>()) == 1)
        try store.close()
    }
}
