#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import StrataFormat
import StrataIO
import StrataTestSupport
@testable import StrataPageLog
@testable import StrataRecords
@testable import StrataSchema
@testable import Strata

// Decoder fuzzing (issue 6, item 2): every decoder fed random bytes and mutated valid encodings
// — bit flips, truncation, extension, splices, inflated length and count fields, overlong
// varints, zeroed and repeated ranges. Each must return a value or throw its typed error; where
// it returns a value, the value must survive a round trip (encoding it again decodes to an equal
// value), and every valid encoding must decode to what was encoded.

/// One decoder under test.
struct FuzzedDecoder {
    var name: String
    /// Valid encodings (from hand-built values and from a real store's pages).
    var seeds: [[UInt8]]
    /// Decodes; nil when the input is rejected, else a problem found with the decoded value
    /// ("" when none). Errors of the decoder's own types are returned as rejections by
    /// `typed`; any other error escapes and fails the campaign.
    var decode: ([UInt8]) throws -> String?

    init(_ name: String, seeds: [[UInt8]], decode: @escaping ([UInt8]) throws -> String?) {
        self.name = name
        self.seeds = seeds
        self.decode = decode
    }
}

/// Runs `body`, turning the errors a decoder is allowed to throw into `nil`.
func typed<T>(_ body: () throws -> T) throws -> T? {
    do { return try body() } catch is FormatError { return nil } catch is RecordCodingError { return nil }
}

/// A round trip: `value` encoded again must decode to an equal value.
func roundTrip<T: Equatable>(_ value: T, _ encode: (T) -> [UInt8], _ decode: ([UInt8]) throws -> T) -> String {
    let bytes = encode(value)
    do {
        let again = try decode(bytes)
        return again == value ? "" : "re-encoded value decodes differently: \(value) vs \(again)"
    } catch {
        return "re-encoded value does not decode: \(error)"
    }
}

/// Equality by description (values holding a NaN are not equal to themselves).
func same<T>(_ a: T?, _ b: T?) -> Bool { String(describing: a) == String(describing: b) }

/// The mutations of the campaign.
enum Mutation: CaseIterable {
    case bitFlips, truncate, extend, splice, inflateField, overlongVarint, zeroRange, repeatRange, randomBytes

    static func apply(_ seed: [UInt8], others: [[UInt8]], _ random: inout SeededRandom) -> (Mutation, [UInt8]) {
        let mutation = allCases[Int(random.next() % UInt64(allCases.count))]
        var bytes = seed
        func position(_ extra: Int = 0) -> Int { Int(random.next() % UInt64(bytes.count + 1 + extra)) }
        switch mutation {
        case .bitFlips:
            guard !bytes.isEmpty else { break }
            for _ in 0..<(1 + Int(random.next() % 4)) {
                let index = Int(random.next() % UInt64(bytes.count))
                bytes[index] ^= 1 << UInt8(random.next() % 8)
            }
        case .truncate:
            bytes = Array(bytes.prefix(position()))
        case .extend:
            bytes += random.bytes(1 + Int(random.next() % 64))
        case .splice:
            // A range replaced by a range of another valid encoding (or random bytes).
            let donor = others.isEmpty || random.next() % 4 == 0 ? random.bytes(Int(random.next() % 64)) : others[Int(random.next() % UInt64(others.count))]
            let start = position(), end = min(bytes.count, start + Int(random.next() % 64))
            let donorStart = Int(random.next() % UInt64(donor.count + 1))
            let donorEnd = min(donor.count, donorStart + Int(random.next() % 64))
            bytes.replaceSubrange(start..<end, with: donor[donorStart..<donorEnd])
        case .inflateField:
            // A length or count field made huge: 1, 2, 4 or 8 bytes at a random offset set to a
            // large value (all ones, the top bit, or a value just past the bytes present).
            guard !bytes.isEmpty else { break }
            let width = [1, 2, 4, 8][Int(random.next() % 4)]
            let start = Int(random.next() % UInt64(bytes.count))
            let values: [UInt64] = [.max, 1 << 63, UInt64(bytes.count + 1), 0x7FFF_FFFF, UInt64(1) << UInt64(8 * width - 1)]
            let value = values[Int(random.next() % UInt64(values.count))]
            for index in 0..<width where start + index < bytes.count {
                bytes[start + index] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(index)))
            }
        case .overlongVarint:
            // Continuation bytes past 64 bits, or a non-shortest form, inserted or overwritten.
            let forms: [[UInt8]] = [[UInt8](repeating: 0xFF, count: 10) + [0x01], [UInt8](repeating: 0xFF, count: 9) + [0x7F],
                                    [0x80, 0x80, 0x00], [0xFF, 0xFF, 0xFF, 0xFF, 0x0F], [UInt8](repeating: 0x80, count: 12)]
            let form = forms[Int(random.next() % UInt64(forms.count))]
            let start = position()
            if random.next() % 2 == 0 {
                bytes.insert(contentsOf: form, at: start)
            } else {
                bytes.replaceSubrange(start..<min(bytes.count, start + form.count), with: form)
            }
        case .zeroRange:
            let start = position(), end = min(bytes.count, start + 1 + Int(random.next() % 32))
            if start < end { bytes.replaceSubrange(start..<end, with: repeatElement(0, count: end - start)) }
        case .repeatRange:
            let start = position(), end = min(bytes.count, start + 1 + Int(random.next() % 32))
            if start < end { bytes.insert(contentsOf: bytes[start..<end], at: end) }
        case .randomBytes:
            bytes = random.bytes(Int(random.next() % 256))
        }
        return (mutation, bytes)
    }
}

// MARK: - The decoders

enum DecoderCatalog {
    static let storeID = StoreID(high: 0x0123_4567_89AB_CDEF, low: 0xFEDC_BA98_7654_3210)

