import StrataSchema

extension RecordStore {
    /// The record graph's checks of `verify` (Architecture.md, invariants 23 and 30), on the
    /// catalog's newest version: record ids unique across each inheritance hierarchy, and every
    /// link of a relationship with an inverse listed by the inverse on the other side. Reports
    /// at most `maximumReports` problems per check (then how many more), reading each link's
    /// destination record once per link: memory stays bounded.
    func verifyGraph(_ snapshot: RecordSnapshot, version: CatalogVersion, problem: (String) -> Void) throws {
        let maximumReports = 10
        let root = snapshot.root
        func name(_ entityID: UInt32) -> String { version.entity(id: entityID)?.name ?? "entity \(entityID)" }
        // Ids unique in a hierarchy: each record of one tree looked up in the hierarchy's others.
        for entity in version.entities where entity.parentID == nil {
            let members = version.family(ofEntity: entity.id).filter { (root.entities[$0]?.tree.count ?? 0) > 0 }
            guard members.count > 1 else { continue }
            var found = 0
            for (index, member) in members.enumerated() {
                for other in members[(index + 1)...] {
                    let reader = snapshot.reader(for: other)
                    try snapshot.reader(for: member).scan(from: 0, mapped: false) { id, _ in
                        if try reader.get(id) != nil {
                            found += 1
                            if found <= maximumReports {
                                problem("record id \(id) is held by both \(name(member)) and \(name(other)): ids must be unique in the "
                                    + "hierarchy of \(entity.name) (a fetch of \(entity.name) returns both, and a lookup by id finds either)")
                            }
                        }
                        return true
                    }
                }
            }
            if found > maximumReports { problem("\(found - maximumReports) more record ids are held twice in the hierarchy of \(entity.name)") }
        }
        // Inverses: every link's destination lists the source back.
        for entity in version.entities {
            for relationship in entity.relationships {
                // Only pairs that name each other: a save maintains the other side of a
                // relationship that names its inverse, so one named from one side only may
                // lack links the app removed from that side.
                guard let inverseID = relationship.inverseID,
                      version.resolvedRelationships(ofEntity: relationship.destinationID).contains(where: {
                          $0.id == inverseID && $0.inverseID == relationship.id
                      }) else { continue }
                let destinations = version.family(ofEntity: relationship.destinationID)
                var found = 0
                for holder in version.family(ofEntity: entity.id) {
                    try snapshot.reader(for: holder).scan(from: 0, mapped: false) { id, bytes in
                        guard case .references(let ids) = try RecordCodec.value(of: relationship.id, in: bytes) else { return true }
                        for destination in ids {
                            for member in destinations {
                                guard let target = try snapshot.reader(for: member).get(destination) else { continue }
                                var back: [UInt64] = []
                                if case .references(let ids) = try RecordCodec.value(of: inverseID, in: target) { back = ids }
                                if !back.contains(id) {
                                    found += 1
                                    if found <= maximumReports {
                                        problem("\(name(holder))#\(id) refers to \(name(member))#\(destination) through \(relationship.name), "
                                            + "but that record's inverse does not list it")
                                    }
                                }
                                break
                            }
                        }
                        return true
                    }
                }
                if found > maximumReports {
                    problem("\(found - maximumReports) more links of \(entity.name).\(relationship.name) are missing from their inverse")
                }
            }
        }
    }
}
