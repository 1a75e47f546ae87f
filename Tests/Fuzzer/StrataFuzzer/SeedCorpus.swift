#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataFormat
import StrataIO
@testable import StrataRecords
@testable import StrataSchema
@testable import Strata
#if canImport(Glibc)
import Glibc
#endif

// The seed corpus (Tests/Fuzzer/Corpus): valid encodings of every target, taken from a tiny
// real store (its pages routed to the decoder of their kind) and built by hand, each prefixed
// with its target's selector byte.

/// A tiny store with both entities, indexes, a journal, deletes and a lightweight migration,
/// on an in-memory file system; returns its files.
func tinyStore() throws -> [String: [UInt8]] {
    let fs = MemoryFileSystem()
    var configuration = fuzzConfiguration(readOnly: false)
    configuration.storage.segmentSize = 16 << 10
    do {
        let store = try Store(at: storePath, schema: FuzzSchemaV1.self, migrationPlan: nil, configuration: configuration, fileSystem: fs)
        try store.write(author: "seed") { transaction in
            for index in 0..<12 {
                _ = try transaction.insert(FuzzItem(name: "item \(index)", rank: index, note: index % 3 == 0 ? nil : "note \(index)",
                                                    score: Double(index) / 4, createdAt: Date(timeIntervalSince1970: Double(index) * 1_000),
                                                    tags: index % 2 == 0 ? ["a", "b"] : []))
            }
            for index in 0..<5 { _ = try transaction.insert(FuzzTag(label: "tag \(index)", weight: index)) }
        }
        let context = Context(store, author: "edit")
        try context.delete(RecordID<FuzzItem>(rawValue: 2))
        try context.update(RecordID<FuzzTag>(rawValue: 1), to: FuzzTag(label: "renamed", weight: 7))
        try context.save()
        try store.close()
    }
    let store = try Store(at: storePath, schema: FuzzSchemaV2.self, migrationPlan: FuzzPlan.self, configuration: configuration, fileSystem: fs)
    try store.close()
    return fs.allFiles()
}

/// Every frame of the segment files: its header and raw payload, and the frame's bytes.
func frames(of files: [String: [UInt8]]) -> [(header: FrameHeader, payload: [UInt8], frame: [UInt8])] {
    var result: [(FrameHeader, [UInt8], [UInt8])] = []
    for (path, bytes) in files.sorted(by: { $0.key < $1.key }) where path.hasSuffix(".seg") {
        var position = SegmentHeader.size
        while position + FrameHeader.size <= bytes.count {
            let found: (FrameHeader, [UInt8], Int)? = bytes.withUnsafeBytes { raw in
                let rest = UnsafeRawBufferPointer(rebasing: raw[position...])
                guard let (header, payload) = try? FrameCodec.decode(rest) else { return nil }
                return (header, payload, header.frameLength)
            }
            guard let (header, payload, length) = found, position + length <= bytes.count else { break }
            result.append((header, payload, Array(bytes[position..<(position + length)])))
            position += length
        }
    }
    return result
}