    /// The pages of a real store, by what they hold.
    struct StorePages {
        var catalogs: [[UInt8]] = []
        var roots: [[UInt8]] = []
        var leaves: [[UInt8]] = []
        var interiors: [[UInt8]] = []
        var indexNodes: [[UInt8]] = []
        var records: [[UInt8]] = []
        var historyParts: [[UInt8]] = []
        var quarantineRoots: [[UInt8]] = []
        var quarantineEntries: [[UInt8]] = []
        var overflowReferences: [[UInt8]] = []
        var commits: [[UInt8]] = []
        var checkpoints: [[UInt8]] = []
        var chunks: [[UInt8]] = []
        var frames: [[UInt8]] = []
        var segmentHeaders: [[UInt8]] = []
        var superblocks: [[UInt8]] = []
    }

    static func pages(of store: FzStore) -> StorePages {
        var pages = StorePages()
        var quarantineTree: UInt64?
        var leavesByPage: [UInt64: [UInt8]] = [:]
        for (path, bytes) in store.files.sorted(by: { $0.key < $1.key }) {
            if path.hasSuffix("superblock") {
                pages.superblocks.append(Array(bytes.prefix(Superblock.encodedSize)))
                pages.superblocks.append(Array(bytes[Superblock.slotStride..<(Superblock.slotStride + Superblock.encodedSize)]))
                continue
            }
            guard path.hasSuffix(".seg") else { continue }
            pages.segmentHeaders.append(Array(bytes.prefix(SegmentHeader.size)))
            for frame in fzFrames(of: bytes) {
                if pages.frames.count < 40 { pages.frames.append(Array(bytes[frame.offset..<(frame.offset + frame.length)])) }
                let payload = frame.payload
                switch frame.header.kind {
                case .commit: pages.commits.append(payload)
                case .checkpoint: pages.checkpoints.append(payload)
                case .tableChunk: pages.chunks.append(payload)
                case .free: break
                case .page:
                    if frame.header.pageID == QuarantineRoot.pageID {
                        pages.quarantineRoots.append(payload)
                        if let root = try? QuarantineRoot.decode(payload) { quarantineTree = root.tree.rootPageID }
                    } else if payload.starts(with: SchemaCatalog.magic) {
                        pages.catalogs.append(payload)
                    } else if payload.starts(with: StoreRoot.magic) {
                        pages.roots.append(payload)
                    } else if payload.first == NodeKind.leaf.rawValue {
                        pages.leaves.append(payload)
                        leavesByPage[frame.header.pageID] = payload
                    } else if payload.first == NodeKind.interior.rawValue {
                        pages.interiors.append(payload)
                    } else if payload.first == IndexNode.Kind.leaf.rawValue || payload.first == IndexNode.Kind.interior.rawValue {
                        pages.indexNodes.append(payload)
                    }
                }
            }
        }
        // The entries of the leaves: records, history parts, quarantine entries, overflow
        // references.
        for (pageID, payload) in leavesByPage {
            guard let leaf = try? LeafNode.decode(payload) else { continue }
            for index in 0..<leaf.count {
                let bytes = Array(leaf.bytes(index))
                if leaf.isOverflow(index) { pages.overflowReferences.append(bytes); continue }
                if pageID == quarantineTree { pages.quarantineEntries.append(bytes); continue }
                if bytes.first == HistoryCodec.version && bytes.count > 1 && bytes[1] == 0 && (try? RecordCodec.decodeFields(bytes)) == nil {
                    pages.historyParts.append(bytes)
                } else {
                    pages.records.append(bytes)
                }
            }
        }
        return pages
    }

    static func encodedPart(timestamp: Int64?, author: String?, _ operations: [HistoryOperation]) -> [UInt8] {
        var writer = HistoryPartBuffer(capacity: 64)
        defer { writer.deallocate() }
        writer.append(HistoryCodec.version)
        writer.append(UInt8(0))
        if let timestamp {
            writer.append(timestamp)
            if let author {
                writer.appendVarint(UInt64(author.utf8.count + 1))
                Array(author.utf8).withUnsafeBytes { writer.append(raw: $0) }
            } else {
                writer.appendVarint(0)
            }
        }
        for operation in operations { HistoryCodec.append(operation, to: &writer) }
        return Array(writer.bytes)
    }

