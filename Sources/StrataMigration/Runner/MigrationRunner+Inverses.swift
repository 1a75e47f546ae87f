import StrataRecords
import StrataSchema

/// A custom stage keeps declared inverses as `save()` does (Architecture.md, invariant 30):
/// after its transforms and before its switch, every link a relationship with an inverse
/// holds on one side is made to hold on the other side too, wherever a side's records were
/// written by the stage (its shadow trees).
///
/// For each such relationship R of entity E (and E's sub-entities) with inverse R' on D (and
/// D's sub-entities): every record e of E referring to d through R makes d refer to e through
/// R'. Run for every relationship of the pair, that gives both sides the **union** of the links
/// either side held after the transforms — so a transform sets one side (`Item.tags`,
/// inserting `Tag`s with `items` empty) and the other follows. A side the stage does not
/// rewrite cannot change before the switch: a link it lacks fails the stage, naming the record
/// and the fix (a transform of that entity). A to-one side that would hold two records fails
/// the stage too.
///
/// Memory stays bounded whatever the store's size: links are gathered in chunks of
/// destination identifiers, at most `linksPerChunk` at a time (one scan of E's records per
/// chunk), sorted, and each destination record is read and written once per chunk. The pass
/// only adds links, so it is idempotent: a stage resumed after a crash runs it again from the
/// start. Its commits are relaxed; the switch's durable commit makes them durable.
extension MigrationRunner {
    /// The most (destination, source) links gathered at once: 16 bytes each.
    static let linksPerChunk = 1 << 20

    /// Maintains the inverses of `version`'s relationships over the stage's shadow trees.
    func maintainInverses(records: RecordStore, version: CatalogVersion) throws {
        guard let shadowed = try translatingErrors({ try records.snapshot().root.migration?.shadows.keys }).map(Set.init),
              !shadowed.isEmpty else { return }
        for entity in version.entities {
            for relationship in entity.relationships {
                guard let inverseID = relationship.inverseID,
                      let inverse = Self.relationship(inverseID, of: relationship.destinationID, in: version) else { continue }
                let holders = version.family(ofEntity: entity.id), destinations = version.family(ofEntity: relationship.destinationID)
                guard !shadowed.isDisjoint(with: holders) || !shadowed.isDisjoint(with: destinations) else { continue }
                try propagate(relationship, of: holders, to: inverse, of: destinations, shadowed: shadowed, version: version, records: records)
            }
        }
    }

    /// Makes every link `relationship` holds on `holders`' records hold on `destinations`'
    /// records through `inverse`, chunk by chunk of destination identifiers.
    private func propagate(_ relationship: CatalogRelationship, of holders: [UInt32], to inverse: CatalogRelationship,
                           of destinations: [UInt32], shadowed: Set<UInt32>, version: CatalogVersion, records: RecordStore) throws {
        let schemaVersion = version.id
        // The old versions of the shadowed entities' records (their own trees never change
        // during a stage): what a transform dropped is there and not in the shadow tree.
        let before = try translatingErrors { try records.snapshot() }
        var low: UInt64 = 0
        while true {
            let high = try translatingErrors {
                try records.write(durability: .relaxed) { transaction -> UInt64? in
                    func tree(_ entityID: UInt32) -> RecordTreeWriter {
                        shadowed.contains(entityID) ? transaction.shadowTree(for: entityID, schemaVersion: schemaVersion)
                                                    : transaction.tree(for: entityID, schemaVersion: schemaVersion)
                    }
                    // Gather (destination, source) links with destinations from `low`, fewer than the chunk's bound.
                    var links: [(destination: UInt64, source: UInt64)] = []
                    var high = UInt64.max
                    for holder in holders {
                        try tree(holder).scan { id, bytes in
                            for destination in try Self.references(relationship.id, in: bytes) where destination >= low && destination < high {
                                links.append((destination, id))
                            }
                            if links.count > Self.linksPerChunk {
                                // Keep the lower half of the destinations: the rest is the next chunk's.
                                links.sort { $0.destination < $1.destination }
                                let cut = links[links.count / 2].destination
                                high = links.first { $0.destination > cut }?.destination ?? cut + 1
                                links.removeAll { $0.destination >= high }
                            }
                            return true
                        }
                    }
                    links.sort { ($0.destination, $0.source) < ($1.destination, $1.source) }
                    var index = 0
                    while index < links.count {
                        let destination = links[index].destination
                        var sources: [UInt64] = []
                        while index < links.count && links[index].destination == destination {
                            if sources.last != links[index].source { sources.append(links[index].source) }
                            index += 1
                        }
                        if try !link(destination, to: sources, through: inverse, in: destinations, tree: tree, version: version,
                                     relationship: relationship, of: holders, shadowed: shadowed),
                           try destinations.contains(where: { entityID in
                               guard shadowed.contains(entityID) else { return false }
                               return try before.reader(for: entityID).get(destination) != nil
                           }) {
                            try removeDroppedLink(destination, from: sources, through: relationship, of: holders, tree: tree,
                                                  version: version, shadowed: shadowed)
                        }
                    }
                    return high == .max ? nil : high
                }
            }
            guard let high else { return }
            low = high
        }
    }

