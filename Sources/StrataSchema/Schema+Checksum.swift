import StrataFormat

extension Schema {
    /// The SHA-256 of the schema's canonical shape: what decides how records are stored.
    ///
    /// Included: entity names, parents and abstractness; attribute names, types (with the
    /// codable type name), optionality, default values and the `unique` and `indexed`
    /// options; relationship names, destinations, inverses, cardinalities, delete rules and
    /// optionality.
    ///
    /// Excluded:
    /// - declaration order of entities, attributes and relationships (the canonical form sorts
    ///   them);
    /// - ``version``: two version numbers may describe the same shape;
    /// - `originalName`: rename metadata for migrating *to* this schema, not part of its shape;
    /// - ``Attribute/Options/preserveValueOnDeletion``: it changes what the history journal
    ///   keeps when a record is deleted, not how records or indexes are stored, so turning it
    ///   on needs no new schema version.
    ///
    /// Defined for any schema, valid or not; the canonical bytes are specified in
    /// Docs/FileFormat.md, "Schema checksum".
    public var checksum: SchemaChecksum {
        SchemaChecksum(digestOf: canonicalShape)
    }

    /// The canonical byte form the checksum hashes. Each entity, attribute and relationship is
    /// encoded on its own and the encodings are sorted as byte strings, so the form depends on
    /// the set of declarations only, never their order (duplicates included).
    package var canonicalShape: [UInt8] {
        var writer = ByteWriter(capacity: 256)
        writer.append(bytes: Array("strata.schema-shape.v1".utf8))
        let encodedEntities = entities.map(Self.canonicalEntity).sorted { $0.lexicographicallyPrecedes($1) }
        writer.append(UInt32(truncatingIfNeeded: encodedEntities.count))
        for entity in encodedEntities { writer.append(bytes: entity) }
        return writer.bytes
    }

    private static func canonicalEntity(_ entity: Entity) -> [UInt8] {
        var writer = ByteWriter(capacity: 128)
        writer.appendLengthPrefixed(entity.name)
        appendOptionalName(entity.parent, to: &writer)
        writer.append(UInt8(entity.isAbstract ? 1 : 0))
        appendSorted(entity.attributes.map(canonicalAttribute), to: &writer)
        appendSorted(entity.relationships.map(canonicalRelationship), to: &writer)
        return writer.bytes
    }

    private static func canonicalAttribute(_ attribute: Attribute) -> [UInt8] {
        var writer = ByteWriter(capacity: 32)
        writer.appendLengthPrefixed(attribute.name)
        attribute.type.append(to: &writer)
        writer.append(AttributeFlags.of(attribute))
        writer.append(attribute.defaultValue)
        return writer.bytes
    }

    private static func canonicalRelationship(_ relationship: Relationship) -> [UInt8] {
        var writer = ByteWriter(capacity: 32)
        writer.appendLengthPrefixed(relationship.name)
        writer.appendLengthPrefixed(relationship.destination)
        appendOptionalName(relationship.inverse, to: &writer)
        writer.append(relationship.cardinality.storageTag)
        writer.append(relationship.deleteRule.storageTag)
        writer.append(UInt8(relationship.isOptional ? 1 : 0))
        return writer.bytes
    }

    /// A count, then the items sorted as byte strings; each item is self-delimiting.
    private static func appendSorted(_ items: [[UInt8]], to writer: inout ByteWriter) {
        writer.append(UInt32(truncatingIfNeeded: items.count))
        for item in items.sorted(by: { $0.lexicographicallyPrecedes($1) }) { writer.append(bytes: item) }
    }

    private static func appendOptionalName(_ name: String?, to writer: inout ByteWriter) {
        if let name {
            writer.append(UInt8(1))
            writer.appendLengthPrefixed(name)
        } else {
            writer.append(UInt8(0))
        }
    }
}
