import StrataFormat
import StrataPageLog
import StrataSchema

/// How much history a store keeps (Architecture.md, invariant 31): entries older than
/// `maximumAge`, and the oldest entries while the journal weighs more than `maximumBytes`,
/// are deleted by the commits that follow, a bounded batch each.
package struct HistoryLimits: Sendable {
    /// Microseconds; nil: no age limit.
    package var maximumAge: Int64?
    /// Nil: no size limit.
    package var maximumBytes: UInt64?
    /// The time of the transaction, microseconds since 1970.
    package var now: Int64 = 0

    package init(maximumAge: Int64? = nil, maximumBytes: UInt64? = nil, now: Int64 = 0) {
        self.maximumAge = maximumAge
        self.maximumBytes = maximumBytes
        self.now = now
    }
}

/// A history operation a caller got wrong.
package enum HistoryError: Error, Equatable, Sendable {
    /// A consumer name that is empty, longer than 255 UTF-8 bytes, or one too many.
    case invalidConsumer(String, reason: String)
}

extension RecordTransaction {
    /// The entity id written in the journal's page headers.
    package static let historyEntityID = UInt32.max
    /// Parts a commit deletes at least, when the limits want some deleted.
    static let minimumPrunedParts = 256

    /// The journal's tree writer in this transaction.
    private func historyWriter() -> RecordTreeWriter {
        if let historyTree { return historyTree }
        // The journal is read in order (a token's parts, one token after another), never by
        // point lookups: its leaves are compressed whole, not for partial reads.
        var journalOptions = options
        journalOptions.partialReadLeaves = false
        let writer = RecordTreeWriter(transaction: transaction, root: root.history?.tree ?? .empty, entityID: Self.historyEntityID,
                                      schemaVersion: 0, options: journalOptions)
        writer.writtenNodes = writtenNodes
        historyTree = writer
        return writer
    }

    /// Journals this transaction's record changes under the next token (creating the store's
    /// journal on first use): every record tree of the transaction reports to the recorder.
    @discardableResult
    package func journal(author: String?, timestamp: Int64) -> HistoryRecorder {
        if let history {
            history.author = author
            return history
        }
        if root.history == nil {
            root.history = HistoryRoot()
            rootChanged = true
        }
        let recorder = HistoryRecorder(token: root.history?.nextToken ?? 1, timestamp: timestamp, tree: historyWriter())
        recorder.author = author
        history = recorder
        for tree in trees.values { tree.journal = recorder }
        return recorder
    }

    /// Tells the journal how a migration's switch changes each entity it has a shadow tree
    /// for: the records of the old tree and of the shadow, matched by count.
    package func recordShadowCounts() {
        guard let history, let shadows = root.migration?.shadows else { return }
        for (entityID, shadow) in shadows.sorted(by: { $0.key < $1.key }) {
            let old = root.entities[entityID]?.tree.count ?? 0, new = shadow.tree.count
            let kept = min(old, new)
            history.recordMigration(entityID: entityID, inserted: new - kept, updated: kept, deleted: old - kept)
        }
    }

    /// The journal as this transaction sees it.
    package var historyRoot: HistoryRoot? { root.history }

    /// Writes the journal entry (if any record changed), applies the limits, and updates the
    /// journal's root; a commit that changed records without journaling them moves the horizon
    /// past itself, so no reader mistakes the journal for complete across it.
    func finishHistory(recordsChanged: Bool) throws {
        // A store that never journaled gets its journal's root at its first unjournaled change
        // of records too, so the horizon moves past that commit (invariant 31 c): a reader from
        // the start then gets `historyTruncated` rather than a history silently missing it.
        guard var journal = root.history ?? (history == nil && recordsChanged ? HistoryRoot() : nil) else { return }
        let before = journal
        if let history {
            try history.finish()
            if !history.isEmpty {
                guard journal.nextToken < HistoryRoot.maximumToken else {
                    throw RecordTreeError.invalidRecord(entityID: Self.historyEntityID, recordID: journal.nextToken, reason: "history tokens exhausted")
                }
                journal.nextToken += 1
                journal.bytes += history.bytesWritten
                if journal.firstTimestamp == 0 { journal.firstTimestamp = history.timestamp }
                journal.lastTimestamp = max(journal.lastTimestamp, history.timestamp)
            }
            root.history = journal
            _ = try pruneHistory(maximumParts: max(Self.minimumPrunedParts, 2 * Int(history.partsWritten)))
            journal = root.history ?? journal
        } else if recordsChanged {
            guard journal.nextToken < HistoryRoot.maximumToken else {
                throw RecordTreeError.invalidRecord(entityID: Self.historyEntityID, recordID: journal.nextToken, reason: "history tokens exhausted")
            }
            journal.horizon = journal.nextToken
            journal.nextToken += 1
            journal.hasStaleEntries = journal.tree.count > 0
        }
        if let historyTree, historyTree.changed { journal.tree = try historyTree.finish() }
        if journal != before {
            root.history = journal
            rootChanged = true
        }
    }

