import Testing
@_spi(Engine) import Strata
import StrataTestSupport

@Suite struct PageStoreTests {
    @Test func roundTripsThroughThePublicEngineAPI() throws {
        let directory = try temporaryDirectory()
        defer { removeDirectory(directory) }
        var options = PageStore.Options()
        options.segmentSize = 1 << 20
        var random = SeededRandom(seed: 41)
        var expected: [UInt64: [UInt8]] = [:]
        do {
            let store = try PageStore.open(at: directory, options: options)
            for _ in 0..<20 {
                try store.write(durability: .relaxed) { txn in
                    for _ in 0..<10 {
                        let id = try txn.allocatePageID()
                        let bytes = random.recordLikeBytes(16 << 10)
                        try txn.write(pageID: id, bytes: bytes)
                        expected[id] = bytes
                    }
                }
            }
            #expect(throws: StrataError.locked(path: directory)) { _ = try PageStore.open(at: directory) }
            #expect(throws: StrataError.invalidPageID(1 << 30)) { try store.write { try $0.write(pageID: 1 << 30, bytes: [1]) } }
            try store.close()
            #expect(throws: StrataError.closed) { _ = try store.read(pageID: 16) }
        }
        let store = try PageStore.open(at: directory, options: options)
        #expect(store.recoveryReport.replayedTransactions == 0)
        #expect(store.statistics.pageCount == expected.count)
        // Record-like pages are stored compressed.
        #expect(store.statistics.logBytes < UInt64(expected.count * (16 << 10)) * 3 / 4)
        for (id, bytes) in expected { #expect(try store.read(pageID: id) == bytes) }
        try store.close()
    }

    @Test func errorsReadWell() {
        let error = StrataError.corruption(file: "/s/0000000000000001.seg", offset: 4096, reason: "frame checksum mismatch")
        #expect(error.description == "corruption in /s/0000000000000001.seg at offset 4096: frame checksum mismatch")
        #expect(StrataError.io(operation: "pwrite", path: "/s/x", offset: 0, errno: 28, reason: "").isOutOfSpace)
    }
}