    /// Adds `sources` to record `id`'s `inverse` (in whichever entity of `destinations` holds
    /// it); false when no entity of `destinations` holds a record `id`.
    private func link(_ id: UInt64, to sources: [UInt64], through inverse: CatalogRelationship, in destinations: [UInt32],
                      tree: (UInt32) -> RecordTreeWriter, version: CatalogVersion, relationship: CatalogRelationship,
                      of holders: [UInt32], shadowed: Set<UInt32>) throws -> Bool {
        for entityID in destinations {
            let records = tree(entityID)
            guard let bytes = try records.get(id) else { continue }
            var values: [UInt32: Value]
            do { values = try RecordCodec.decode(bytes) } catch {
                throw StrataError.corruption(file: "record \(Self.name(entityID, version))#\(id)", offset: 0, reason: "\(error)")
            }
            var current: [UInt64] = []
            if case .references(let ids)? = values[inverse.id] { current = ids }
            let missing = sources.filter { !current.contains($0) }
            guard !missing.isEmpty else { return true }
            let record = "\(Self.name(entityID, version))#\(id)"
            guard shadowed.contains(entityID) else {
                throw StrataError.invalidSchema(reason: "the stage's records link \(record) through \(relationship.name), but its inverse "
                    + "\(inverse.name) does not list \(missing.map(String.init).joined(separator: ", ")) and \(Self.name(entityID, version)) "
                    + "is not rewritten by the stage, so its inverse cannot follow; add a transform of \(Self.name(entityID, version)) "
                    + "(returning each record as it is) so the stage maintains it")
            }
            let linked = current + missing
            if inverse.cardinality == .toOne && linked.count > 1 {
                let holder = holders.first.map { Self.name($0, version) } ?? "#"
                throw StrataError.invalidSchema(reason: "\(record).\(inverse.name) is to-one, but after the stage's transforms "
                    + "\(linked.map { "\(holder)#\($0)" }.joined(separator: " and ")) link it through \(holder).\(relationship.name); "
                    + "let one of them only: in the transform of \(holder), keep in \(relationship.name) only the records whose "
                    + "\(inverse.name) is that record (or set \(inverse.name) to the one \(holder) record that keeps it)")
            }
            values[inverse.id] = .references(linked)
            _ = try records.update(id, bytes: RecordCodec.encode(values, keepingNullFields: true))
            return true
        }
        return false
    }

    /// Removes record `id` — which a transform of the stage dropped (returned nil for) — from
    /// `sources`' `relationship`, as a delete's nullify rule would. A source the stage does not
    /// rewrite cannot change: the stage fails naming it and the fix; so does a source whose
    /// relationship is required and would be left empty.
    private func removeDroppedLink(_ id: UInt64, from sources: [UInt64], through relationship: CatalogRelationship,
                                   of holders: [UInt32], tree: (UInt32) -> RecordTreeWriter, version: CatalogVersion,
                                   shadowed: Set<UInt32>) throws {
        let dropped = "\(Self.name(relationship.destinationID, version))#\(id)"
        for source in sources {
            for entityID in holders {
                let records = tree(entityID)
                guard let bytes = try records.get(source) else { continue }
                let record = "\(Self.name(entityID, version))#\(source)"
                guard shadowed.contains(entityID) else {
                    throw StrataError.invalidSchema(reason: "the stage dropped \(dropped) (its transform returned nil), but \(record) lists "
                        + "it in \(relationship.name), and \(Self.name(entityID, version)) is not rewritten by the stage, so the link cannot "
                        + "be removed; add a transform of \(Self.name(entityID, version)) (returning each record as it is) so the stage "
                        + "removes it, or keep the record")
                }
                var values: [UInt32: Value]
                do { values = try RecordCodec.decode(bytes) } catch {
                    throw StrataError.corruption(file: "record \(record)", offset: 0, reason: "\(error)")
                }
                guard case .references(let ids)? = values[relationship.id] else { break }
                let kept = ids.filter { $0 != id }
                if kept.isEmpty && !relationship.isOptional {
                    throw StrataError.invalidSchema(reason: "the stage dropped \(dropped) (its transform returned nil), the only record "
                        + "\(record)'s required \(relationship.name) links; set another in the transform of \(Self.name(entityID, version)), "
                        + "or keep the record")
                }
                values[relationship.id] = kept.isEmpty ? nil : .references(kept)
                _ = try records.update(source, bytes: RecordCodec.encode(values, keepingNullFields: true))
                break
            }
        }
    }

    /// The identifiers a relationship value of a stored record holds.
    private static func references(_ relationshipID: UInt32, in bytes: [UInt8]) throws -> [UInt64] {
        if case .references(let ids) = try RecordCodec.value(of: relationshipID, in: bytes) { return ids }
        return []
    }

    /// The relationship `id` of an entity, its inherited ones included.
    private static func relationship(_ id: UInt32, of entityID: UInt32, in version: CatalogVersion) -> CatalogRelationship? {
        for member in version.family(ofEntity: entityID) {
            if let found = version.resolvedRelationships(ofEntity: member).first(where: { $0.id == id }) { return found }
        }
        return nil
    }

    private static func name(_ entityID: UInt32, _ version: CatalogVersion) -> String {
        version.entity(id: entityID)?.name ?? "#\(entityID)"
    }
}