    /// Deletes up to `maximumParts` parts of entries the journal no longer keeps: those at or
    /// below the horizon, those all consumers have passed, and the oldest while `historyLimits`
    /// want them gone. Returns whether nothing is left to delete.
    package func pruneHistory(maximumParts: Int) throws -> Bool {
        guard var journal = root.history else { return true }
        if let passed = journal.consumers.values.min(), passed > journal.horizon {
            journal.horizon = passed
            journal.hasStaleEntries = true
        }
        let limits = historyLimits
        let tooOld = { (timestamp: Int64) in limits.maximumAge.map { timestamp < limits.now - $0 } ?? false }
        var freed: UInt64 = 0
        let overSize = { limits.maximumBytes.map { journal.bytes - min(journal.bytes, freed) > $0 } ?? false }
        guard journal.hasStaleEntries || overSize() || (journal.firstTimestamp != 0 && tooOld(journal.firstTimestamp)) else {
            if journal != root.history { root.history = journal; rootChanged = true }
            return true
        }
        let writer = historyWriter()
        var doomed: [UInt64] = []
        var firstKept: Int64?
        try writer.scan(from: 0) { key, bytes in
            guard doomed.count < maximumParts else { return false }
            let token = HistoryRoot.token(ofKey: key)
            if token > journal.horizon {
                // The first part of a kept entry: parts of one token are contiguous, and only
                // tokens up to the horizon are ever deleted in part.
                guard HistoryRoot.part(ofKey: key) == 0, bytes.count >= 10 else {
                    throw RecordTreeError.corruptNode(pageID: 0, reason: "history entry \(token) starts with part \(HistoryRoot.part(ofKey: key))")
                }
                let timestamp = bytes.withUnsafeBytes { Int64(littleEndian: $0.loadUnaligned(fromByteOffset: 2, as: Int64.self)) }
                guard overSize() || tooOld(timestamp) else {
                    firstKept = timestamp
                    return false
                }
                journal.horizon = token
            }
            doomed.append(key)
            freed += UInt64(bytes.count)
            return true
        }
        for key in doomed { try writer.delete(key) }
        journal.bytes -= min(journal.bytes, freed)
        let finished = firstKept != nil || writer.root.count == 0
        journal.hasStaleEntries = !finished
        if let firstKept { journal.firstTimestamp = firstKept } else if writer.root.count == 0 { journal.firstTimestamp = 0 }
        root.history = journal
        rootChanged = true
        return finished
    }

    /// Makes every entry of a token below `token` invisible (deleted by `pruneHistory`).
    package func deleteHistory(before token: UInt64) {
        guard var journal = root.history, token >= 1 else { return }
        let horizon = min(token - 1, journal.nextToken - 1)
        guard horizon > journal.horizon else { return }
        journal.horizon = horizon
        journal.hasStaleEntries = journal.tree.count > 0 || historyTree.map { $0.root.count > 0 } == true
        root.history = journal
        rootChanged = true
    }

