import StrataFormat

extension SchemaCatalog {
    /// Checks the invariants listed on ``SchemaCatalog``; tests call it after every change.
    /// - Throws: `FormatError` naming the version and what is wrong.
    package func checkInvariants() throws(FormatError) {
        try checkInvariants(versionOffsets: nil, formatVersion: nil)
    }

    /// The catalog format version these versions need: 3 when an entity, attribute or
    /// relationship keeps an original name; else 2 when a property id changes identity in a way
    /// format 1 forbids (see ``checkInvariants(versionOffsets:formatVersion:)``); else 1.
    package var formatVersionNeeded: UInt16 {
        if hasOriginalNames { return 3 }
        var identities: [UInt32: PropertyIdentity] = [:]
        for version in versions {
            for (id, identity) in Self.propertyIdentities(of: version) {
                if let earlier = identities[id], earlier != identity { return 2 }
                identities[id] = identity
            }
        }
        return 1
    }

    /// `versionOffsets` (from the decoder) place each error at the start of its version.
    /// `formatVersion` is the catalog's (nil: either). Format 1 keeps every property id's
    /// identity; format 2 — required exactly when one of them happens — also lets an id change
    /// in two ways: an attribute's type tag from a plain one (1 … 7) to codable (8), and its
    /// entity (attribute or relationship) to an ancestor of the previous one that is new in
    /// that version and still has the previous entity below it (a parent adopted).
    package func checkInvariants(versionOffsets: [Int]?, formatVersion: UInt16?) throws(FormatError) {
        var changedIdentity = false
        var seenEntityIDs: Set<UInt32> = []
        var identities: [UInt32: PropertyIdentity] = [:]
        var previousVersionID: UInt32 = 0
        var entityHistory = IDHistory(kind: "entity")
        var propertyHistory = IDHistory(kind: "property")
        for (index, version) in versions.enumerated() {
            let offset = versionOffsets.flatMap { index < $0.count ? $0[index] : nil } ?? 0
            func fail(_ reason: String) -> FormatError { FormatError("schema catalog version \(version.id): \(reason)", at: offset) }

            // Invariant 1.
            guard version.id > previousVersionID, version.id < nextVersionID else {
                throw fail("version ids must increase from 1 and stay below the next version id \(nextVersionID)")
            }
            previousVersionID = version.id
            // Invariant 2.
            if let problem = idProblem(in: version) { throw fail(problem) }
            // Invariant 4.
            let entityIDs = Set(version.entities.map(\.id))
            let propertyIDs = Set(version.entities.flatMap { $0.attributes.map(\.id) + $0.relationships.map(\.id) })
            if let problem = entityHistory.advance(to: entityIDs) ?? propertyHistory.advance(to: propertyIDs) {
                throw fail(problem)
            }
            for (id, identity) in Self.propertyIdentities(of: version) {
                if let earlier = identities[id], earlier != identity {
                    guard formatVersion != 1,
                          Self.isAllowedChange(from: earlier, to: identity, in: version, newEntity: !seenEntityIDs.contains(identity.entityID))
                    else { throw fail("property id \(id) changed entity, kind or storage type since an earlier version") }
                    changedIdentity = true
                }
                identities[id] = identity
            }
            seenEntityIDs.formUnion(entityIDs)
            // Invariant 3.
            if let problem = Self.referenceProblem(in: version, entityIDs: entityIDs) { throw fail(problem) }
            // Invariant 5.
            let shape = version.shape
            do { try shape.validate() } catch { throw fail("the recorded schema is invalid: \(error)") }
            guard shape.checksum == version.checksum else {
                throw fail("the recorded schema's checksum is \(shape.checksum), not the stored \(version.checksum)")
            }
        }
        // Format 2 and 3 exactly when needed: one byte string per catalog.
        if formatVersion == 2 && !changedIdentity {
            throw FormatError("catalog format version 2 without a property id that changes identity (write 1)", at: 8)
        }
        if formatVersion == 3 && !hasOriginalNames {
            throw FormatError("catalog format version 3 without an original name (write \(changedIdentity ? 2 : 1))", at: 8)
        }
    }

    /// Whether an entity, attribute or relationship of some version keeps an original name.
    var hasOriginalNames: Bool {
        versions.contains { version in
            version.entities.contains { entity in
                entity.originalName != nil || entity.attributes.contains { $0.originalName != nil }
                    || entity.relationships.contains { $0.originalName != nil }
            }
        }
    }

