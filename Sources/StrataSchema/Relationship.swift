/// A reference from records of one entity to records of another (or the same) entity.
public struct Relationship: Sendable, Hashable {
    /// How many destination records one source record refers to.
    public enum Cardinality: Sendable, Hashable {
        /// At most one destination record.
        case toOne
        /// Any number of destination records.
        case toMany
    }

    /// What deleting a source record does to the records it refers to.
    public enum DeleteRule: Sendable, Hashable {
        /// Remove the deleted record from the inverse relationship of its destinations.
        case nullify
        /// Delete the destination records too.
        case cascade
        /// Refuse the deletion while the relationship refers to any record.
        case deny
        /// Do nothing; the destinations may keep a dangling reference.
        case noAction
    }

    /// The relationship's name, unique among the entity's attributes and relationships
    /// (including inherited ones).
    public var name: String
    /// The name of the entity it refers to.
    public var destination: String
    /// The name of the relationship on `destination` that refers back, if any. When set, that
    /// relationship must refer to this entity (or an ancestor) and name this one as its inverse
    /// (or name no inverse).
    public var inverse: String?
    /// To-one or to-many.
    public var cardinality: Cardinality
    /// What deleting a source record does to its destinations.
    public var deleteRule: DeleteRule
    /// Whether a source record may refer to no record.
    public var isOptional: Bool
    /// The relationship's name in the previous schema version, when it was renamed.
    /// Migration metadata: not part of the schema checksum.
    public var originalName: String?

    /// Creates a relationship.
    ///
    /// - Parameters:
    ///   - name: The relationship's name.
    ///   - destination: The name of the entity it refers to.
    ///   - inverse: The name of the relationship on `destination` that refers back, if any.
    ///   - cardinality: To-one or to-many.
    ///   - deleteRule: What deleting a source record does to its destinations (default nullify).
    ///   - isOptional: Whether a source record may refer to no record (default true).
    ///   - originalName: The name in the previous schema version, if renamed.
    public init(name: String, destination: String, inverse: String? = nil, cardinality: Cardinality,
                deleteRule: DeleteRule = .nullify, isOptional: Bool = true, originalName: String? = nil)
    {
        self.name = name
        self.destination = destination
        self.inverse = inverse
        self.cardinality = cardinality
        self.deleteRule = deleteRule
        self.isOptional = isOptional
        self.originalName = originalName
    }

    /// A to-one relationship. Parameters as in
    /// ``init(name:destination:inverse:cardinality:deleteRule:isOptional:originalName:)``.
    public static func toOne(_ name: String, destination: String, inverse: String? = nil, deleteRule: DeleteRule = .nullify,
                             isOptional: Bool = true, originalName: String? = nil) -> Relationship
    {
        Relationship(name: name, destination: destination, inverse: inverse, cardinality: .toOne,
                     deleteRule: deleteRule, isOptional: isOptional, originalName: originalName)
    }

    /// A to-many relationship. Parameters as in
    /// ``init(name:destination:inverse:cardinality:deleteRule:isOptional:originalName:)``.
    public static func toMany(_ name: String, destination: String, inverse: String? = nil, deleteRule: DeleteRule = .nullify,
                              isOptional: Bool = true, originalName: String? = nil) -> Relationship
    {
        Relationship(name: name, destination: destination, inverse: inverse, cardinality: .toMany,
                     deleteRule: deleteRule, isOptional: isOptional, originalName: originalName)
    }
}
