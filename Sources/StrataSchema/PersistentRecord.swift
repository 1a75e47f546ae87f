/// A Swift type whose values are records of one entity, declared in one place: the type's
/// stored properties are the attributes, through its `Codable` conformance. No macros.
///
/// ```swift
/// struct Person: PersistentRecord {
///     var fullName: String
///     var createdAt: Date
///     var note: String?                       // optional attribute
///     var isFavorite: Bool                    // added in 1.1: old records read the default
///
///     static let attributeOptions: [String: Attribute.Options] = ["fullName": [.indexed]]
///     static let attributeDefaults: [String: Value] = ["isFavorite": false]
/// }
/// let entity = try Person.entity()           // Entity "Person" with four attributes
/// ```
///
/// Properties map to attribute types as follows: `Bool` → `.bool`; every integer type →
/// `.int`; `Double`, `Float` → `.double`; `String` → `.string`; `Data`, `[UInt8]` → `.data`;
/// `Date` → `.date`; `UUID` → `.uuid`; an `Optional` of any of them → the same type,
/// optional; any other `Codable` type → `.codable(typeName:)`, stored as sorted-keys JSON.
///
/// Relationships are properties holding identifiers: `RecordID<Destination>?` is an optional
/// to-one relationship (`RecordID<Destination>` a required one), `[RecordID<Destination>]` a
/// to-many relationship (always optional: it may be empty). Their inverses and delete rules are
/// declared in ``relationshipRules``.
///
/// **Inheritance.** A type whose ``parentRecordType`` is set is a sub-entity of that type's
/// entity: it repeats the parent's properties (same names and types; `Codable` structs cannot
/// inherit), which are stored under the parent's attribute ids, and adds its own. Fetching the
/// parent type returns the sub-entity's records too, read as the parent. Options, defaults,
/// renames and rules of inherited properties are the parent type's.
///
/// The entity is derived by running the type's `init(from:)` against a recording decoder:
/// synthesized `Codable` conformances (structs, final classes) always work; a hand-written
/// one works when it uses a keyed container. Nested enums should be `CaseIterable` so a
/// placeholder value can be made; otherwise implement ``entity()`` by hand.
public protocol PersistentRecord: Codable {
    /// The entity's name. Default: the type's name, `String(describing: Self.self)`.
    static var entityName: String { get }
    /// The entity's previous name, when the type was renamed. Default: nil.
    static var originalEntityName: String? { get }
    /// Options per attribute name (unique, indexed, preserve value on deletion). Default: none.
    static var attributeOptions: [String: Attribute.Options] { get }
    /// Default values per attribute name, read for records that have no value (such as
    /// records written before the attribute existed). Default: none.
    static var attributeDefaults: [String: Value] { get }
    /// Previous names per attribute name, for renamed properties: `["title": "name"]` keeps
    /// the values stored as `name`. Default: none.
    static var originalAttributeNames: [String: String] { get }
    /// The inverse and delete rule per relationship property name (see ``RelationshipRule``).
    /// A relationship not listed has no inverse and the delete rule `.nullify`. Default: none.
    static var relationshipRules: [String: RelationshipRule] { get }
    /// ``attributeOptions`` keyed by key path, which the compiler checks:
    /// `[\.fullName: [.unique]]`. Merged with ``attributeOptions`` (declare each attribute in
    /// one of the two). Default: none.
    static var attributeOptionsByKeyPath: [PartialKeyPath<Self>: Attribute.Options] { get }
    /// ``attributeDefaults`` keyed by key path: `[\.isFavorite: false]`. Default: none.
    static var attributeDefaultsByKeyPath: [PartialKeyPath<Self>: Value] { get }
    /// ``originalAttributeNames`` keyed by key path: `[\.title: "name"]`. Default: none.
    static var originalAttributeNamesByKeyPath: [PartialKeyPath<Self>: String] { get }
    /// ``relationshipRules`` keyed by key path: `[\.pets: RelationshipRule(inverse: "owner")]`.
    /// Default: none.
    static var relationshipRulesByKeyPath: [PartialKeyPath<Self>: RelationshipRule] { get }
    /// The record type whose entity this type's entity inherits from, or nil (the default).
    /// The type must repeat every property of the parent type with the same type.
    static var parentRecordType: (any PersistentRecord.Type)? { get }
    /// Whether records of exactly this entity cannot be inserted, only of its sub-entities
    /// (fetching the type still returns theirs). Default: false.
    static var isAbstractEntity: Bool { get }