    static func decoders(_ pages: StorePages) -> [FuzzedDecoder] {
        let location = PageLocation(segment: 1, offset: 4_096, length: 120, lsn: 8)
        let superblock = Superblock(storeID: storeID, epoch: 3, checkpointLSN: 17, root: FrameAddress(segment: 1, offset: 4_096, length: 120))
        let header = SegmentHeader(storeID: storeID, segmentID: 2, previousSegmentID: 1, previousSegmentEnd: 65_536)
        let commit = CommitRecord(frameCount: 3, durableSegment: 1, durableOffset: 512, nextPageID: 40)
        let checkpoint = CheckpointRoot(lsn: 9, nextPageID: 30, chunkEntries: 4, chunks: [location, location],
                                        segments: [.init(segmentID: 1, totalBytes: 4_096, liveBytes: 2_000)])
        let record: [UInt32: Value] = [1: .string("item"), 2: .int(-5), 4: .double(2.5), 5: .date(Date(timeIntervalSince1970: 12)),
                                       6: .data([1, 2, 3]), 7: .uuid(UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16))),
                                       8: .references([3, 9, 4]), 9: .bool(true), 10: .codable(Array("{\"a\":1}".utf8))]
        var storeRoot = StoreRoot()
        storeRoot.catalogPageID = 1
        storeRoot.entities = [1: .init(tree: RecordTreeRoot(rootPageID: 5, count: 3), nextRowID: 4), 2: .init()]
        storeRoot.indexes = [.init(entityID: 1, attributeID: 2): .init(isUnique: true, defaultKey: [0], tree: RecordTreeRoot(rootPageID: 6, count: 3))]
        var history = HistoryRoot()
        history.tree = RecordTreeRoot(rootPageID: 7, count: 2)
        history.nextToken = 5
        history.horizon = 2
        history.consumers = ["widget": 3, "sync": 4]
        storeRoot.history = history
        var marker = MigrationMarker(phase: .streaming, rollbackSegment: 1, rollbackOffset: 4_096, fromCatalogVersion: 1, stage: 0,
                                     targetChecksum: [UInt8](repeating: 7, count: 32), pendingCatalogPage: 9,
                                     shadows: [1: .init(tree: RecordTreeRoot(rootPageID: 11, count: 2), nextRowID: 9, cursor: 3)])
        marker.retired = [RetiredTree(rootPageID: 12, height: 1, freedBelow: 4)]
        var migrating = storeRoot
        migrating.migration = marker
        // Version 5: an entity flagged for uncompressed leaves, with and without the sections.
        var deferring = migrating
        deferring.entities[1]?.hasUncompressedLeaves = true
        var deferringBare = StoreRoot()
        deferringBare.entities = [3: .init(tree: RecordTreeRoot(rootPageID: 8, count: 1), nextRowID: 2, hasUncompressedLeaves: true)]
        // Version 6: a migration whose closure flushed, with and without the other sections.
        var flushed = deferring
        flushed.migration?.closureFlushed = true
        var flushedBare = StoreRoot()
        flushedBare.migration = MigrationMarker(phase: .switched, rollbackSegment: 1, rollbackOffset: 64, fromCatalogVersion: 1, stage: 0,
                                                targetChecksum: [UInt8](repeating: 5, count: 32))
        flushedBare.migration?.closureFlushed = true
        var quarantine = QuarantineRoot()
        quarantine.tree = RecordTreeRoot(rootPageID: 9, count: 2)
        quarantine.nextSequence = 3
        let recordBytes = RecordCodec.encode(record)
        let operations: [HistoryOperation] = [.insert(entityID: 1, firstID: 4, count: 3),
                                              .update(entityID: 1, id: 2, changed: [1, 4], old: RecordCodec.encode([1: .string("a")]),
                                                      new: RecordCodec.encode([1: .string("b"), 4: .double(1)])),
                                              .delete(entityID: 2, id: 7, tombstone: RecordCodec.encode([1: .string("gone")])),
                                              .migration(entityID: 1, inserted: 1, updated: 2, deleted: 3), .schema(Schema.Version(2, 1, 0))]
        let itemLayout = RecordLayout(attributes: [("name", 1, .null), ("rank", 2, .null), ("note", 3, .string("")), ("score", 4, .null),
                                                   ("summary", 5, .string("-"))])
        let handLayout = RecordLayout(attributes: [("title", 1, .null), ("count", 2, .null), ("flag", 3, .bool(false))])
        let items = [FzV2.Item(name: "n", rank: 3, note: "", score: -0.0, summary: "s"),
                     FzV2.Item(name: "é", rank: .min, note: String(repeating: "z", count: 300), score: .infinity, summary: "")]
        func valid(_ seeds: [[UInt8]], _ decode: ([UInt8]) throws -> Any) -> [[UInt8]] { seeds.filter { (try? decode($0)) != nil } }
        var leaf = LeafNode()
        leaf.insert(4, bytes: recordBytes, overflow: false, at: 0)
        leaf.insert(9, bytes: OverflowReference(length: 5_000, chunks: [20, 21, 22]).encoded(), overflow: true, at: 1)
        let itemSeeds = items.compactMap { try? RecordEncoder().encode($0, attributeIDs: ["name": 1, "rank": 2, "note": 3, "score": 4, "summary": 5]) }
        let handSeeds = [HandCoded(title: "t", count: 3, flag: true), HandCoded(title: "", count: -9, flag: false)]
            .compactMap { try? RecordEncoder().encode($0, attributeIDs: ["title": 1, "count": 2, "flag": 3]) }

        return [
            FuzzedDecoder("superblock", seeds: [superblock.encoded()] + pages.superblocks) { bytes in
                try typed { try Superblock.decode(bytes) }.map { roundTrip($0, { $0.encoded() }, Superblock.decode) }
            },
            FuzzedDecoder("segment header", seeds: [header.encoded()] + pages.segmentHeaders) { bytes in
                try typed { try SegmentHeader.decode(bytes) }.map { roundTrip($0, { $0.encoded() }, SegmentHeader.decode) }
            },
            FuzzedDecoder("frame", seeds: pages.frames) { bytes in
                try typed { try bytes.withUnsafeBytes { try FrameCodec.decode($0) } }.map { decoded in
                    guard decoded.payload.count == Int(decoded.header.rawLength) else { return "payload of \(decoded.payload.count) bytes, header says \(decoded.header.rawLength)" }
                    // The frame rebuilt from what was decoded decodes to the same header and payload.
                    var rebuilt: [UInt8] = []
                    decoded.payload.withUnsafeBytes { payload in
                        _ = FrameCodec.append(kind: decoded.header.kind, pageID: decoded.header.pageID, lsn: decoded.header.lsn,
                                              entityID: decoded.header.entityID, schemaVersion: decoded.header.schemaVersion,
                                              payload: payload, compress: decoded.header.codec != .none,
                                              formatVersion: UInt16(decoded.header.formatVersion), to: &rebuilt)
                    }
                    guard let again = try? rebuilt.withUnsafeBytes({ try FrameCodec.decode($0) }) else { return "rebuilt frame does not decode" }
                    return again.payload == decoded.payload && again.header.pageID == decoded.header.pageID ? "" : "rebuilt frame differs"
                }
            },
            FuzzedDecoder("page (LZ4 halves)", seeds: lz4HalvesSeeds()) { bytes in
                // The stored payload of a format 2 frame in two blocks.
                guard let (header, stored) = pagePayload(bytes, codec: .lz4Halves) else { return nil }
                let length = Int(header.rawLength)
                return try typed { try stored.withUnsafeBytes { try FrameCodec.payload(header, stored: $0) } }.map { page in
                    page.count == length ? "" : "LZ4 halves of \(page.count) bytes, header says \(length)"
                }
            },
            FuzzedDecoder("page (LZ4 blocks)", seeds: lz4BlocksSeeds()) { bytes in
                // The stored payload of a format 3 frame stored for partial reads: decoded
                // whole, and block by block in part, as a partial read does.
                guard let (header, stored) = pagePayload(bytes, codec: .lz4Blocks) else { return nil }
                let length = Int(header.rawLength)
                return try typed {
                    try stored.withUnsafeBytes { raw -> String in
                        let page = try FrameCodec.payload(header, stored: raw)
                        guard page.count == length else { return "LZ4 blocks of \(page.count) bytes, header says \(length)" }
                        let layout = try FrameCodec.BlockLayout(rawLength: length, stored: raw)
                        guard Array(layout.prefix) == Array(page[0..<layout.prefixLength]) else { return "prefix differs from the page" }
                        // In part: no trap, and bytes or a typed error. (Not compared with the whole
                        // decode: on bytes no LZ4 compressor wrote, LZ4's partial and whole decoders
                        // may disagree — which is why a block's checksum is checked before either.)
                        for index in 0..<layout.blockCount {
                            var part = [UInt8](repeating: 0, count: layout.rawRange(index).count / 2)
                            let block = try layout.verifiedBlock(index, checked: true)
                            try part.withUnsafeMutableBytes { try layout.expand(block.bytes, block.entry, index: index, into: $0) }
                        }
                        return ""
                    }
                }
            },
            FuzzedDecoder("page (LZ4)", seeds: lz4Seeds()) { bytes in
                // The block, decoded as a frame payload the header says is LZ4.
                guard let (header, stored) = pagePayload(bytes, codec: .lz4) else { return nil }
                let length = Int(header.rawLength)
                return try typed { try stored.withUnsafeBytes { try FrameCodec.payload(header, stored: $0) } }.map { page in
                    guard page.count == length else { return "LZ4 page of \(page.count) bytes, header says \(length)" }
                    // Compressing the page again and decompressing gives it back.
                    var again = [UInt8](repeating: 0, count: LZ4Codec.bound(page.count))
                    guard let size = page.withUnsafeBytes({ source in again.withUnsafeMutableBytes { LZ4Codec.compress(source, into: $0) } }) else {
                        return page.isEmpty ? "" : "LZ4 refuses to compress a \(page.count)-byte page"
                    }
                    var back = [UInt8](repeating: 0, count: page.count)
                    try Array(again.prefix(size)).withUnsafeBytes { source in try back.withUnsafeMutableBytes { try LZ4Codec.decompress(source, into: $0) } }
                    return back == page ? "" : "LZ4 round trip differs"
                }
            },
            FuzzedDecoder("commit record", seeds: [commit.encoded()] + pages.commits) { bytes in
                try typed { try CommitRecord.decode(bytes) }.map { roundTrip($0, { $0.encoded() }, CommitRecord.decode) }
            },
            FuzzedDecoder("checkpoint root", seeds: [checkpoint.encoded()] + pages.checkpoints) { bytes in
                try typed { try CheckpointRoot.decode(bytes) }.map { roundTrip($0, { $0.encoded() }, CheckpointRoot.decode) }
            },
            FuzzedDecoder("page table chunk", seeds: [TableChunkCodec.encode([location, .none, location])] + pages.chunks) { bytes in
                // The entry count a checkpoint root gives: the seed's own, or another.
                let entries = bytes.count / PageLocation.encodedSize + (bytes.count % 7 == 0 ? 1 : 0)
                return try typed { try TableChunkCodec.decode(bytes, entries: entries) }.map { decoded in
                    roundTrip(decoded, TableChunkCodec.encode) { try TableChunkCodec.decode($0, entries: decoded.count) }
                }
            },
            FuzzedDecoder("record encoding", seeds: [recordBytes, RecordCodec.encode([:]),
                                                     RecordCodec.encode([1: .int(5), 2: .null, 9: .references([3])], keepingNullFields: true)]
                                                    + pages.records) { bytes in
                let fields = try typed { try RecordCodec.decodeFields(bytes) }
                let values = try typed { try RecordCodec.decode(bytes) }
                guard (fields == nil) == (values == nil) else { return "decodeFields and decode disagree on whether the record is valid" }
                guard let values, let fields else { return nil }
                guard Dictionary(fields.map { ($0.id, $0.value) }, uniquingKeysWith: { a, _ in a }) == values else { return "decodeFields and decode differ" }
                return roundTrip(values, { RecordCodec.encode($0, keepingNullFields: true) }, RecordCodec.decode)
            },
            FuzzedDecoder("plain record walks (pre-filter, decoding, journal)", seeds: plainWalkSeeds + pages.records) { bytes in
                plainWalkProblem(bytes)
            },
            FuzzedDecoder("typed record (RecordDecoder)", seeds: itemSeeds + valid(pages.records) { bytes in
                try bytes.withUnsafeBytes { try RecordDecoder().decode(FzV2.Item.self, bytes: $0, layout: itemLayout) }
            }) { bytes in
                // Straight from the bytes and through `Value`s: the same record, or both refuse.
                let direct = try typed { try bytes.withUnsafeBytes { try RecordDecoder().decode(FzV2.Item.self, bytes: $0, layout: itemLayout) } }
                let viaValues = try typed { try RecordDecoder().decode(FzV2.Item.self, fields: try RecordCodec.decodeFields(bytes), layout: itemLayout) }
                let session = try typed { try bytes.withUnsafeBytes { try RecordDecodingSession(layout: itemLayout).decode(FzV2.Item.self, bytes: $0) } }
                // Compared by description: a NaN score is not equal to itself.
                guard same(direct, viaValues), same(direct, session) else {
                    return "direct \(String(describing: direct)), via values \(String(describing: viaValues)), session \(String(describing: session))"
                }
                return direct.map { item in
                    guard let bytes = try? RecordEncoder().encode(item, attributeIDs: ["name": 1, "rank": 2, "note": 3, "score": 4, "summary": 5]) else {
                        return "a decoded record does not encode"
                    }
                    let again = try? bytes.withUnsafeBytes { try RecordDecoder().decode(FzV2.Item.self, bytes: $0, layout: itemLayout) }
                    return same(again, item) ? "" : "re-encoded record decodes differently: \(String(describing: again))"
                }
            },
            FuzzedDecoder("hand-coded record (RecordReader)", seeds: handSeeds) { bytes in
                let direct = try typed { try bytes.withUnsafeBytes { try RecordDecoder().decode(HandCoded.self, bytes: $0, layout: handLayout) } }
                let viaValues = try typed { try RecordDecoder().decode(HandCoded.self, fields: try RecordCodec.decodeFields(bytes), layout: handLayout) }
                guard direct == viaValues else { return "direct \(String(describing: direct)), via values \(String(describing: viaValues))" }
                return direct.map { _ in "" }
            },
            FuzzedDecoder("schema catalog", seeds: pages.catalogs) { bytes in
                try typed { try SchemaCatalog.decode(bytes) }.map { catalog in
                    roundTrip(catalog, { $0.encoded() }) { try SchemaCatalog.decode($0) }
                }
            },
            FuzzedDecoder("store root (history root, migration marker, versions 5 and 6)",
                          seeds: [storeRoot.encoded(), migrating.encoded(), deferring.encoded(), deferringBare.encoded(),
                                  flushed.encoded(), flushedBare.encoded()] + pages.roots) { bytes in
                try typed { try StoreRoot.decode(bytes) }.map { roundTrip($0, { $0.encoded() }, StoreRoot.decode) }
            },
            FuzzedDecoder("history journal part", seeds: [encodedPart(timestamp: 1_700_000_000_000_000, author: "app", operations),
                                                          encodedPart(timestamp: nil, author: nil, operations)] + pages.historyParts) { bytes in
                // The first part carries the header; decoded as first and as a later part, with
                // and without an entity filter.
                var results: [HistoryEntry?] = []
                for isFirst in [true, false] {
                    var entry = HistoryEntry(token: 1, timestamp: 0, author: nil, operations: [])
                    let decoded: Void? = try typed { try bytes.withUnsafeBytes { try HistoryCodec.decodePart($0, isFirst: isFirst, into: &entry) } }
                    results.append(decoded.map { entry })
                    var filtered = HistoryEntry(token: 1, timestamp: 0, author: nil, operations: [])
                    let decodedFiltered: Void? = try typed { try bytes.withUnsafeBytes { try HistoryCodec.decodePart($0, isFirst: isFirst, into: &filtered, entities: [1]) } }
                    if (decoded == nil) != (decodedFiltered == nil) { return "the entity filter changes whether a part is valid" }
                    if decoded != nil && filtered.operations != entry.operations.filter({ $0.entityID == nil || $0.entityID == 1 }) {
                        return "the entity filter keeps other operations"
                    }
                }
                guard let entry = results.compactMap({ $0 }).first else { return nil }
                let isFirst = results[0] != nil
                let again = encodedPart(timestamp: isFirst ? entry.timestamp : nil, author: entry.author, entry.operations)
                var decoded = HistoryEntry(token: 1, timestamp: 0, author: nil, operations: [])
                do { try again.withUnsafeBytes { try HistoryCodec.decodePart($0, isFirst: isFirst, into: &decoded) } } catch {
                    return "re-encoded part does not decode: \(error)"
                }
                return decoded == entry ? "" : "re-encoded part decodes differently"
            },
            FuzzedDecoder("quarantine root", seeds: [quarantine.encoded()] + pages.quarantineRoots) { bytes in
                try typed { try QuarantineRoot.decode(bytes) }.map { roundTrip($0, { $0.encoded() }, QuarantineRoot.decode) }
            },
            FuzzedDecoder("quarantine entry", seeds: [QuarantinedRecord.encode(entity: "FzItem", id: 4, catalogVersion: 1, stage: "s", reason: "r", bytes: recordBytes)]
                          + pages.quarantineEntries) { bytes in
                do {
                    let entry = try QuarantinedRecord(sequence: 1, entry: bytes)
                    let again = QuarantinedRecord.encode(entity: entry.entity, id: entry.id, catalogVersion: entry.catalogVersion, stage: entry.stage,
                                                         reason: entry.reason, bytes: entry.bytes)
                    return (try? QuarantinedRecord(sequence: 1, entry: again)) == entry ? "" : "re-encoded quarantine entry differs"
                } catch let error as StrataError {
                    guard case .corruption = error else { return "quarantine entry: \(error)" }
                    return nil
                }
            },
            FuzzedDecoder("index node", seeds: [IndexNode(kind: .leaf, keys: [Array("key-one-00000".utf8), Array("key-two-00000".utf8)]).encoded()]
                          + valid(pages.indexNodes, IndexNode.decode)) { bytes in
                try typed { try IndexNode.decode(bytes) }.map { roundTrip($0, { $0.encoded() }, IndexNode.decode) }
            },
            FuzzedDecoder("leaf node", seeds: [leaf.encoded()] + valid(pages.leaves, LeafNode.decode)) { bytes in
                let viewCount = try typed { try bytes.withUnsafeBytes { try LeafView.validate($0) } }
                let node = try typed { try LeafNode.decode(bytes) }
                guard (viewCount == nil) == (node == nil) else { return "LeafView and LeafNode disagree on validity" }
                return node.map { node in node.count == viewCount ? roundTrip(node, { $0.encoded() }, LeafNode.decode) : "leaf count differs" }
            },
            FuzzedDecoder("interior node", seeds: valid(pages.interiors, InteriorNode.decode) + [InteriorNode(firstIDs: [0, 9], children: [4, 5]).encoded()]) { bytes in
                try typed { try InteriorNode.decode(bytes) }.map { roundTrip($0, { $0.encoded() }, InteriorNode.decode) }
            },
            FuzzedDecoder("overflow reference", seeds: [OverflowReference(length: 70_000, chunks: [12, 13]).encoded()] + pages.overflowReferences) { bytes in
                try typed { try bytes.withUnsafeBytes { try OverflowReference.decode($0) } }.map { reference in
                    roundTrip(reference, { $0.encoded() }) { try $0.withUnsafeBytes { try OverflowReference.decode($0) } }
                }
            },
        ]
    }

    /// Records for the plain walks: values of every kind, long strings, integers of one to
    /// ten bytes, and what the plain walks leave to the careful ones (ids past 127,
    /// references, ten-byte integers).
    static let plainWalkSeeds: [[UInt8]] = [
        RecordCodec.encode([1: .string("Ada"), 2: .date(Date(timeIntervalSinceReferenceDate: 5)), 3: .string("note"), 5: .int(-3)]),
        RecordCodec.encode([1: .string(String(repeating: "x", count: 200)), 4: .int(1 << 40), 200: .bool(true)]),
        RecordCodec.encode([2: .references([7, 9]), 3: .data([1, 2, 3]), 6: .uuid(UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)))]),
        RecordCodec.encode([1: .bool(false), 2: .double(2.5), 3: .string("ab"), 4: .codable([0x7B, 0x7D])]),
        RecordCodec.encode([1: .int(.min), 2: .int(.max), 3: .int(-64), 4: .int(64), 5: .string(String(repeating: "é", count: 70))]),
    ]

    /// How `StoredField.find` — and a `startsWith` condition, which reads plain strings where
    /// the walk found them — differ from the careful walk on `bytes`, whole and cut short
    /// (a prefix of a longer record), and typed decoding's `locateFields` and the journal's
    /// `RecordChanges` from their careful walks; "" when they never do.
    static func plainWalkProblem(_ bytes: [UInt8]) -> String {
        func describe(_ field: StoredField?, _ base: UnsafeRawBufferPointer) -> String {
            switch field {
            case nil: "unparsed"
            case .absent: "absent"
            case .present(let tag, let payload)?:
                "\(tag) at \(payload.baseAddress.map { $0 - (base.baseAddress ?? $0) } ?? -1) of \(payload.count) bytes"
            }
        }
        return bytes.withUnsafeBytes { whole in
            for cut in Set([whole.count, whole.count / 2, min(whole.count, 3)]) {
                let bytes = UnsafeRawBufferPointer(rebasing: whole[0..<cut])
                for id: UInt32 in [0, 1, 2, 3, 4, 5, 6, 7, 127, 128, 200, 201] {
                    let found = StoredField.find(id, in: bytes, recordLength: whole.count)
                    let careful = StoredField.findCarefully(id, in: bytes, recordLength: whole.count)
                    guard describe(found, bytes) == describe(careful, bytes) else {
                        return "field \(id) in \(cut) of \(whole.count) bytes: find \(describe(found, bytes)), careful \(describe(careful, bytes))"
                    }
                    guard cut == whole.count else { continue }
                    for prefix in [Array("a".utf8), Array("no".utf8), Array("xxx".utf8)] {
                        let answer = RecordCondition.startsWith(attributeID: id, prefix: prefix, absent: nil).evaluate(bytes)
                        let expected = careful.flatMap { $0.startsWith(prefix, absent: nil) }
                        guard answer == expected else {
                            return "field \(id) starts with \(prefix): \(String(describing: answer)), careful \(String(describing: expected))"
                        }
                    }
                }
            }
            // A scan's session, having learned the record's shape: the same answers on the
            // record and on cuts of it (`FieldShape` reads their bytes with the shape's).
            for id: UInt32 in [1, 2, 3, 4, 5, 6, 7] {
                for condition in [RecordCondition.startsWith(attributeID: id, prefix: Array("a".utf8), absent: nil),
                                  .compare(attributeID: id, .less, .int(2), absent: .int(0))] {
                    var session = RecordFilter(condition).session()
                    for cut in [whole.count, whole.count, whole.count - 1, whole.count / 2, min(whole.count, 3)] where cut >= 0 {
                        let bytes = UnsafeRawBufferPointer(rebasing: whole[0..<cut])
                        let answer = session.evaluate(bytes), expected = condition.evaluate(bytes)
                        guard answer == expected else {
                            return "session for \(condition) on \(cut) of \(whole.count) bytes: \(String(describing: answer)), evaluate \(String(describing: expected))"
                        }
                    }
                }
            }
            // Typed decoding's walk: the same spans, or the same error.
            let ids: [UInt32] = [0, 1, 2, 3, 4, 5, 6, 7, 127, 200]
            func spans(_ locate: (UnsafeMutablePointer<FieldSpan>) throws(FormatError) -> Void) -> String {
                withUnsafeTemporaryAllocation(of: FieldSpan.self, capacity: ids.count) { buffer in
                    guard let fields = buffer.baseAddress else { return "" }
                    fields.initialize(repeating: .absent, count: ids.count)
                    do throws(FormatError) { try locate(fields) } catch { return "error \(error)" }
                    return (0..<ids.count).map { "\(fields[$0].tag):\(fields[$0].bits):\(fields[$0].count)" }.joined(separator: " ")
                }
            }
            let located = spans { fields throws(FormatError) in try RecordCodec.locateFields(whole, ids: ids, into: fields) }
            let carefully = spans { fields throws(FormatError) in try RecordCodec.locateFieldsCarefully(whole, ids: ids, into: fields) }
            guard located == carefully else { return "locateFields \(located), carefully \(carefully)" }
            // The journal's comparison and tombstone: the same entry, or the same error, with
            // the record on either side (against a valid one), defaults or not.
            let other = RecordCodec.encode([1: .string("Ada"), 3: .string("note"), 4: .int(2)])
            let defaults = RecordDefaults([1: .string("x"), 2: .int(5), 3: .null, 6: .bool(true)])
            let changes = RecordChanges()
            func entry(_ body: () throws(FormatError) -> Bool) -> String {
                do throws(FormatError) {
                    let changed = try body()
                    return "\(changed) \(Array(changes.changedIDs)) \(Array(changes.oldValues)) \(Array(changes.newValues))"
                } catch { return "error \(error)" }
            }
            // Also against itself and against a valid record of the attributes it holds before
            // anything malformed, with other values: the pairs the journal compares side by side
            // (`compareAligned`).
            var bounds: [RecordFieldBounds] = []
            try? RecordCodec.fieldBounds(whole, into: &bounds)
            let sameIDs: [UInt8]? = bounds.isEmpty ? nil : RecordCodec.encode(fields: bounds.enumerated().compactMap { index, field in
                // Each value decoded alone, as the one field of a record.
                let alone = [RecordCodec.baseFormat, 1, UInt8(truncatingIfNeeded: field.id)] + Array(field.value(in: whole))
                guard field.id < 0x80, let value = try? RecordCodec.decodeFields(alone).first?.value else { return nil }
                return (field.id, Self.otherValue(value, index))
            })
            var pairs: [(stored: [UInt8]?, written: [UInt8]?)] = [(nil, other), (other, nil), (nil, nil)]
            if let sameIDs { pairs += [(nil, sameIDs), (sameIDs, nil)] }
            for (storedBytes, writtenBytes) in pairs {
                for defaults in [nil, defaults] {
                    let problem: String? = (storedBytes ?? bytes).withUnsafeBytes { stored in
                        (writtenBytes ?? bytes).withUnsafeBytes { written in
                            let found = entry { () throws(FormatError) in try changes.compare(stored: stored, written: written, defaults: defaults) }
                            let careful = entry { () throws(FormatError) in try changes.compare(stored, written, defaults, walking: CarefulFieldWalk.self) }
                            return found == careful ? nil : "compare \(found), carefully \(careful)"
                        }
                    }
                    if let problem { return problem }
                }
            }
            func tombstone(_ body: () throws(FormatError) -> UnsafeRawBufferPointer) -> String {
                do throws(FormatError) { return "\(Array(try body()))" } catch { return "error \(error)" }
            }
            let kept: [UInt32] = [1, 2, 3, 6, 200]
            let found = tombstone { () throws(FormatError) in try changes.tombstone(stored: whole, kept: kept, defaults: defaults) }
            let careful = tombstone { () throws(FormatError) in try changes.tombstone(whole, kept, defaults, walking: CarefulFieldWalk.self) }
            guard found == careful else { return "tombstone \(found), carefully \(careful)" }
            return ""
        }
    }

    /// Another value of the kind of `value`, or the same one (every third field), or the same
    /// string spelled differently (decomposed accents): what an update writes.
    static func otherValue(_ value: Value, _ index: Int) -> Value {
        if index % 3 == 2 { return value }
        switch value {
        case .bool(let flag): return .bool(!flag)
        case .int(let number): return .int(number &+ 1)
        case .double(let number): return .double(number + 1)
        case .string(let text):
            var decomposed = String.UnicodeScalarView()
            for scalar in text.unicodeScalars {
                if scalar == "\u{E9}" { decomposed.append(contentsOf: ["e", "\u{301}"]) } else { decomposed.append(scalar) }
            }
            return .string(decomposed.count == text.unicodeScalars.count ? text + "x" : String(decomposed))
        case .data(let bytes): return .data(bytes + [0])
        case .codable(let bytes): return .codable(bytes + [0x20])
        case .references(let ids): return .references(ids.reversed())
        default: return value
        }
    }

    /// An input of the page decoders read as a u16 page length, then a stored payload: the
    /// payload and the header of a page frame with `codec` (format 2 for codec 2, 3 for codec 3).
    static func pagePayload(_ bytes: [UInt8], codec: PayloadCodec) -> (header: FrameHeader, stored: [UInt8])? {
        guard bytes.count >= 2 else { return nil }
        let stored = Array(bytes[2...])
        var header = FrameHeader(kind: .page, codec: codec, pageID: 9, lsn: 1, entityID: 0, schemaVersion: 0,
                                 rawLength: UInt32(Int(bytes[0]) | Int(bytes[1]) << 8), storedLength: UInt32(stored.count))
        if codec == .lz4Halves { header.formatVersion = 2 }
        if codec == .lz4Blocks { header.formatVersion = 3 }
        return (header, stored)
    }

    /// Pages as format 2 frames store them in two blocks: u16 length, then the stored payload.
    static func lz4HalvesSeeds() -> [[UInt8]] {
        var random = SeededRandom(seed: 8)
        return [1_500, 4_000, 20_000].map { count in
            var frame: [UInt8] = []
            random.recordLikeBytes(count).withUnsafeBytes { page in
                _ = FrameCodec.append(kind: .page, pageID: 9, lsn: 1, payload: page, compress: true, formatVersion: 2, to: &frame)
            }
            let stored = Int(UInt32(littleEndian: frame.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 36, as: UInt32.self) }))
            return [UInt8(count & 0xFF), UInt8(count >> 8)] + frame[FrameHeader.size..<(FrameHeader.size + stored)]
        }
    }

    /// Pages as format 3 frames store them for partial reads (a raw directory, then blocks,
    /// one of them raw): u16 length, then the stored payload.
    static func lz4BlocksSeeds() -> [[UInt8]] {
        var random = SeededRandom(seed: 9)
        return [(1_500, 100), (4_000, 440), (9_000, 0)].map { count, directory in
            var page = random.recordLikeBytes(count)
            if count > 4_000 { page.replaceSubrange(2_000..<3_100, with: random.bytes(1_100)) }
            var frame: [UInt8] = []
            page.withUnsafeBytes { raw in
                _ = FrameCodec.append(kind: .page, pageID: 9, lsn: 1, payload: raw, compress: true, directoryLength: directory,
                                      formatVersion: 3, to: &frame)
            }
            let stored = Int(UInt32(littleEndian: frame.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 36, as: UInt32.self) }))
            return [UInt8(count & 0xFF), UInt8(count >> 8)] + frame[FrameHeader.size..<(FrameHeader.size + stored)]
        }
    }

    static func lz4Seeds() -> [[UInt8]] {
        var random = SeededRandom(seed: 7)
        return [40, 400, 4_000, 20_000].map { count in
            let page = random.recordLikeBytes(count)
            var compressed = [UInt8](repeating: 0, count: LZ4Codec.bound(count))
            let size = page.withUnsafeBytes { source in compressed.withUnsafeMutableBytes { LZ4Codec.compress(source, into: $0) } } ?? 0
            return [UInt8(count & 0xFF), UInt8(count >> 8)] + compressed.prefix(size)
        }
    }
}