    /// Sets (or, with nil, removes) a named consumer's last-seen token.
    package func setHistoryConsumer(_ name: String, token: UInt64?) throws {
        var journal = root.history ?? HistoryRoot()
        let length = name.utf8.count
        guard length >= 1, length <= HistoryRoot.maximumNameLength else {
            throw HistoryError.invalidConsumer(name, reason: "a consumer name has 1 to \(HistoryRoot.maximumNameLength) UTF-8 bytes")
        }
        if let token {
            guard journal.consumers[name] != nil || journal.consumers.count < HistoryRoot.maximumConsumers else {
                throw HistoryError.invalidConsumer(name, reason: "a store has at most \(HistoryRoot.maximumConsumers) consumers")
            }
            journal.consumers[name] = min(token, journal.nextToken - 1)
        } else {
            journal.consumers[name] = nil
        }
        root.history = journal
        rootChanged = true
    }
}

extension RecordSnapshot {
    /// The journal's root, or nil when the store has no journal yet.
    package var history: HistoryRoot? { root.history }

    /// Calls `body` with each journaled transaction whose token is above `after` (and the
    /// horizon) and at most `through`, in token order (descending when `backward`), until it
    /// returns false. With `entities`, each entry holds only the operations about those
    /// entities (and schema changes); every operation is checked all the same.
    package func historyEntries(after: UInt64, through: UInt64, backward: Bool, entities: Set<UInt32>? = nil,
                                _ body: (HistoryEntry) throws -> Bool) throws {
        guard let journal = root.history, journal.tree.count > 0 else { return }
        let low = max(after, journal.horizon)
        let high = min(through, journal.nextToken - 1)
        guard low < high else { return }
        let reader = RecordTreeReader(snapshot: snapshot, root: journal.tree, cache: cache)
        func corrupt(_ key: UInt64, _ reason: String) -> RecordTreeError {
            .corruptNode(pageID: journal.tree.rootPageID, reason: "history entry \(HistoryRoot.token(ofKey: key)) part \(HistoryRoot.part(ofKey: key)): \(reason)")
        }
        if !backward {
            var entry: HistoryEntry?
            var stopped = false
            var nextPart: UInt64 = 0
            try reader.scan(from: HistoryRoot.key(token: low + 1, part: 0)) { key, raw in
                let token = HistoryRoot.token(ofKey: key), part = HistoryRoot.part(ofKey: key)
                if let current = entry, current.token != token {
                    entry = nil
                    guard try body(current) else { stopped = true; return false }
                }
                guard token <= high else { return false }
                if part == 0 {
                    entry = HistoryEntry(token: token, timestamp: 0, author: nil, operations: [])
                } else if entry?.token != token || part != nextPart {
                    throw corrupt(key, "a part without the parts before it")
                }
                nextPart = part + 1
                guard var current = entry else { return false }
                entry = nil  // `current` alone holds the operations: appending copies nothing
                do {
                    try HistoryCodec.decodePart(raw, isFirst: part == 0, into: &current, entities: entities)
                } catch let error as FormatError {
                    throw corrupt(key, error.reason)
                }
                entry = current
                return true
            }
            if !stopped, let entry { _ = try body(entry) }
            return
        }
        // Backward: an entry's parts arrive last part first; they are decoded in order once
        // its first part arrives.
        var parts: [[UInt8]] = []
        var partsToken: UInt64 = 0, expectedPart: UInt64 = 0
        try reader.scanBackward(from: HistoryRoot.key(token: high, part: (1 << HistoryRoot.partBits) - 1)) { key, raw in
            let token = HistoryRoot.token(ofKey: key), part = HistoryRoot.part(ofKey: key)
            guard token > low else { return false }
            if token != partsToken {
                guard parts.isEmpty else { throw corrupt(key, "an entry without its first part") }
                partsToken = token
            } else if part + 1 != expectedPart {
                throw corrupt(key, "parts are not contiguous")
            }
            expectedPart = part
            guard part == 0 else {
                parts.append(Array(raw))
                return true
            }
            var entry = HistoryEntry(token: token, timestamp: 0, author: nil, operations: [])
            do {
                // Part 0 is read in place; the later parts were copied as they went by.
                try HistoryCodec.decodePart(raw, isFirst: true, into: &entry, entities: entities)
                for bytes in parts.reversed() {
                    try bytes.withUnsafeBytes { raw in try HistoryCodec.decodePart(raw, isFirst: false, into: &entry, entities: entities) }
                }
            } catch let error as FormatError {
                throw corrupt(key, error.reason)
            }
            parts.removeAll(keepingCapacity: true)
            return try body(entry)
        }
    }
}
