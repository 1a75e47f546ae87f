import StrataFormat

// The catalog's bytes. Docs/FileFormat.md, "Schema catalog", is the specification.

extension SchemaCatalog {
    /// `STRATSCH`, the first 8 bytes of an encoded catalog.
    package static let magic: [UInt8] = Array("STRATSCH".utf8)
    /// The newest catalog layout version this library reads. It writes 1; 2 when a property
    /// id changes identity in one of the two ways version 1 forbids (a plain attribute made
    /// codable, an attribute or relationship taken over by a newly adopted ancestor); 3 when
    /// an entity, attribute or relationship keeps the `originalName` it was declared with
    /// (``formatVersionNeeded``) — so a reader predating them reports a newer format rather
    /// than corruption, and every other catalog keeps its bytes.
    package static let formatVersion: UInt16 = 3
    /// Entity and relationship flags: bit 0 abstract (entity) or optional (relationship); in
    /// format 3, bit 1: the original name follows.
    static let originalNameFlag: UInt8 = 1 << 1
    /// Length of the fixed header before the first version.
    package static let headerLength = 28

    // Smallest encodings, to bound counts by the bytes present before looping over them.
    private static let minimumVersionLength = 52  // id, major, minor, patch, checksum, entity count
    private static let minimumEntityLength = 18  // id, parent, flags, name length, two counts
    private static let minimumAttributeLength = 8  // id, name length, type, flags, default tag
    private static let minimumRelationshipLength = 16  // id, name length, destination, inverse, three bytes

    /// The catalog's bytes: header, then every version in id order, each listing entities,
    /// attributes and relationships in id order. Equal catalogs give equal bytes.
    package func encoded() -> [UInt8] {
        var writer = ByteWriter(capacity: 256)
        writer.append(bytes: Self.magic)
        writer.append(formatVersionNeeded)
        writer.append(UInt16(0))  // flags
        writer.append(nextVersionID)
        writer.append(nextEntityID)
        writer.append(nextPropertyID)
        writer.append(UInt32(truncatingIfNeeded: versions.count))
        for version in versions {
            writer.append(version.id)
            writer.append(version.schemaVersion.major)
            writer.append(version.schemaVersion.minor)
            writer.append(version.schemaVersion.patch)
            writer.append(bytes: version.checksum.bytes)
            writer.append(UInt32(truncatingIfNeeded: version.entities.count))
            for entity in version.entities { Self.append(entity, to: &writer) }
        }
        return writer.bytes
    }

    private static func append(_ entity: CatalogEntity, to writer: inout ByteWriter) {
        writer.append(entity.id)
        writer.append(entity.parentID ?? 0)
        writer.append(UInt8(entity.isAbstract ? 1 : 0) | (entity.originalName == nil ? 0 : originalNameFlag))
        writer.appendLengthPrefixed(entity.name)
        if let originalName = entity.originalName { writer.appendLengthPrefixed(originalName) }
        writer.append(UInt32(truncatingIfNeeded: entity.attributes.count))
        for attribute in entity.attributes {
            writer.append(attribute.id)
            writer.appendLengthPrefixed(attribute.name)
            attribute.type.append(to: &writer)
            writer.append(AttributeFlags.of(attribute.attribute) | (attribute.originalName == nil ? 0 : AttributeFlags.originalName))
            writer.append(attribute.defaultValue)
            if let originalName = attribute.originalName { writer.appendLengthPrefixed(originalName) }
        }
        writer.append(UInt32(truncatingIfNeeded: entity.relationships.count))
        for relationship in entity.relationships {
            writer.append(relationship.id)
            writer.appendLengthPrefixed(relationship.name)
            writer.append(relationship.destinationID)
            writer.append(relationship.inverseID ?? 0)
            writer.append(relationship.cardinality.storageTag)
            writer.append(relationship.deleteRule.storageTag)
            writer.append(UInt8(relationship.isOptional ? 1 : 0) | (relationship.originalName == nil ? 0 : originalNameFlag))
            if let originalName = relationship.originalName { writer.appendLengthPrefixed(originalName) }
        }
    }

