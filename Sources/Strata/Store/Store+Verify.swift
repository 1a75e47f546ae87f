import StrataPageLog
import StrataRecords
import StrataSchema

/// What `Store.verify()` checked and every problem it found.
public struct VerificationReport: Sendable, CustomStringConvertible {
    /// One problem: where (a file of the store folder and a byte offset in it, when known) and what.
    public struct Problem: Sendable, Equatable, CustomStringConvertible {
        /// The path of the file at fault (a segment file for a damaged frame), or a description
        /// of the structure when no single file is (the page log's in-memory state).
        public let file: String
        /// The byte offset in `file` (a frame's start), when known.
        public let offset: UInt64?
        /// What is wrong.
        public let what: String

        /// `file at offset: what`.
        public var description: String { "\(file)\(offset.map { " at \($0)" } ?? ""): \(what)" }
    }

    /// Every problem found, in the order found (none: the store is sound).
    public let problems: [Problem]
    /// Pages read and verified (checksum, header, decompression).
    public let pages: Int
    /// Records read and decoded.
    public let records: Int
    /// Index entries read, each checked against its record.
    public let indexEntries: Int
    /// Parts of the history journal read and decoded.
    public let historyParts: Int

    /// Whether no problem was found.
    public var isValid: Bool { problems.isEmpty }

    /// A summary, then one line per problem.
    public var description: String {
        let summary = "\(pages) pages, \(records) records, \(indexEntries) index entries, \(historyParts) history parts: "
            + (problems.isEmpty ? "no problem" : "\(problems.count) problem\(problems.count == 1 ? "" : "s")")
        return ([summary] + problems.map { "  \($0)" }).joined(separator: "\n")
    }
}

extension VerificationReport {
    /// Checks `snapshot` of `records`: the superblock slots and the log's length, the page
    /// log's frames and bookkeeping, then the record layer (`Store.verify()`, and the `strata`
    /// tool through `StoreInspection`). `progress` is called with the pages read so far while
    /// the page log's frames are read (the longest part).
    init(checking snapshot: RecordSnapshot, of records: RecordStore, progress: ((Int) -> Void)? = nil) {
        let logProblems = records.log.verifySuperblock() + records.log.verifyLogEnds()
        let (pages, pageProblems) = records.log.verifyPages(in: snapshot.snapshot, progress: progress)
        let recordLayer = records.verify(snapshot)
        self.init(problems: (logProblems + pageProblems + recordLayer.problems).map { Problem(file: $0.file, offset: $0.offset, what: $0.what) },
                  pages: pages, records: recordLayer.records, indexEntries: recordLayer.indexEntries, historyParts: recordLayer.historyParts)
    }
}

extension VerificationReport {
    /// Checks `snapshot` of `records` at the page log's level only: the superblock slots and the
    /// log's length, then every page's frame — checksum, header, the page id, LSN and length the
    /// table expects — without decompressing pages or decoding records (`records`,
    /// `indexEntries` and `historyParts` are 0). A backup's `.frames` verification.
    init(checkingFramesOf snapshot: RecordSnapshot, of records: RecordStore) {
        let logProblems = records.log.verifySuperblock() + records.log.verifyLogEnds()
        let (pages, pageProblems) = records.log.verifyFrames(in: snapshot.snapshot)
        self.init(problems: (logProblems + pageProblems).map { Problem(file: $0.file, offset: $0.offset, what: $0.what) },
                  pages: pages, records: 0, indexEntries: 0, historyParts: 0)
    }
}

extension Store {
    /// Checks the whole store as of this moment and reports every problem it finds, without
    /// stopping at the first and without changing anything: both superblock slots (a damaged
    /// slot is reported with its offset even though the store opened from the other) and the
    /// checkpoint roots they name; that no segment file is shorter than the log this store
    /// wrote to it (a cut that would lose committed transactions at the next open); every
    /// page's frame (checksum, header, page id and LSN the table expects, decompression) and
    /// the page log's bookkeeping; every record tree (order, counts, each record's encoding);
    /// every index (exactly one entry per record, each the key of its record's value); the
    /// schema catalog; the history journal; the quarantine. Reads every page of the store: its cost grows with
    /// the store (run it in tests, in a diagnostics screen, or after a reported problem).
    /// - Throws: only when the store cannot be read at all (closed; a read-only store whose
    ///   schema another process changed); damage is reported in the result.
    public func verify() throws -> VerificationReport {
        VerificationReport(checking: try snapshot(), of: records)
    }

    /// Checks the whole store as ``verify()`` does, on a thread of its own while the calling
    /// task is suspended.
    /// - Throws: as ``verify()``.
    public func verify() async throws -> VerificationReport {
        try await runOffTheCooperativePool { try self.verify() }
    }
}

extension Store {
    /// Stores `values` (by property name of the bound version) as record `id` of `entity`,
    /// past every check a save makes — unique ids in a hierarchy, inverses, references: for
    /// tests of ``verify()``, which must find what this leaves.
    package func insertUnchecked(entity: String, id: UInt64, values: [String: Value]) throws {
        let entityID = try binding.entityID(of: entity)
        let properties = binding.version.resolvedAttributes(ofEntity: entityID).map { ($0.name, $0.id) }
            + binding.version.resolvedRelationships(ofEntity: entityID).map { ($0.name, $0.id) }
        let ids = Dictionary(properties, uniquingKeysWith: { first, _ in first })
        var fields: [UInt32: Value] = [:]
        for (name, value) in values {
            guard let id = ids[name] else { throw StrataError.invalidSchema(reason: "\(entity) has no property \(name)") }
            fields[id] = value
        }
        try translatingErrors {
            try records.write { try $0.tree(for: entityID, schemaVersion: binding.versionID).insert(id, bytes: RecordCodec.encode(fields)) }
        }
    }
}