/// A record type coding itself by hand (`RecordReader` / `RecordWriter`).
struct HandCoded: PersistentRecord, Equatable {
    var title: String
    var count: Int
    var flag: Bool
    init(title: String, count: Int, flag: Bool) {
        self.title = title
        self.count = count
        self.flag = flag
    }
    init(from reader: RecordReader) throws {
        title = try reader.decode(String.self, forKey: "title")
        count = try reader.decode(Int.self, forKey: "count")
        flag = try reader.decode(Bool.self, forKey: "flag")
    }
    func encode(to writer: inout RecordWriter) {
        writer.encode(title, forKey: "title")
        writer.encode(count, forKey: "count")
        writer.encode(flag, forKey: "flag")
    }
}

@Suite struct DecoderFuzzTests {
    /// The store whose pages seed the decoders (built once).
    static let store: Result<FzStore, any Error> = Result {
        var random = SeededRandom(seed: 0xDEC0DE)
        return try FzStore.build(&random)
    }

    @Test func everyDecoderReturnsAValueOrATypedError() throws {
        let store = try Self.store.get()
        let pages = DecoderCatalog.pages(of: store)
        let decoders = DecoderCatalog.decoders(pages)
        let started = ContinuousClock.now
        let (seed, base) = FuzzConfiguration.generator(for: "decoders")
        var random = base
        let perDecoder = 20_000 * FuzzConfiguration.multiplier
        var inputs = 0, accepted = 0, seeds = 0
        for decoder in decoders {
            #expect(!decoder.seeds.isEmpty, "\(decoder.name): no valid encoding to mutate")
            // Valid encodings decode (and round-trip).
            for (index, bytes) in decoder.seeds.enumerated() {
                seeds += 1
                let problem = try decoder.decode(bytes)
                #expect(problem == "", "\(decoder.name): valid encoding \(index) gives \(problem ?? "a rejection") (seed \(seed))")
            }
            var decoderAccepted = 0
            for iteration in 0..<perDecoder {
                let original = decoder.seeds.isEmpty ? [] : decoder.seeds[Int(random.next() % UInt64(decoder.seeds.count))]
                var (mutation, bytes) = Mutation.apply(original, others: decoder.seeds, &random)
                if random.next() % 3 == 0 { (mutation, bytes) = Mutation.apply(bytes, others: decoder.seeds, &random) }
                inputs += 1
                do {
                    if let problem = try decoder.decode(bytes) {
                        decoderAccepted += 1
                        #expect(problem.isEmpty, "\(decoder.name): input \(iteration) (\(mutation)) \(problem) (seed \(seed))")
                    }
                } catch {
                    Issue.record("\(decoder.name): input \(iteration) (\(mutation)) threw an untyped error \(type(of: error)): \(error) (seed \(seed))")
                }
            }
            accepted += decoderAccepted
        }
        FuzzConfiguration.report("decoders", ["decoders": decoders.count, "seeds": seeds, "inputs": inputs, "decoded": accepted,
                                                "ms": Int((ContinuousClock.now - started) / .milliseconds(1))])
    }
}

