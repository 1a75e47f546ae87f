#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataFormat
import StrataIO
@testable import StrataPageLog
@testable import StrataRecords
@testable import StrataSchema
@testable import Strata
#if canImport(Glibc)
import Glibc
#endif

// The targets of the libFuzzer executable (Docs/Testing.md, "libFuzzer"). An input's first
// byte picks the target (modulo their count); the rest is that target's bytes. Every target
// must return or throw: a trap, a sanitizer report, a hang (libFuzzer's -timeout) or an
// allocation above -malloc_limit_mb is a finding.

enum FuzzTarget: UInt8, CaseIterable {
    case superblock, segmentHeader, frame, lz4, commitRecord, checkpointRoot, tableChunk, recordCodec,
         schemaCatalog, storeRoot, historyPart, quarantineRoot, quarantineEntry, indexNode, leafNode,
         interiorNode, overflowReference, typedRecord, store, forgedStore

    init(selector: UInt8) {
        self = FuzzTarget(rawValue: selector % UInt8(FuzzTarget.allCases.count)) ?? .store
    }
}

/// Runs one input. Errors are the expected outcome of most inputs and are dropped.
func runFuzzInput(_ input: UnsafeRawBufferPointer) {
    guard let selector = input.first else { return }
    let body = UnsafeRawBufferPointer(rebasing: input[1...])
    let bytes = [UInt8](body)
    switch FuzzTarget(selector: selector) {
    case .superblock:
        if let value = try? Superblock.decode(bytes) { check((try? Superblock.decode(value.encoded())) == value, "superblock round trip") }
    case .segmentHeader:
        if let value = try? SegmentHeader.decode(bytes) { check((try? SegmentHeader.decode(value.encoded())) == value, "segment header round trip") }
    case .frame:
        if let (header, payload) = try? FrameCodec.decode(body) {
            check(payload.count == Int(header.rawLength), "frame payload length")
        }
        _ = try? FrameHeader.decode(body)
    case .lz4:
        // u16 page length, then LZ4 data: the whole block and a prefix of it.
        guard bytes.count >= 2 else { return }
        let length = Int(bytes[0]) | Int(bytes[1]) << 8
        let source = Array(bytes[2...])
        var page = [UInt8](repeating: 0, count: length)
        source.withUnsafeBytes { src in
            page.withUnsafeMutableBytes { dst in
                _ = try? LZ4Codec.decompress(src, into: dst)
                _ = try? LZ4Codec.decompressPrefix(src, into: UnsafeMutableRawBufferPointer(rebasing: dst[0..<(length / 2)]))
            }
        }
        // And as a frame payload whose header says LZ4 (the checksum is not what is fuzzed).
        let header = FrameHeader(kind: .page, codec: .lz4, pageID: 9, lsn: 1, entityID: 0, schemaVersion: 0,
                                 rawLength: UInt32(length), storedLength: UInt32(source.count))
        if let payload = source.withUnsafeBytes({ try? FrameCodec.payload(header, stored: $0) }) {
            check(payload.count == length, "LZ4 payload length")
        }
        // And as the stored payload of a format 2 frame in two blocks.
        var halves = FrameHeader(kind: .page, codec: .lz4Halves, pageID: 9, lsn: 1, entityID: 0, schemaVersion: 0,
                                 rawLength: UInt32(length), storedLength: UInt32(source.count))
        halves.formatVersion = 2
        if let payload = source.withUnsafeBytes({ try? FrameCodec.payload(halves, stored: $0) }) {
            check(payload.count == length, "LZ4 halves payload length")
        }
        // And as the stored payload of a format 3 frame stored for partial reads, whole and
        // block by block in part.
        var blocks = FrameHeader(kind: .page, codec: .lz4Blocks, pageID: 9, lsn: 1, entityID: 0, schemaVersion: 0,
                                 rawLength: UInt32(length), storedLength: UInt32(source.count))
        blocks.formatVersion = 3
        source.withUnsafeBytes { raw in
            if let payload = try? FrameCodec.payload(blocks, stored: raw) { check(payload.count == length, "LZ4 blocks payload length") }
            guard let layout = try? FrameCodec.BlockLayout(rawLength: length, stored: raw) else { return }
            for index in 0..<layout.blockCount {
                guard let block = try? layout.verifiedBlock(index, checked: true) else { continue }
                var part = [UInt8](repeating: 0, count: layout.rawRange(index).count / 2)
                part.withUnsafeMutableBytes { _ = try? layout.expand(block.bytes, block.entry, index: index, into: $0) }
            }
        }
    case .commitRecord:
        if let value = try? CommitRecord.decode(bytes) { check((try? CommitRecord.decode(value.encoded())) == value, "commit record round trip") }
    case .checkpointRoot:
        if let value = try? CheckpointRoot.decode(bytes) { check((try? CheckpointRoot.decode(value.encoded())) == value, "checkpoint root round trip") }
    case .tableChunk:
        // u8 entry count (the count comes from a validated checkpoint root in the library).
        guard let count = bytes.first else { return }
        if let entries = try? TableChunkCodec.decode(Array(bytes[1...]), entries: Int(count)) {
            check(entries.count == Int(count), "table chunk count")
        }
    case .recordCodec:
        let fields = try? RecordCodec.decodeFields(bytes)
        let values = try? RecordCodec.decode(bytes)
        check((fields == nil) == (values == nil), "record codec: decodeFields and decode disagree")
        if let fields { _ = RecordCodec.encode(Dictionary(fields.map { ($0.id, $0.value) }, uniquingKeysWith: { a, _ in a })) }
    case .schemaCatalog:
        if let catalog = try? SchemaCatalog.decode(bytes) {
            check((try? SchemaCatalog.decode(catalog.encoded())) == catalog, "catalog round trip")
        }
    case .storeRoot:
        if let root = try? StoreRoot.decode(bytes) { check((try? StoreRoot.decode(root.encoded())) == root, "store root round trip") }
    case .historyPart:
        guard let flags = bytes.first else { return }
        var entry = HistoryEntry(token: 1, timestamp: 0, author: nil, operations: [])
        let rest = Array(bytes[1...])
        rest.withUnsafeBytes { raw in
            _ = try? HistoryCodec.decodePart(raw, isFirst: flags & 1 != 0, into: &entry, entities: flags & 2 != 0 ? [1, 2] : nil)
        }
    case .quarantineRoot:
        if let root = try? QuarantineRoot.decode(bytes) { check((try? QuarantineRoot.decode(root.encoded())) == root, "quarantine root round trip") }
    case .quarantineEntry:
        _ = try? QuarantinedRecord(sequence: 1, entry: bytes)
    case .indexNode:
        if let node = try? IndexNode.decode(bytes) { check((try? IndexNode.decode(node.encoded())) == node, "index node round trip") }
    case .leafNode:
        if let node = try? LeafNode.decode(bytes) { check((try? LeafNode.decode(node.encoded())) == node, "leaf round trip") }
        _ = try? LeafView.validate(body)
    case .interiorNode:
        if let node = try? InteriorNode.decode(bytes) { check((try? InteriorNode.decode(node.encoded())) == node, "interior node round trip") }
        _ = try? InteriorNode.validate(body)
    case .overflowReference:
        _ = try? OverflowReference.decode(body)
    case .typedRecord:
        decodeTypedRecord(body)
    case .store:
        openStore(bytes)
    case .forgedStore:
        // The same, with every frame's checksum recomputed: damaged pages pass verification, as
        // in a file written by a buggy or hostile program, and reach the tree, record, catalog
        // and journal decoders inside a real open.
        openStore(bytes, fixingChecksums: true)
    }
}