    /// Decodes and checks a catalog.
    ///
    /// Never traps and never sizes an allocation from an unchecked field: every count is
    /// bounded by the bytes left, every length by the bytes present.
    ///
    /// - Throws: `FormatError` (with the offset of the bad field) for a wrong magic, a format
    ///   version of 0, a newer format version (`unsupportedVersion` set), non-zero flags or
    ///   reserved bits, truncation, unknown tags, invalid UTF-8, bytes after the last version,
    ///   and any broken invariant of ``SchemaCatalog`` (ids out of order or dangling, an id
    ///   changing type across versions, a shape that is not a valid schema or does not match
    ///   its checksum).
    package static func decode(_ bytes: [UInt8]) throws(FormatError) -> SchemaCatalog {
        try decodingFormat { try bytes.withUnsafeBytes { try decode(from: $0) } }
    }

    /// Decodes and checks a catalog held in a buffer; see the array variant.
    package static func decode(_ buffer: UnsafeRawBufferPointer) throws(FormatError) -> SchemaCatalog {
        try decodingFormat { try decode(from: buffer) }
    }

    private static func decode(from buffer: UnsafeRawBufferPointer) throws -> SchemaCatalog {
        var reader = ByteReader(buffer)
        guard try reader.readBytes(8, "catalog magic") == magic else { throw FormatError("not a schema catalog (wrong magic)", at: 0) }
        let version = try reader.read(UInt16.self, "catalog format version")
        guard version != 0 else { throw FormatError("catalog format version 0 is invalid", at: 8) }
        guard version <= formatVersion else {
            throw FormatError("catalog format version \(version) is newer than \(formatVersion)", at: 8, unsupportedVersion: version)
        }
        guard try reader.read(UInt16.self, "catalog flags") == 0 else { throw FormatError("catalog flags are not zero", at: 10) }
        let nextVersionID = try reader.read(UInt32.self, "next version id")
        let nextEntityID = try reader.read(UInt32.self, "next entity id")
        let nextPropertyID = try reader.read(UInt32.self, "next property id")
        let count = try readCount(&reader, minimumLength: minimumVersionLength, "version count")
        var versions: [CatalogVersion] = []
        var offsets: [Int] = []
        for _ in 0..<count {
            offsets.append(reader.position)
            versions.append(try readVersion(&reader, format: version))
        }
        guard reader.remaining == 0 else { throw FormatError("\(reader.remaining) bytes after the last catalog version", at: reader.position) }
        let catalog = SchemaCatalog(versions: versions, nextVersionID: nextVersionID, nextEntityID: nextEntityID,
                                    nextPropertyID: nextPropertyID)
        try catalog.checkInvariants(versionOffsets: offsets, formatVersion: version)
        return catalog
    }

    private static func readVersion(_ reader: inout ByteReader, format: UInt16) throws -> CatalogVersion {
        let id = try reader.read(UInt32.self, "version id")
        let number = Schema.Version(try reader.read(UInt32.self, "major"), try reader.read(UInt32.self, "minor"),
                                    try reader.read(UInt32.self, "patch"))
        let checksumStart = reader.position
        guard let checksum = SchemaChecksum(bytes: try reader.readBytes(SHA256.digestLength, "schema checksum")) else {
            throw FormatError("schema checksum is not \(SHA256.digestLength) bytes", at: checksumStart)
        }
        let count = try readCount(&reader, minimumLength: minimumEntityLength, "entity count of version \(id)")
        var entities: [CatalogEntity] = []
        for _ in 0..<count { entities.append(try readEntity(&reader, format: format)) }
        return CatalogVersion(id: id, schemaVersion: number, checksum: checksum, entities: entities)
    }