/// Allocations sized by a stored number before the bytes confirm it (found reviewing the
/// decoders for this campaign).
@Suite struct DecoderAllocationTests {
    /// A page table chunk's entry count comes from the checkpoint root; the array for the
    /// entries was allocated before the payload's size was compared with it, so a huge count
    /// trapped (or allocated gigabytes) instead of throwing.
    @Test func tableChunkCountIsCheckedBeforeAllocating() {
        let location = PageLocation(segment: 1, offset: 64, length: 120, lsn: 3)
        let bytes = TableChunkCodec.encode([location])
        for entries in [1 << 40, Int.max, Int.max / PageLocation.encodedSize + 1, -1, 0, 2] {
            #expect(throws: FormatError.self, "\(entries) entries") { try TableChunkCodec.decode(bytes, entries: entries) }
        }
        #expect((try? TableChunkCodec.decode(bytes, entries: 1)) == [location])
    }

    /// An overflowed record's stored length reserved that many bytes (up to 64 MiB) before its
    /// chunks were read; now at most what its chunks can hold, judged by the first one, and a
    /// record whose chunks hold less than the length is corruption.
    @Test func overflowLengthIsNotTrustedWithAnAllocation() throws {
        let forged = OverflowReference(length: UInt64(FrameHeader.maximumRawLength), chunks: [5])
        #expect(OverflowReader.reservation(for: forged, firstChunk: 100) == 100)
        #expect(OverflowReader.reservation(for: OverflowReference(length: 250, chunks: [5, 6, 7]), firstChunk: 100) == 250)
        #expect(throws: RecordTreeError.self) {
            _ = try OverflowReader.assemble(forged) { _, append in
                try [UInt8](repeating: 1, count: 100).withUnsafeBytes(append)
                return true
            }
        }
        let whole = try OverflowReader.assemble(OverflowReference(length: 250, chunks: [5, 6, 7])) { id, append in
            try [UInt8](repeating: UInt8(id), count: id == 7 ? 50 : 100).withUnsafeBytes(append)
            return true
        }
        #expect(whole == [UInt8](repeating: 5, count: 100) + [UInt8](repeating: 6, count: 100) + [UInt8](repeating: 7, count: 50))
        // Assembled for reading (memory its values may share): allocated from the first chunk
        // too, and chunks that hold more or fewer bytes than the length are corruption.
        func shared(_ reference: OverflowReference, _ sizes: [UInt64: Int]) throws -> [UInt8] {
            let record = try OverflowReader.assembleShared(reference) { id, append in
                guard let size = sizes[id] else { return false }
                try [UInt8](repeating: UInt8(id), count: size).withUnsafeBytes(append)
                return true
            }
            return withExtendedLifetime(record) { Array(record.bytes) }
        }
        #expect(try shared(OverflowReference(length: 250, chunks: [5, 6, 7]), [5: 100, 6: 100, 7: 50]) == whole)
        // Chunks longer than the first (never written so) that hold the length: read as the
        // array is, past the reservation.
        #expect(try shared(OverflowReference(length: 250, chunks: [5, 6, 7]), [5: 50, 6: 150, 7: 50])
                == [UInt8](repeating: 5, count: 50) + [UInt8](repeating: 6, count: 150) + [UInt8](repeating: 7, count: 50))
        let damaged: [[UInt64: Int]] = [[5: 100, 6: 100, 7: 40], [5: 100, 6: 100, 7: 60], [5: 100, 7: 50]]
        for sizes in damaged {
            #expect(throws: RecordTreeError.self, "\(sizes)") { try shared(OverflowReference(length: 250, chunks: [5, 6, 7]), sizes) }
        }
        #expect(throws: RecordTreeError.self) { try shared(forged, [5: 100]) }
    }
}