/// STRATA_FUZZ_VERBOSE set: the opener prints the errors it gets (when replaying an input).
let verbose = getenv("STRATA_FUZZ_VERBOSE") != nil

/// A property every successful decode must have; a violation is a finding.
func check(_ condition: Bool, _ what: String) {
    if !condition {
        print("StrataFuzzer: property violated: \(what)")
        abort()
    }
}

// MARK: - Typed records

struct FuzzItem: PersistentRecord, Equatable {
    var name: String
    var rank: Int
    var note: String?
    var score: Double
    var createdAt: Date
    var tags: [String]
    static var attributeOptions: [String: Attribute.Options] { ["rank": [.indexed], "name": [.unique]] }
}

struct FuzzTag: PersistentRecord, Equatable {
    var label: String
    var weight: Int
}

/// A hand-coded record (`RecordReader` / `RecordWriter`).
struct FuzzHandCoded: PersistentRecord, Equatable {
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

private let itemLayout = RecordLayout(attributes: [("name", 1, .null), ("rank", 2, .null), ("note", 3, .null), ("score", 4, .null),
                                                   ("createdAt", 5, .null), ("tags", 6, .null)])
private let handLayout = RecordLayout(attributes: [("title", 1, .null), ("count", 2, .null), ("flag", 3, .int(0))])

func decodeTypedRecord(_ raw: UnsafeRawBufferPointer) {
    let decoder = RecordDecoder()
    _ = try? decoder.decode(FuzzItem.self, bytes: raw, layout: itemLayout)
    _ = try? decoder.decode(FuzzHandCoded.self, bytes: raw, layout: handLayout)
    if let fields = try? RecordCodec.decodeFields(raw) {
        _ = try? decoder.decode(FuzzItem.self, fields: fields, layout: itemLayout)
    }
}

// MARK: - The store opener

/// The schema of the fuzzed stores, and its lightweight successor (an optional attribute
/// added to `FuzzItem`).
enum FuzzSchemaV1: VersionedSchema {
    static let versionIdentifier = Schema.Version(1, 0, 0)
    static var models: [any PersistentRecord.Type] { [FuzzItem.self, FuzzTag.self] }
}

enum FuzzSchemaV2: VersionedSchema {
    static let versionIdentifier = Schema.Version(2, 0, 0)
    static var models: [any PersistentRecord.Type] { [Item.self, FuzzTag.self] }
    struct Item: PersistentRecord, Equatable {
        static var entityName: String { "FuzzItem" }
        var name: String
        var rank: Int
        var note: String?
        var score: Double
        var createdAt: Date
        var tags: [String]
        var extra: Int?
        static var attributeOptions: [String: Attribute.Options] { ["rank": [.indexed], "name": [.unique]] }
    }
}

enum FuzzPlan: SchemaMigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [FuzzSchemaV1.self, FuzzSchemaV2.self] }
    static var stages: [MigrationStage] { [.lightweight(fromVersion: FuzzSchemaV1.self, toVersion: FuzzSchemaV2.self)] }
}

