import StrataFormat
import StrataPageLog
import StrataSchema

/// What a verification of the record layer read.
package struct RecordVerification: Sendable {
    package var records = 0
    package var indexEntries = 0
    package var historyParts = 0
    package var quarantined = 0
    package var problems: [StoreProblem] = []
}

extension RecordStore {
    /// Checks every structure of the record layer in `snapshot` and reports every problem
    /// found, naming the page's file and offset when one is at fault (Architecture.md,
    /// invariants 18, 22 and 31): each record tree in id order with as many records as its root
    /// says, each record a valid record, each leaf's records within the range its ancestors
    /// give it; each index holding exactly one entry per record —
    /// entries ascending, each the key of its record's value; the schema catalog; the history
    /// journal's parts (contiguous per token, below the next token, decodable, weighing what
    /// its root says); the quarantine. A damaged tree is reported and the others are still
    /// checked.
    package func verify(_ snapshot: RecordSnapshot) -> RecordVerification {
        var result = RecordVerification()
        let root = snapshot.root
        func problem(_ what: String, page: UInt64? = nil) {
            let place = page.flatMap { log.place(of: $0, in: snapshot.snapshot) }
            result.problems.append(StoreProblem(file: place?.file ?? log.filePath("(record layer)"), offset: place?.offset, what: what))
        }
        func report(_ error: any Error, _ context: String) {
            switch error {
            case RecordTreeError.corruptNode(let pageID, let reason): problem("\(context): \(reason)", page: pageID)
            case RecordTreeError.missingPage(let pageID): problem("\(context): page \(pageID) is missing", page: pageID)
            case PageLogError.corruption(let file, let offset, let reason):
                result.problems.append(StoreProblem(file: file.hasPrefix("/") ? file : log.filePath(file), offset: offset, what: "\(context): \(reason)"))
            default: problem("\(context): \(error)")
            }
        }
        // The catalog.
        var newest: CatalogVersion?
        do {
            if let bytes = try snapshot.catalogBytes() {
                do {
                    let catalog = try SchemaCatalog.decode(bytes)
                    try catalog.checkInvariants()
                    newest = catalog.latest
                } catch { problem("schema catalog: \(error.reason)", page: root.catalogPageID) }
            } else if !root.entities.isEmpty {
                problem("records are stored but there is no schema catalog", page: StoreRoot.pageID)
            }
        } catch {
            report(error, "schema catalog")
        }
        // Ids come from the counter of the entity's hierarchy (the highest of its entities'):
        // a record of a sub-entity may hold an id its own entity's counter never handed out.
        var nextIDs: [UInt32: UInt64] = [:]
        for (entityID, entity) in root.entities {
            let top = newest?.ancestry(ofEntity: entityID).first?.id ?? entityID
            nextIDs[top] = max(nextIDs[top] ?? 0, entity.nextRowID)
        }
        // Record trees.
        for (entityID, entity) in root.entities.sorted(by: { $0.key < $1.key }) {
            let nextID = nextIDs[newest?.ancestry(ofEntity: entityID).first?.id ?? entityID] ?? entity.nextRowID
            var count: UInt64 = 0
            var previous: UInt64 = 0
            do {
                // Each leaf's records within the range its ancestors give it: one outside would
                // be seen by scans and missed by point lookups.
                let ranges = { (pageID: UInt64, first: UInt64, last: UInt64, low: UInt64, high: UInt64?) in
                    guard first < low || high.map({ last >= $0 }) ?? false else { return }
                    problem("entity \(entityID): leaf \(pageID) holds records \(first)–\(last), outside the range its parents give it "
                            + "(\(low) up to \(high.map(String.init) ?? "the end"))", page: pageID)
                }
                try snapshot.reader(for: entityID).scanRuns(from: 0, mapped: false, leafRanges: ranges) { run in
                    for index in 0..<run.count {
                        let id = run.id(index)
                        if id <= previous { problem("entity \(entityID): record \(id) follows record \(previous)", page: entity.tree.rootPageID) }
                        if id >= nextID { problem("entity \(entityID): record \(id) is not below the next id \(nextID)", page: StoreRoot.pageID) }
                        do { _ = try RecordCodec.decode(run.bytes(index)) } catch let error as FormatError {
                            problem("entity \(entityID), record \(id): \(error.reason)", page: entity.tree.rootPageID)
                        }
                        previous = id
                        count += 1
                    }
                    return true
                }
            } catch {
                report(error, "record tree of entity \(entityID)")
            }
            if count != entity.tree.count {
                problem("entity \(entityID): the tree holds \(count) records, its root says \(entity.tree.count)", page: StoreRoot.pageID)
            }
            result.records += Int(count)
        }
        // The record graph: ids unique per hierarchy, inverses listing their links back.
        if let newest {
            do { try verifyGraph(snapshot, version: newest) { problem($0) } } catch { report(error, "record graph") }
        }
        // Indexes: entries ascending, each its record's key; as many as records (invariant 22).
        for (id, index) in root.indexes.sorted(by: { $0.key < $1.key }) {
            let name = "index (\(id.entityID), \(id.attributeID))"
            let records = snapshot.reader(for: id.entityID)
            var count: UInt64 = 0
            var previous: [UInt8]?
            do {
                try IndexTreeReader(snapshot: snapshot.snapshot, root: index.tree, cache: cache).scan(from: []) { entry in
                    count += 1
                    if let previous, IndexNode.compare(previous, entry) >= 0 { problem("\(name): entries do not ascend", page: index.tree.rootPageID) }
                    previous = entry
                    let recordID = IndexKey.recordID(ofEntry: entry)
                    guard let bytes = try records.get(recordID) else {
                        problem("\(name): an entry names record \(recordID), which does not exist", page: index.tree.rootPageID)
                        return true
                    }
                    let key = try EntityIndexes.valueKey(of: id.attributeID, defaultKey: index.defaultKey, in: bytes, entityID: id.entityID, id: recordID)
                    if IndexKey.entry(key, id: recordID) != entry {
                        problem("\(name): the entry of record \(recordID) is not the key of its value", page: index.tree.rootPageID)
                    }
                    return true
                }
            } catch {
                report(error, name)
            }
            if count != index.tree.count || count != root.entities[id.entityID]?.tree.count ?? 0 {
                problem("\(name): \(count) entries, its root says \(index.tree.count), the entity has \(root.entities[id.entityID]?.tree.count ?? 0) records",
                        page: StoreRoot.pageID)
            }
            result.indexEntries += Int(count)
        }
        // The history journal.
        if let journal = root.history {
            var count: UInt64 = 0, bytes: UInt64 = 0
            var token: UInt64 = 0, nextPart: UInt64 = 0
            var entry = HistoryEntry(token: 0, timestamp: 0, author: nil, operations: [])
            do {
                try RecordTreeReader(snapshot: snapshot.snapshot, root: journal.tree, cache: cache).scan(from: 0, mapped: false) { key, raw in
                    count += 1
                    bytes += UInt64(raw.count)
                    let partToken = HistoryRoot.token(ofKey: key), part = HistoryRoot.part(ofKey: key)
                    if partToken >= journal.nextToken { problem("history: token \(partToken) is not below the next token \(journal.nextToken)", page: journal.tree.rootPageID) }
                    if partToken != token {
                        token = partToken
                        nextPart = 0
                        entry = HistoryEntry(token: token, timestamp: 0, author: nil, operations: [])
                    }
                    // Parts of a token at or below the horizon may be partly deleted already.
                    if part != nextPart && partToken > journal.horizon {
                        problem("history: token \(partToken) has part \(part) where part \(nextPart) was expected", page: journal.tree.rootPageID)
                    }
                    nextPart = part + 1
                    do { try HistoryCodec.decodePart(raw, isFirst: part == 0, into: &entry) } catch let error as FormatError {
                        problem("history: token \(partToken) part \(part): \(error.reason)", page: journal.tree.rootPageID)
                    }
                    return true
                }
            } catch {
                report(error, "history journal")
            }
            if count != journal.tree.count { problem("history: \(count) parts, its root says \(journal.tree.count)", page: StoreRoot.pageID) }
            if bytes != journal.bytes { problem("history: parts of \(bytes) bytes, its root says \(journal.bytes)", page: StoreRoot.pageID) }
            result.historyParts = Int(count)
        }
        // The quarantine.
        do {
            let quarantine = try QuarantineRoot.read(snapshot.snapshot.read(QuarantineRoot.pageID, mapped: false))
            var count: UInt64 = 0
            try RecordTreeReader(snapshot: snapshot.snapshot, root: quarantine.tree, cache: cache).scan(from: 0, mapped: false) { sequence, _ in
                count += 1
                if sequence >= quarantine.nextSequence { problem("quarantine: entry \(sequence) is not below \(quarantine.nextSequence)", page: QuarantineRoot.pageID) }
                return true
            }
            if count != quarantine.tree.count { problem("quarantine: \(count) entries, its root says \(quarantine.tree.count)", page: QuarantineRoot.pageID) }
            result.quarantined = Int(count)
        } catch {
            report(error, "quarantine")
        }
        return result
    }
}
