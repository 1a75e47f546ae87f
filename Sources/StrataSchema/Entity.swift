/// A kind of record: a name, attributes and relationships, and optionally a parent entity
/// whose attributes and relationships it inherits.
///
/// An entity's own ``attributes`` and ``relationships`` exclude inherited ones; use
/// ``Schema/resolvedAttributes(of:)`` for the full list.
public struct Entity: Sendable, Hashable {
    /// The entity's name, unique in its schema.
    public var name: String
    /// The entity's own attributes (not the inherited ones), in declaration order.
    public var attributes: [Attribute]
    /// The entity's own relationships (not the inherited ones), in declaration order.
    public var relationships: [Relationship]
    /// The name of the entity this one inherits from, if any.
    public var parent: String?
    /// Whether records of exactly this entity cannot exist (only of its sub-entities).
    public var isAbstract: Bool
    /// The entity's name in the previous schema version, when it was renamed; its records
    /// keep their data. Migration metadata: not part of the schema checksum.
    public var originalName: String?

    /// Creates an entity.
    ///
    /// - Parameters:
    ///   - name: The entity's name.
    ///   - parent: The name of the entity it inherits from, if any.
    ///   - isAbstract: Whether records of exactly this entity cannot exist.
    ///   - originalName: The name in the previous schema version, if renamed.
    ///   - attributes: Its own attributes.
    ///   - relationships: Its own relationships.
    public init(_ name: String, parent: String? = nil, isAbstract: Bool = false, originalName: String? = nil,
                attributes: [Attribute] = [], relationships: [Relationship] = [])
    {
        self.name = name
        self.parent = parent
        self.isAbstract = isAbstract
        self.originalName = originalName
        self.attributes = attributes
        self.relationships = relationships
    }

    /// The entity's own attribute named `name`, if any (inherited attributes are not searched).
    public func attribute(named name: String) -> Attribute? {
        attributes.first { $0.name == name }
    }

    /// The entity's own relationship named `name`, if any (inherited ones are not searched).
    public func relationship(named name: String) -> Relationship? {
        relationships.first { $0.name == name }
    }
}
