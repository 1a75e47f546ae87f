import Testing
@_spi(Engine) import Strata
import StrataTestSupport

/// The README example, verbatim except for the folder, with its claims checked.
@Suite struct ReadmeExampleTests {
    @Test func theReadmeExampleWorks() throws {
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }

        let store = try PageStore.open(at: folder + "/example-store")
        let id = try store.write { transaction in
            let id = try transaction.allocatePageID()
            try transaction.write(pageID: id, bytes: Array("Last123, First456".utf8))
            return id
        }
        try store.write(durability: .relaxed) { transaction in
            try transaction.write(pageID: id, bytes: Array("Last124, First457".utf8))
        }
        let bytes = try store.read(pageID: id)
        #expect(String(decoding: bytes ?? [], as: UTF8.self) == "Last124, First457")
        do {
            try store.write { transaction in
                try transaction.write(pageID: id, bytes: [0])
                throw CancellationError()
            }
            Issue.record("the throwing body was committed")
        } catch {
            #expect(error is CancellationError)
        }
        #expect(try store.read(pageID: id) == bytes)
        try store.close()

        let reopened = try PageStore.open(at: folder + "/example-store")
        #expect(reopened.recoveryReport.replayedBytes == 0)
        #expect(try reopened.read(pageID: id) == bytes)
        try reopened.close()
    }
}
