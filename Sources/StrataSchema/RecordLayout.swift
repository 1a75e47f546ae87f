/// One entity's attributes under one catalog version, arranged for coding typed records
/// straight to and from ``RecordCodec`` bytes: ids ascending, each with its name and its
/// catalog default, and the name → id and name → position maps the record coders look keys
/// up in. Built once per entity (a schema binding keeps one per entity), so no per-record
/// dictionary of names is built.
///
/// Immutable; safe to share between threads.
package final class RecordLayout: Sendable {
    /// Attribute ids, ascending; `names[i]` and `defaults[i]` belong to `ids[i]`.
    let ids: [UInt32]
    let names: [String]
    /// The catalog default of each attribute, `.null` for none.
    let defaults: [Value]
    /// The positions of the optional attributes with a default (ascending): a record that
    /// holds no value for one of them stores a null field, so that it reads back as nil and
    /// not as the default (which only records written before the attribute existed take).
    let nullablePositions: [Int]
    /// Attribute name → index into `ids`.
    let positions: [String: Int]
    /// Attribute name → id, what ``RecordEncoder/encode(_:attributeIDs:)`` takes.
    package let attributeIDs: [String: UInt32]
    /// The bytes a record encoder reserves up front: enough for most records of a few short
    /// strings and scalars, so the buffer rarely grows.
    let estimatedRecordSize: Int

    /// A layout of `attributes` (in any order). For a repeated name the first wins, as in
    /// `CatalogVersion.attributeIDs(ofEntity:)`; a stored value of an id that two names share
    /// (never the case in a valid catalog) decodes under the first of them. `nullable`: the ids
    /// of optional attributes (with a default: see `nullablePositions`).
    package init(attributes: [(name: String, id: UInt32, defaultValue: Value)], nullable: Set<UInt32> = []) {
        var seenNames = Set<String>()
        var kept: [(name: String, id: UInt32, defaultValue: Value)] = []
        for attribute in attributes where seenNames.insert(attribute.name).inserted { kept.append(attribute) }
        kept = kept.enumerated().sorted { ($0.element.id, $0.offset) < ($1.element.id, $1.offset) }.map(\.element)
        ids = kept.map(\.id)
        names = kept.map(\.name)
        defaults = kept.map(\.defaultValue)
        nullablePositions = kept.indices.filter { nullable.contains(kept[$0].id) && !kept[$0].defaultValue.isNull }
        positions = Dictionary(uniqueKeysWithValues: kept.enumerated().map { ($1.name, $0) })
        attributeIDs = Dictionary(uniqueKeysWithValues: kept.map { ($0.name, $0.id) })
        estimatedRecordSize = 64 + 32 * kept.count
    }

    /// A layout equal to `other` that shares no memory with it: its own object, arrays and
    /// name strings. For each thread of a concurrent transform: coding a record retains the
    /// layout's arrays, and a reference count that threads write in turn moves its cache line
    /// (which holds the fields read next) from core to core on every record (~7 % of the CPU
    /// time of a `mapConcurrently` migration on two cores).
    package init(privateCopyOf other: RecordLayout) {
        func copy(_ name: String) -> String { String(decoding: Array(name.utf8), as: UTF8.self) }
        let names = other.names.map(copy)
        ids = other.ids.map { $0 }
        self.names = names
        defaults = other.defaults.map { $0 }
        nullablePositions = other.nullablePositions.map { $0 }
        positions = Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, $0) })
        attributeIDs = Dictionary(uniqueKeysWithValues: zip(names, ids).map { ($0, $1) })
        estimatedRecordSize = other.estimatedRecordSize
    }

    /// The layout of an entity's resolved (inherited first) attributes and relationships in
    /// `version` (a relationship's value is stored under its property id, without default).
    package convenience init(version: CatalogVersion, entityID: UInt32) {
        let attributes = version.resolvedAttributes(ofEntity: entityID)
        self.init(attributes: attributes.map { ($0.name, $0.id, $0.defaultValue) }
                  + version.resolvedRelationships(ofEntity: entityID).map { ($0.name, $0.id, Value.null) },
                  nullable: Set(attributes.filter(\.isOptional).map(\.id)))
    }

    /// The index of the attribute named `name`, or nil. A few names are compared in turn:
    /// comparing short names is cheaper than hashing one (hashing was ~8 % of coding time).
    @inline(__always)
    func position(of name: String) -> Int? {
        if names.count > Self.largestScanned { return positions[name] }
        for index in names.indices where names[index] == name { return index }
        return nil
    }

    /// Layouts with more attributes look names up by hash.
    private static let largestScanned = 16
}
