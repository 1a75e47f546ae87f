/// An entity as the schema catalog stores it: the shape plus stable ids.
/// Holds only the entity's own properties; inherited ones belong to the ancestor's record.
package struct CatalogEntity: Sendable, Hashable {
    /// Stable entity id: ≥ 1, assigned at the entity's first appearance, never reused.
    package var id: UInt32
    package var name: String
    /// The parent's entity id, or nil.
    package var parentID: UInt32?
    package var isAbstract: Bool
    /// Own attributes, sorted by id.
    package var attributes: [CatalogAttribute]
    /// Own relationships, sorted by id.
    package var relationships: [CatalogRelationship]
    /// The `originalName` the schema declared when this version was registered (nil: none).
    /// Not part of the shape or its checksum (catalog format 3).
    package var originalName: String?

    package init(id: UInt32, name: String, parentID: UInt32?, isAbstract: Bool,
                 attributes: [CatalogAttribute], relationships: [CatalogRelationship], originalName: String? = nil)
    {
        self.id = id
        self.name = name
        self.parentID = parentID
        self.isAbstract = isAbstract
        self.attributes = attributes
        self.relationships = relationships
        self.originalName = originalName
    }

    package func attribute(named name: String) -> CatalogAttribute? { attributes.first { $0.name == name } }
    package func relationship(named name: String) -> CatalogRelationship? { relationships.first { $0.name == name } }
}

/// An attribute as the schema catalog stores it. Its id (shared with relationships: one
/// *property id* space per catalog) always denotes values of one storage type.
package struct CatalogAttribute: Sendable, Hashable {
    /// Stable property id: ≥ 1, never reused.
    package var id: UInt32
    package var name: String
    package var type: AttributeType
    package var isOptional: Bool
    package var defaultValue: Value
    package var isUnique: Bool
    package var isIndexed: Bool
    /// The `originalName` the schema declared when this version was registered (nil: none).
    /// Not part of the shape or its checksum (catalog format 3).
    package var originalName: String?

    /// The catalog form of `attribute` under `id`, its `originalName` kept.
    package init(id: UInt32, attribute: Attribute) {
        self.id = id
        name = attribute.name
        type = attribute.type
        isOptional = attribute.isOptional
        defaultValue = attribute.defaultValue
        isUnique = attribute.options.contains(.unique)
        isIndexed = attribute.options.contains(.indexed)
        originalName = attribute.originalName
    }

    /// The schema attribute with this shape (no originalName, no preserveValueOnDeletion: the
    /// catalog keeps only what the checksum covers).
    package var attribute: Attribute {
        var options: Attribute.Options = []
        if isUnique { options.insert(.unique) }
        if isIndexed { options.insert(.indexed) }
        return Attribute(name: name, type: type, isOptional: isOptional, defaultValue: defaultValue, options: options)
    }
}

/// A relationship as the schema catalog stores it, with its destination and inverse by id.
package struct CatalogRelationship: Sendable, Hashable {
    /// Stable property id: ≥ 1, never reused.
    package var id: UInt32
    package var name: String
    /// The destination's entity id.
    package var destinationID: UInt32
    /// The property id of the inverse relationship on the destination, or nil.
    package var inverseID: UInt32?
    package var cardinality: Relationship.Cardinality
    package var deleteRule: Relationship.DeleteRule
    package var isOptional: Bool
    /// The `originalName` the schema declared when this version was registered (nil: none).
    /// Not part of the shape or its checksum (catalog format 3).
    package var originalName: String?

    package init(id: UInt32, name: String, destinationID: UInt32, inverseID: UInt32?,
                 cardinality: Relationship.Cardinality, deleteRule: Relationship.DeleteRule, isOptional: Bool,
                 originalName: String? = nil)
    {
        self.originalName = originalName
        self.id = id
        self.name = name
        self.destinationID = destinationID
        self.inverseID = inverseID
        self.cardinality = cardinality
        self.deleteRule = deleteRule
        self.isOptional = isOptional
    }
}
