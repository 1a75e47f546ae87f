import Testing
import StrataFormat
import StrataRecords
import StrataSchema

/// The store root's two versions, byte for byte (Docs/FileFormat.md, "Store root" and the
/// index keys' worked example).
@Suite struct StoreRootTests {
    static func hex(_ text: String) -> [UInt8] {
        let digits = Array(text.filter(\.isHexDigit))
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
    }

    static let version2 = hex("""
        53524f54 0200 0000 1000000000000000 01000000 01000000
        01000000 00000000 1100000000000000 0200000000000000 0300000000000000
        01000000 02000000 1200000000000000 0200000000000000 01000000 01000000 00
        """)

    static func exampleRoot() -> StoreRoot {
        var root = StoreRoot()
        root.catalogPageID = 16
        root.entities[1] = StoreRoot.EntityTree(tree: RecordTreeRoot(rootPageID: 17, count: 2), nextRowID: 3)
        root.indexes[StoreRoot.IndexID(entityID: 1, attributeID: 2)] =
            StoreRoot.Index(isUnique: true, defaultKey: IndexKey.nullKey, tree: RecordTreeRoot(rootPageID: 18, count: 2))
        return root
    }

    @Test func theWorkedExamplesBytes() throws {
        #expect(Self.version2.count == 89)
        #expect(Self.exampleRoot().encoded() == Self.version2)
        #expect(try StoreRoot.decode(Self.version2) == Self.exampleRoot())
        // Without indexes the root is written as version 1, which every reader reads.
        var withoutIndexes = Self.exampleRoot()
        withoutIndexes.indexes = [:]
        let version1 = withoutIndexes.encoded()
        #expect(Array(version1[4..<6]) == [1, 0] && version1.count == 56)
        #expect(try StoreRoot.decode(version1) == withoutIndexes)
        // Keys of the worked example.
        #expect(IndexKey.encode(.int(5)) == Self.hex("02 8000000000000005"))
        #expect(IndexKey.encode(.double(1.0)) == Self.hex("03 bff0000000000000"))
        #expect(IndexKey.encode(.double(-1.0)) == Self.hex("03 400fffffffffffff"))
        #expect(IndexKey.encode(.string("e\u{301}")) == Self.hex("04 c3a9 0001"))
        #expect(IndexKey.encode(.data([0, 0x41])) == Self.hex("05 00ff 41 0001"))
        #expect(IndexKey.entry(IndexKey.encode(.int(5)), id: 3) == Self.hex("02 8000000000000005 0000000000000003"))
    }

    /// Every field a reader checks: damaged roots are typed errors, never traps.
    @Test func invalidRootsAreRejected() {
        func damaged(_ change: (inout [UInt8]) -> Void) -> [UInt8] {
            var bytes = Self.version2
            change(&bytes)
            return bytes
        }
        let cases: [(String, [UInt8])] = [
            ("index count in version 1", damaged { $0[4] = 1 }),
            ("version 3", damaged { $0[4] = 3 }),
            ("entry count does not match the records", damaged { $0[72] = 3 }),
            ("unknown flag", damaged { $0[80] = 3 }),
            ("default key longer than the bytes", damaged { $0[84] = 2 }),
            ("empty default key", damaged { $0[84] = 0 }),
            ("bytes after the last index", damaged { $0.append(0) }),
            ("cut short", Array(Self.version2.dropLast())),
            ("root page 0 with entries", damaged { $0[64] = 0 }),
            ("version 2 without indexes", damaged { $0[20] = 0; $0.removeLast(33) }),
        ]
        for (what, bytes) in cases {
            #expect(throws: FormatError.self, "\(what)") { try StoreRoot.decode(bytes) }
        }
        // Every truncation is an error, never a trap.
        for length in 0..<Self.version2.count {
            #expect(throws: FormatError.self) { try StoreRoot.decode(Array(Self.version2.prefix(length))) }
        }
    }