    /// Whether a property id may change identity from `earlier` to `now` in `version` (format 2):
    /// an attribute stays an attribute and a relationship a relationship; a type tag stays or
    /// goes from plain to codable; the entity stays or becomes an ancestor, new in `version`
    /// (`newEntity`), of the earlier entity.
    private static func isAllowedChange(from earlier: PropertyIdentity, to now: PropertyIdentity, in version: CatalogVersion,
                                        newEntity: Bool) -> Bool
    {
        switch (earlier.attributeTypeTag, now.attributeTypeTag) {
        case (nil, nil): break
        case (let before?, let after?) where before == after || (before != 8 && after == 8): break
        default: return false
        }
        if earlier.entityID == now.entityID { return true }
        guard newEntity else { return false }
        let chain = version.ancestry(ofEntity: earlier.entityID)
        return chain.last?.id == earlier.entityID && chain.dropLast().contains { $0.id == now.entityID }
    }

    /// Invariant 2: ids in range, increasing, property ids unique across the version.
    private func idProblem(in version: CatalogVersion) -> String? {
        guard Self.isIncreasing(version.entities.map(\.id), below: nextEntityID) else {
            return "entity ids must increase from 1 and stay below the next entity id \(nextEntityID)"
        }
        var seen: Set<UInt32> = []
        for entity in version.entities {
            guard Self.isIncreasing(entity.attributes.map(\.id), below: nextPropertyID),
                  Self.isIncreasing(entity.relationships.map(\.id), below: nextPropertyID)
            else { return "property ids of \(entity.name) must increase from 1 and stay below \(nextPropertyID)" }
            for id in entity.attributes.map(\.id) + entity.relationships.map(\.id) where !seen.insert(id).inserted {
                return "property id \(id) is used twice"
            }
        }
        return nil
    }

    /// Invariant 3: parents, destinations and inverses exist in the version.
    private static func referenceProblem(in version: CatalogVersion, entityIDs: Set<UInt32>) -> String? {
        for entity in version.entities {
            if let parentID = entity.parentID, !entityIDs.contains(parentID) {
                return "entity \(entity.name) has unknown parent id \(parentID)"
            }
            for relationship in entity.relationships {
                guard entityIDs.contains(relationship.destinationID) else {
                    return "relationship \(entity.name).\(relationship.name) has unknown destination id \(relationship.destinationID)"
                }
                if let inverseID = relationship.inverseID,
                   !version.resolvedRelationships(ofEntity: relationship.destinationID).contains(where: { $0.id == inverseID })
                {
                    return "the inverse id \(inverseID) of \(entity.name).\(relationship.name) is not a relationship of its destination"
                }
            }
        }
        return nil
    }

    /// What a property id stands for, which must not change across versions (invariant 4).
    private struct PropertyIdentity: Equatable {
        var entityID: UInt32
        /// The attribute's storage type tag; nil for a relationship.
        var attributeTypeTag: UInt8?
    }

    private static func propertyIdentities(of version: CatalogVersion) -> [(UInt32, PropertyIdentity)] {
        version.entities.flatMap { entity in
            entity.attributes.map { ($0.id, PropertyIdentity(entityID: entity.id, attributeTypeTag: $0.type.storageTag)) }
                + entity.relationships.map { ($0.id, PropertyIdentity(entityID: entity.id, attributeTypeTag: nil)) }
        }
    }

    /// The ids of one space seen so far, for the allocation rules of invariant 4: ids new in a
    /// version are larger than every earlier id, and an id missing from a version never returns.
    private struct IDHistory {
        let kind: String
        var largest: UInt32 = 0
        var current: Set<UInt32> = []
        var retired: Set<UInt32> = []

        /// Moves to the next version's ids; a description of the broken rule, or nil.
        mutating func advance(to ids: Set<UInt32>) -> String? {
            retired.formUnion(current.subtracting(ids))
            if let reused = ids.intersection(retired).min() {
                return "\(kind) id \(reused) reappears after a version without it (ids are never reused)"
            }
            let added = ids.subtracting(current)
            if let early = added.min(), early <= largest {
                return "new \(kind) id \(early) is not above every earlier \(kind) id (\(largest))"
            }
            largest = max(largest, added.max() ?? 0)
            current = ids
            return nil
        }
    }

    private static func isIncreasing(_ ids: [UInt32], below limit: UInt32) -> Bool {
        var previous: UInt32 = 0
        for id in ids {
            guard id > previous, id < limit else { return false }
            previous = id
        }
        return true
    }
}