let storePath = "/store"

/// The store files an opener input holds: records of `kind:u8 length:u16 bytes`, kind 0 the
/// superblock file, kind k > 0 segment file k. A store's files in this form are what
/// `archive(_:)` writes (the seed corpus).
func files(fromArchive bytes: [UInt8]) -> [String: [UInt8]] {
    var files: [String: [UInt8]] = [:]
    var position = 0
    while position + 3 <= bytes.count {
        let kind = bytes[position]
        let length = Int(bytes[position + 1]) | Int(bytes[position + 2]) << 8
        position += 3
        let end = min(bytes.count, position + length)
        let name = kind == 0 ? "superblock" : StoreFileNames.segment(UInt64(kind))
        files[storePath + "/" + name, default: []] += bytes[position..<end]
        position = end
    }
    return files
}

/// The inverse of `files(fromArchive:)` for a store's superblock and segment files (files
/// longer than 65,535 bytes take several records).
func archive(_ files: [String: [UInt8]]) -> [UInt8] {
    var out: [UInt8] = []
    for (path, contents) in files.sorted(by: { $0.key < $1.key }) {
        let name = String(path.split(separator: "/").last ?? "")
        let kind: UInt8
        if name == "superblock" { kind = 0 } else if let id = StoreFileNames.segmentID(name), id > 0, id < 256 { kind = UInt8(id) } else { continue }
        var start = 0
        repeat {
            let end = min(contents.count, start + 65_535)
            out.append(kind)
            out.append(UInt8((end - start) & 0xFF))
            out.append(UInt8((end - start) >> 8))
            out += contents[start..<end]
            start = end
        } while start < contents.count
    }
    return out
}