    /// Version 5: written while an entity's tree may hold leaves a migration stored
    /// uncompressed (invariant 29), with every optional section; back to the older versions
    /// once no entity is flagged.
    @Test func version5CarriesEntityFlagsAndItsSectionsFlags() throws {
        var root = Self.exampleRoot()
        root.entities[1]?.hasUncompressedLeaves = true
        root.entities[4] = StoreRoot.EntityTree(tree: RecordTreeRoot(rootPageID: 20, count: 1), nextRowID: 2)
        let plain = root.encoded()
        #expect(Array(plain[4..<8]) == [5, 0, 0, 0])  // version 5, no history root, no migration marker
        #expect(Array(plain[28..<32]) == [1, 0, 0, 0] && Array(plain[60..<64]) == [0, 0, 0, 0])  // entity flags
        #expect(try StoreRoot.decode(plain) == root)
        #expect(try StoreRoot.decode(plain).entitiesWithUncompressedLeaves == [1])

        var history = HistoryRoot()
        history.nextToken = 7
        root.history = history
        let withHistory = root.encoded()
        #expect(Array(withHistory[4..<8]) == [5, 0, 2, 0])
        #expect(try StoreRoot.decode(withHistory) == root)
        root.migration = MigrationMarker(rollbackSegment: 1, rollbackOffset: 64, fromCatalogVersion: 1, stage: 0,
                                         targetChecksum: [UInt8](repeating: 9, count: 32))
        let withBoth = root.encoded()
        #expect(Array(withBoth[4..<8]) == [5, 0, 3, 0])
        #expect(try StoreRoot.decode(withBoth) == root)

        // Flags cleared: version 4 again (history), readable by readers that predate version 5.
        root.entities[1]?.hasUncompressedLeaves = false
        #expect(Array(root.encoded()[4..<8]) == [4, 0, 1, 0])
        #expect(try StoreRoot.decode(root.encoded()) == root)

        // Flags outside their versions, and unknown flags, are corruption.
        var v4WithFlag = root.encoded()
        v4WithFlag[28] = 1
        #expect(throws: FormatError.self) { try StoreRoot.decode(v4WithFlag) }
        var unknownEntityFlag = plain
        unknownEntityFlag[28] = 2
        #expect(throws: FormatError.self) { try StoreRoot.decode(unknownEntityFlag) }
        var unknownRootFlag = plain
        unknownRootFlag[6] = 4
        #expect(throws: FormatError.self) { try StoreRoot.decode(unknownRootFlag) }
        var historyFlagInVersion4 = root.encoded()
        historyFlagInVersion4[6] = 3
        #expect(throws: FormatError.self) { try StoreRoot.decode(historyFlagInVersion4) }
        var version6 = plain
        version6[4] = 6
        #expect(throws: FormatError.self) { try StoreRoot.decode(version6) }
    }

    /// Version 6: written only while the migration marker says a closure of the running stage
    /// flushed changes (its byte 5, reserved before, holds the flag); back to the older versions
    /// once the flag is cleared. Older readers refuse it as an unsupported version.
    @Test func version6FlagsAFlushedClosureInTheMarker() throws {
        var root = Self.exampleRoot()
        var marker = MigrationMarker(rollbackSegment: 1, rollbackOffset: 64, fromCatalogVersion: 1, stage: 0,
                                     targetChecksum: [UInt8](repeating: 9, count: 32))
        marker.phase = .switched
        root.migration = marker
        let unflagged = root.encoded()
        #expect(Array(unflagged[4..<6]) == [3, 0])  // a version 3 root, as before
        root.migration?.closureFlushed = true
        let flagged = root.encoded()
        #expect(Array(flagged[4..<8]) == [6, 0, 1, 0])  // version 6, a migration marker, no history
        #expect(flagged.count == unflagged.count)
        let markerStart = flagged.count - 80  // no shadows: the fixed 76 bytes and the retired count
        #expect(Array(flagged[markerStart..<markerStart + 6]) == Array("MIGR".utf8) + [2, 1])
        #expect(try StoreRoot.decode(flagged) == root)
        #expect(try StoreRoot.decode(flagged).migration?.closureFlushed == true)

        // With a history root and an entity flagged for uncompressed leaves: still version 6.
        var history = HistoryRoot()
        history.nextToken = 3
        root.history = history
        root.entities[1]?.hasUncompressedLeaves = true
        let full = root.encoded()
        #expect(Array(full[4..<8]) == [6, 0, 3, 0])
        #expect(try StoreRoot.decode(full) == root)

        // Cleared: version 5 (entity flag), then 4 (history), readable by older readers.
        root.migration?.closureFlushed = false
        #expect(Array(root.encoded()[4..<6]) == [5, 0])
        root.entities[1]?.hasUncompressedLeaves = false
        #expect(Array(root.encoded()[4..<6]) == [4, 0])
        #expect(try StoreRoot.decode(root.encoded()) == root)

        // The flag outside version 6, unknown marker flags, and version 6 without the flag are corruption.
        var flagInVersion3 = unflagged
        flagInVersion3[markerStart + 5] = 1
        #expect(throws: FormatError.self) { try StoreRoot.decode(flagInVersion3) }
        var unknownFlag = flagged
        unknownFlag[markerStart + 5] = 3
        #expect(throws: FormatError.self) { try StoreRoot.decode(unknownFlag) }
        var withoutFlag = flagged
        withoutFlag[markerStart + 5] = 0
        #expect(throws: FormatError.self) { try StoreRoot.decode(withoutFlag) }
        // Every truncation is an error, never a trap.
        for length in 0..<flagged.count {
            #expect(throws: FormatError.self) { try StoreRoot.decode(Array(flagged.prefix(length))) }
        }
    }
}