func writeSeedCorpus(to folder: String) throws {
    var seeds: [(String, FuzzTarget, [UInt8])] = []
    let storeID = StoreID(high: 0x0123_4567_89AB_CDEF, low: 0xFEDC_BA98_7654_3210)
    seeds.append(("superblock", .superblock, Superblock(storeID: storeID, epoch: 3, checkpointLSN: 17,
                                                         root: FrameAddress(segment: 1, offset: 4_096, length: 120)).encoded()))
    seeds.append(("segment-header", .segmentHeader, SegmentHeader(storeID: storeID, segmentID: 2, previousSegmentID: 1,
                                                                   previousSegmentEnd: 65_536).encoded()))
    seeds.append(("commit", .commitRecord, CommitRecord(frameCount: 3, durableSegment: 1, durableOffset: 512, nextPageID: 40).encoded()))
    seeds.append(("checkpoint", .checkpointRoot, CheckpointRoot(
        lsn: 9, nextPageID: 30, chunkEntries: 4,
        chunks: [PageLocation(segment: 1, offset: 64, length: 120, lsn: 8)],
        segments: [.init(segmentID: 1, totalBytes: 4_096, liveBytes: 2_000)]).encoded()))
    let locations = [PageLocation(segment: 1, offset: 64, length: 120, lsn: 8), .none,
                     PageLocation(segment: 2, offset: 4_096, length: 64, lsn: 9)]
    seeds.append(("table-chunk", .tableChunk, [UInt8(locations.count)] + TableChunkCodec.encode(locations)))
    let text = Array(String(repeating: "Strata fuzz seed, compressible text. ", count: 20).utf8)
    var compressed = [UInt8](repeating: 0, count: LZ4Codec.bound(text.count))
    let produced = text.withUnsafeBytes { src in compressed.withUnsafeMutableBytes { LZ4Codec.compress(src, into: $0) } } ?? 0
    seeds.append(("lz4", .lz4, [UInt8(text.count & 0xFF), UInt8(text.count >> 8)] + compressed.prefix(produced)))
    let record = RecordCodec.encode([1: .string("item"), 2: .int(-5), 3: .null, 4: .double(2.5), 5: .date(Date(timeIntervalSince1970: 12)),
                                     6: .string("[\"a\"]")])
    seeds.append(("record", .recordCodec, record))
    seeds.append(("typed-record", .typedRecord, record))
    seeds.append(("hand-record", .typedRecord, RecordCodec.encode([1: .string("t"), 2: .int(3), 3: .bool(true)])))
    // A record holding a null field (format 3): nil saved under an optional attribute with a default.
    let nulls = RecordCodec.encode([1: .string("item"), 3: .null, 4: .int(2)], keepingNullFields: true)
    seeds.append(("record-nulls", .recordCodec, nulls))
    seeds.append(("typed-record-nulls", .typedRecord, nulls))
    seeds.append(("quarantine-root", .quarantineRoot, { var root = QuarantineRoot(); root.tree = RecordTreeRoot(rootPageID: 9, count: 2)
                                                        root.nextSequence = 3; return root.encoded() }()))
    seeds.append(("quarantine-entry", .quarantineEntry, QuarantinedRecord.encode(entity: "FuzzItem", id: 4, catalogVersion: 1, stage: "split",
                                                                                  reason: "rejected", bytes: record)))
    seeds.append(("overflow", .overflowReference, OverflowReference(length: 70_000, chunks: [12, 13]).encoded()))
    seeds.append(("store-root-v5", .storeRoot, { var root = StoreRoot(); root.catalogPageID = 1
                                                 root.entities = [1: .init(tree: RecordTreeRoot(rootPageID: 5, count: 3), nextRowID: 4,
                                                                           hasUncompressedLeaves: true)]
                                                 return root.encoded() }()))
    seeds.append(("store-root-v6", .storeRoot, { var root = StoreRoot(); root.catalogPageID = 1
                                                 var marker = MigrationMarker(phase: .switched, rollbackSegment: 1, rollbackOffset: 64,
                                                                              fromCatalogVersion: 1, stage: 0,
                                                                              targetChecksum: [UInt8](repeating: 5, count: 32))
                                                 marker.closureFlushed = true
                                                 root.migration = marker
                                                 return root.encoded() }()))
    let index = IndexNode(kind: .leaf, keys: [Array("key-one-0000".utf8), Array("key-two-0000".utf8)])
    seeds.append(("index-leaf", .indexNode, index.encoded()))

    // The tiny store: the archive, every frame, and every page routed by its content.
    let files = try tinyStore()
    seeds.append(("store", .store, archive(files)))
    seeds.append(("store-forged", .forgedStore, archive(files)))
    var counts: [String: Int] = [:]
    for (header, payload, frame) in frames(of: files) {
        func add(_ name: String, _ target: FuzzTarget, _ bytes: [UInt8]) {
            let count = counts[name, default: 0] + 1
            counts[name] = count
            if count <= 4 { seeds.append(("\(name)-\(count)", target, bytes)) }
        }
        add("frame-\(header.kind)".split(separator: " ").joined(separator: "-"), .frame, frame)
        switch header.kind {
        case .commit: add("store-commit", .commitRecord, payload)
        case .checkpoint: add("store-checkpoint", .checkpointRoot, payload)
        case .tableChunk:
            if payload.count / PageLocation.encodedSize < 256 {
                add("store-chunk", .tableChunk, [UInt8(payload.count / PageLocation.encodedSize)] + payload)
            }
        case .page:
            if payload.starts(with: SchemaCatalog.magic) { add("catalog", .schemaCatalog, payload) }
            else if payload.starts(with: StoreRoot.magic) { add("store-root", .storeRoot, payload) }
            else if payload.first == 1 {
                add("leaf", .leafNode, payload)
                // The records in the leaf: record encodings and history parts.
                if let leaf = try? LeafNode.decode(payload) {
                    for item in 0..<leaf.count where !leaf.isOverflow(item) {
                        let bytes = Array(leaf.bytes(item))
                        if (try? RecordCodec.decodeFields(bytes)) != nil {
                            add("leaf-record", .recordCodec, bytes)
                            add("leaf-typed-record", .typedRecord, bytes)
                        } else {
                            add("history-part", .historyPart, [item == 0 ? 1 : 3] + bytes)
                        }
                    }
                }
            }
            else if payload.first == 2 { add("interior", .interiorNode, payload) }
            else if payload.first == 3 || payload.first == 4 { add("index", .indexNode, payload) }
        case .free: break
        }
    }
    mkdir(folder, 0o755)
    for (name, target, bytes) in seeds {
        let path = folder + "/" + name
        guard let file = fopen(path, "wb") else { throw FuzzCorpusError(path: path) }
        let data = [target.rawValue] + bytes
        _ = data.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        fclose(file)
    }
    print("StrataFuzzer: wrote \(seeds.count) seeds to \(folder)")
}

struct FuzzCorpusError: Error { let path: String }