    private static func readEntity(_ reader: inout ByteReader, format: UInt16) throws -> CatalogEntity {
        let id = try reader.read(UInt32.self, "entity id")
        let parentID = try reader.read(UInt32.self, "parent entity id")
        let flagsAt = reader.position
        let flags = try reader.read(UInt8.self, "entity flags")
        let originalNameBit = format >= 3 ? originalNameFlag : 0
        guard flags & ~(1 | originalNameBit) == 0 else { throw FormatError("unknown entity flags \(flags)", at: flagsAt) }
        let name = try reader.readString("entity name")
        let originalName = flags & originalNameFlag != 0 ? try reader.readString("original name of entity \(name)") : nil
        var attributes: [CatalogAttribute] = []
        for _ in 0..<(try readCount(&reader, minimumLength: minimumAttributeLength, "attribute count of \(name)")) {
            let id = try reader.read(UInt32.self, "attribute id")
            let attributeName = try reader.readString("attribute name")
            let type = try AttributeType.read(from: &reader)
            let flagsAt = reader.position
            let flags = try reader.read(UInt8.self, "attribute flags")
            let known = AttributeFlags.all | (format >= 3 ? AttributeFlags.originalName : 0)
            guard flags & ~known == 0 else { throw FormatError("unknown attribute flags \(flags)", at: flagsAt) }
            let defaultValue = try Value.read(from: &reader, "default value of \(name).\(attributeName)")
            let originalName = flags & AttributeFlags.originalName != 0
                ? try reader.readString("original name of \(name).\(attributeName)") : nil
            var options: Attribute.Options = []
            if flags & AttributeFlags.unique != 0 { options.insert(.unique) }
            if flags & AttributeFlags.indexed != 0 { options.insert(.indexed) }
            let attribute = Attribute(name: attributeName, type: type, isOptional: flags & AttributeFlags.optional != 0,
                                      defaultValue: defaultValue, options: options, originalName: originalName)
            attributes.append(CatalogAttribute(id: id, attribute: attribute))
        }
        var relationships: [CatalogRelationship] = []
        for _ in 0..<(try readCount(&reader, minimumLength: minimumRelationshipLength, "relationship count of \(name)")) {
            relationships.append(try readRelationship(&reader, format: format))
        }
        return CatalogEntity(id: id, name: name, parentID: parentID == 0 ? nil : parentID, isAbstract: flags & 1 != 0,
                             attributes: attributes, relationships: relationships, originalName: originalName)
    }

    private static func readRelationship(_ reader: inout ByteReader, format: UInt16) throws -> CatalogRelationship {
        let id = try reader.read(UInt32.self, "relationship id")
        let name = try reader.readString("relationship name")
        let destinationID = try reader.read(UInt32.self, "destination entity id")
        let inverseID = try reader.read(UInt32.self, "inverse relationship id")
        let tagsAt = reader.position
        guard let cardinality = Relationship.Cardinality(storageTag: try reader.read(UInt8.self, "cardinality")) else {
            throw FormatError("unknown cardinality of relationship \(name)", at: tagsAt)
        }
        guard let deleteRule = Relationship.DeleteRule(storageTag: try reader.read(UInt8.self, "delete rule")) else {
            throw FormatError("unknown delete rule of relationship \(name)", at: tagsAt + 1)
        }
        let flags = try reader.read(UInt8.self, "relationship flags")
        let originalNameBit = format >= 3 ? originalNameFlag : 0
        guard flags & ~(1 | originalNameBit) == 0 else { throw FormatError("unknown relationship flags \(flags)", at: tagsAt + 2) }
        let originalName = flags & originalNameFlag != 0 ? try reader.readString("original name of relationship \(name)") : nil
        return CatalogRelationship(id: id, name: name, destinationID: destinationID, inverseID: inverseID == 0 ? nil : inverseID,
                                   cardinality: cardinality, deleteRule: deleteRule, isOptional: flags & 1 != 0, originalName: originalName)
    }

    /// A `u32` count, refused when even the smallest items of that many would not fit in the
    /// bytes left, so no loop or allocation is sized from an unchecked number.
    private static func readCount(_ reader: inout ByteReader, minimumLength: Int, _ what: @autoclosure () -> String) throws -> Int {
        let start = reader.position
        let raw = try reader.read(UInt32.self, what())
        guard let count = Int(exactly: raw), count <= reader.remaining / minimumLength else {
            throw FormatError("\(what()) \(raw) cannot fit in the \(reader.remaining) bytes left", at: start)
        }
        return count
    }
}
