/// How a typed record's relationship property behaves: which property of the destination is
/// its inverse, and what deleting a record does to the records it refers to. Declared per
/// property in ``PersistentRecord/relationshipRules``.
///
/// ```swift
/// struct Person: PersistentRecord {
///     var name: String
///     var pets: [RecordID<Pet>]
///     static let relationshipRules = ["pets": RelationshipRule(inverse: "owner", deleteRule: .cascade)]
/// }
/// struct Pet: PersistentRecord {
///     var name: String
///     var owner: RecordID<Person>?
///     static let relationshipRules = ["owner": RelationshipRule(inverse: "pets")]
/// }
/// ```
///
/// Both sides of an inverse pair should name each other (a side that names none is accepted,
/// as in ``Schema/validate()``); a save keeps the two sides consistent.
public struct RelationshipRule: Sendable, Hashable {
    /// The name of the destination's relationship property that refers back, or nil (the
    /// default) for a one-way relationship, which a save does not maintain from the other side.
    public var inverse: String?
    /// What deleting a record does to the records this relationship refers to (default
    /// `.nullify`: they stop referring back to the deleted record).
    public var deleteRule: Relationship.DeleteRule

    /// A rule; every parameter is optional.
    ///
    /// - Parameters:
    ///   - inverse: The destination's relationship that refers back (default none).
    ///   - deleteRule: The delete rule (default `.nullify`).
    public init(inverse: String? = nil, deleteRule: Relationship.DeleteRule = .nullify) {
        self.inverse = inverse
        self.deleteRule = deleteRule
    }
}
