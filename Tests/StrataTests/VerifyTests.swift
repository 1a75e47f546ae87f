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

/// `Store.verify()`: every page, tree, index, the catalog and the journal checked, every
/// problem reported with the file and offset at fault.
@Suite struct VerifyTests {
    struct Member: PersistentRecord, Equatable {
        var name: String
        var age: Int
        var note: String
        static var attributeOptions: [String: Attribute.Options] { ["age": [.indexed], "name": [.unique]] }
    }

    static func fill(_ folder: String, count: Int = 3_000) throws {
        var configuration = Store.Configuration()
        configuration.storage.segmentSize = 64 << 10  // several segment files
        let store = try Store(at: folder, for: [Member.self, Note.self], configuration: configuration)
        try store.write(author: "fill") { transaction in
            for index in 0..<count {
                try transaction.insert(Member(name: "m\(index)", age: index % 70, note: String(repeating: "n", count: 40 + index % 50)))
            }
        }
        let context = Context(store, author: "edit")
        for index in stride(from: 0, to: count, by: 7) { try context.delete(RecordID<Member>(rawValue: UInt64(index + 1))) }
        _ = try context.insert(Note(title: "t", body: "b", rank: 1))
        try context.save()
        try store.close()
    }

    @Test func aSoundStoreHasNoProblemAndEverythingIsCounted() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try Self.fill(folder)
        let store = try Store(at: folder, for: [Member.self, Note.self])
        let report = try store.verify()
        #expect(report.isValid, "\(report)")
        let members = 3_000 - (3_000 + 6) / 7
        #expect(report.records == members + 1)
        #expect(report.indexEntries == 2 * members)  // age (indexed) and name (unique)
        #expect(report.historyParts >= 2)
        #expect(report.pages > 50)
        try store.close()
    }

    /// Flips the byte at `position` of the file at `path` (again to restore it).
    static func flip(_ path: String, at position: Int) {
        flipByte(inFileAt: path, at: position)
    }

    @Test func aDamagedFrameIsReportedWithItsFileAndOffset() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try Self.fill(folder)
        // One byte damaged at a time, at several places of every segment file: a byte of a live
        // frame must be reported at that file, at the start of the frame holding it; a byte of
        // a frame no page refers to any more (replaced) is no problem.
        let segments = try FileManagerLite.names(in: folder).filter { $0.hasSuffix(".seg") }.sorted()
        #expect(!segments.isEmpty)
        var detected = 0, tried = 0
        for name in segments {
            let path = folder + "/" + name
            let size = FileManagerLite.size(of: path)
            for fraction in [0.3, 0.5, 0.7, 0.9] {
                let position = Int(Double(size) * fraction)
                guard position > 64 else { continue }
                tried += 1
                Self.flip(path, at: position)
                let store = try Store(at: folder, for: [Member.self, Note.self])  // opening reads no data page
                let report = try store.verify()
                try store.close()
                Self.flip(path, at: position)
                guard !report.isValid else { continue }
                detected += 1
                // Frames are checked first: the first problem is the damaged frame; what follows
                // are its consequences (a tree cut short, an index missing entries).
                let frame = report.problems[0]
                #expect(frame.file == path, "\(report)")
                #expect(frame.offset.map { $0 <= UInt64(position) && UInt64(position) - $0 < 64 << 10 } == true, "byte \(position): \(report)")
                #expect(frame.what.hasPrefix("page "), "\(report)")
            }
        }
        #expect(detected >= tried / 4, "\(detected) of \(tried) damaged bytes reported")
        // Restored: sound again.
        let store = try Store(at: folder, for: [Member.self, Note.self])
        #expect(try store.verify().isValid)
        try store.close()
    }

    @Test func aReadOnlyStoreVerifiesWhileTheWriterHasItOpen() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        try Self.fill(folder, count: 500)
        let writer = try Store(at: folder, for: [Member.self, Note.self])
        try writer.write { _ = try $0.insert(Note(title: "later", body: "", rank: 2)) }
        var configuration = Store.Configuration()
        configuration.isReadOnly = true
        let reader = try Store(at: folder, for: [Member.self, Note.self], configuration: configuration)
        let report = try reader.verify()
        #expect(report.isValid, "\(report)")
        #expect(report.records == 500 - (500 + 6) / 7 + 2)
        #expect(try writer.verify().isValid)
        try reader.close()
        try writer.close()
    }
}

/// What the tests need of the file system, without Foundation's FileManager.
enum FileManagerLite {
    static func names(in folder: String) throws -> [String] {
        struct OpenError: Error {}
        guard let directory = opendir(folder) else { throw OpenError() }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafePointer(to: entry.pointee.d_name) { $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) } }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    static func size(of path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : 0
    }
}