func fuzzConfiguration(readOnly: Bool) -> Store.Configuration {
    var configuration = Store.Configuration()
    configuration.isReadOnly = readOnly
    configuration.cacheBytes = 1 << 20
    configuration.storage.automaticCompaction = false
    return configuration
}

/// Opens the store the input describes (read-only, then as the writer: recovery, schema
/// binding, a lightweight migration), reads everything, fetches with predicates, reads the
/// history and verifies. Every error must be a `StrataError`.
func openStore(_ bytes: [UInt8], fixingChecksums: Bool = false) {
    var storeFiles = files(fromArchive: bytes)
    if fixingChecksums {
        for (path, contents) in storeFiles where path.hasSuffix(".seg") { storeFiles[path] = fixChecksums(contents) }
    }
    let fs = MemoryFileSystem(files: storeFiles)
    expectTyped {
        let store = try Store(at: storePath, schema: FuzzSchemaV1.self, migrationPlan: nil, configuration: fuzzConfiguration(readOnly: true),
                              fileSystem: fs)
        defer { try? store.close() }
        try readEverything(store, FuzzItem.self)
        try fetchIndexed(store)
    }
    expectTyped {
        let store = try Store(at: storePath, schema: FuzzSchemaV2.self, migrationPlan: FuzzPlan.self,
                              configuration: fuzzConfiguration(readOnly: false), fileSystem: fs)
        defer { try? store.close() }
        try readEverything(store, FuzzSchemaV2.Item.self)
        let report = try store.verify()
        if verbose { print("StrataFuzzer: verify: \(report.isValid ? "valid" : "\(report)")") }
        let context = Context(store)
        _ = try context.insert(FuzzTag(label: "after", weight: 1))
        try context.save()
    }
}

func readEverything<Item: PersistentRecord>(_ store: Store, _: Item.Type) throws {
    let context = Context(store)
    _ = try context.fetch(FetchDescriptor<Item>())
    _ = try context.fetch(FetchDescriptor<FuzzTag>())
    _ = try context.fetch(FetchDescriptor<FuzzTag>(predicate: #Predicate { $0.weight > 2 }))
    if let first = try context.fetch(FetchDescriptor<FuzzTag>()).first { _ = try context.record(for: first.id) }
    _ = try store.fetchHistory()
}

func fetchIndexed(_ store: Store) throws {
    _ = try Context(store).fetch(FetchDescriptor<FuzzItem>(predicate: #Predicate { $0.rank >= 3 && $0.rank < 9 }))
    _ = try Context(store).fetch(FetchDescriptor<FuzzItem>(predicate: #Predicate { $0.name == "item 4" }))
}

/// Runs `body`; an error that is not a `StrataError` is a finding.
func expectTyped(_ body: () throws -> Void) {
    do { try body() } catch let error as StrataError {
        if verbose { print("StrataFuzzer: \(error)") }
    } catch {
        print("StrataFuzzer: untyped error \(type(of: error)): \(error)")
        abort()
    }
}

/// A segment file with the checksum of every frame (read from the start, while headers decode)
/// recomputed.
func fixChecksums(_ segment: [UInt8]) -> [UInt8] {
    var bytes = segment
    var position = SegmentHeader.size
    bytes.withUnsafeMutableBytes { raw in
        while position + FrameHeader.size <= raw.count {
            let header = UnsafeRawBufferPointer(rebasing: raw[position..<(position + FrameHeader.size)])
            guard let decoded = try? FrameHeader.decode(header) else { break }
            let end = position + FrameHeader.size + Int(decoded.storedLength)
            guard end <= raw.count else { break }
            let checksum = FrameHeader.computeChecksum(header: header, payload: UnsafeRawBufferPointer(rebasing: raw[(position + FrameHeader.size)..<end]))
            raw.storeBytes(of: checksum.littleEndian, toByteOffset: position + 44, as: UInt32.self)
            position += decoded.frameLength
        }
    }
    return bytes
}