    /// The entity of this type. The default derives it from the `Codable` conformance and the
    /// customization properties above; implement it to declare the entity by hand.
    ///
    /// - Throws: ``RecordCodingError/cannotDeriveEntity(type:reason:)`` when the conformance
    ///   cannot be run on placeholder values; ``RecordCodingError/unknownAttribute(type:attribute:)``
    ///   when a customization names a property the type does not have;
    ///   ``RecordCodingError/unsupportedStructure(type:reason:)`` for a non-keyed conformance.
    static func entity() throws(RecordCodingError) -> Entity

    /// Writes the record's attributes into `writer`. The default runs the type's `Encodable`
    /// conformance. Implement it — by hand, one `writer.encode(_:forKey:)` per property, named
    /// as `Codable` names them — for the fast path (records of a few fields code about twice
    /// as fast); it must write what the `Codable` conformance writes.
    func encode(to writer: inout RecordWriter) throws

    /// Reads the record from `reader`. The default runs the type's `Decodable` conformance.
    /// Implement it with `reader.decode(_:forKey:)` for the fast path (see
    /// ``encode(to:)-(RecordWriter)``); declare it in an extension to keep a struct's
    /// memberwise initializer.
    init(from reader: RecordReader) throws
}

extension PersistentRecord {
    /// The type's name.
    public static var entityName: String { String(describing: Self.self) }
    /// nil.
    public static var originalEntityName: String? { nil }
    /// No options.
    public static var attributeOptions: [String: Attribute.Options] { [:] }
    /// No defaults.
    public static var attributeDefaults: [String: Value] { [:] }
    /// No renames.
    public static var originalAttributeNames: [String: String] { [:] }
    /// No rules: no inverses, delete rule `.nullify`.
    public static var relationshipRules: [String: RelationshipRule] { [:] }
    /// None.
    public static var attributeOptionsByKeyPath: [PartialKeyPath<Self>: Attribute.Options] { [:] }
    /// None.
    public static var attributeDefaultsByKeyPath: [PartialKeyPath<Self>: Value] { [:] }
    /// None.
    public static var originalAttributeNamesByKeyPath: [PartialKeyPath<Self>: String] { [:] }
    /// None.
    public static var relationshipRulesByKeyPath: [PartialKeyPath<Self>: RelationshipRule] { [:] }
    /// No parent.
    public static var parentRecordType: (any PersistentRecord.Type)? { nil }
    /// Not abstract.
    public static var isAbstractEntity: Bool { false }

    /// Runs `encode(to: Encoder)`.
    public func encode(to writer: inout RecordWriter) throws {
        try encode(to: RecordEncoding(state: writer.state))
    }

    /// Runs `init(from: Decoder)`.
    public init(from reader: RecordReader) throws {
        try self.init(from: RecordDecoding(state: reader.state))
    }
}

extension Schema {
    /// A schema of the entities of record types, and of the types they refer to: each type's
    /// ``PersistentRecord/parentRecordType`` and the destinations of its relationship
    /// properties are added when missing (after the listed types, in the order found).
    ///
    /// - Parameters:
    ///   - version: The schema's version number.
    ///   - types: The record types, each one entity.
    /// - Throws: ``RecordCodingError`` when an entity cannot be derived (see
    ///   ``PersistentRecord/entity()``). The schema is not validated; call ``validate()``.
    public init(version: Version = Version(1, 0, 0), types: [any PersistentRecord.Type]) throws(RecordCodingError) {
        var entities: [Entity] = []
        var seen = Set<ObjectIdentifier>()
        var queue = types
        var index = 0
        while index < queue.count {
            let type = queue[index]
            index += 1
            guard seen.insert(ObjectIdentifier(type)).inserted else { continue }
            entities.append(try type.entity())
            queue += type.referencedRecordTypes
        }
        self.init(version: version, entities)
    }
}
