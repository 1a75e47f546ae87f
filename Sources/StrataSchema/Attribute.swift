/// A stored property of an entity: a name, a value type and constraints.
///
/// Build attributes with the static constructors, which only accept a default of the right
/// type: `.string("note")`, `.int("age", options: [.indexed], default: 0)`,
/// `.date("createdAt")`.
public struct Attribute: Sendable, Hashable {
    /// Constraints and storage hints of an attribute.
    public struct Options: OptionSet, Sendable, Hashable {
        /// The option bits. Not stored on disk as such: the schema catalog has its own flags.
        public let rawValue: UInt32

        /// Creates options from their bits.
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        /// No two records of the entity hold the same non-null value. Null values are not
        /// compared (as in SQL): any number of records may lack an optional unique attribute.
        public static let unique = Options(rawValue: 1 << 0)
        /// The store keeps an index on the attribute, for queries that filter or sort by it.
        public static let indexed = Options(rawValue: 1 << 1)
        /// When a record is deleted, the history journal keeps this attribute's last value in
        /// the deletion's tombstone. It changes what history records, not how records are
        /// stored, so it is not part of the schema checksum.
        public static let preserveValueOnDeletion = Options(rawValue: 1 << 2)
    }

    /// The attribute's name, unique among the entity's attributes and relationships
    /// (including inherited ones).
    public var name: String
    /// The type of the attribute's values.
    public var type: AttributeType
    /// Whether a record may lack a value (`.null`).
    public var isOptional: Bool
    /// The value a record gets when it has none: for records written before the attribute
    /// existed, and for new records that leave it unset. `.null` means no default.
    public var defaultValue: Value
    /// Unique, indexed, preserve value on deletion.
    public var options: Options
    /// The attribute's name in the previous schema version, when it was renamed; the renamed
    /// attribute keeps its stored values. Migration metadata: not part of the schema checksum.
    public var originalName: String?
    /// How the attribute's codable Swift type decodes, when entity discovery derived it from
    /// a record type (``CodableProbe/unknown`` otherwise): whether the values of a plain
    /// attribute that became codable can be read as it. Migration metadata: not part of the
    /// shape, equality or checksum.
    package var codableProbe: CodableProbe = .unknown

    /// Creates an attribute. The static constructors (`.string(_:)`, `.int(_:)`, …) are more
    /// convenient and type-check the default.
    ///
    /// - Parameters:
    ///   - name: The attribute's name.
    ///   - type: The type of its values.
    ///   - isOptional: Whether records may lack a value.
    ///   - defaultValue: The value of records that have none; `.null` for no default. Must be
    ///     of `type` (checked by ``Schema/validate()``).
    ///   - options: Unique, indexed, preserve value on deletion.
    ///   - originalName: The name in the previous schema version, if renamed.
    public init(name: String, type: AttributeType, isOptional: Bool = false, defaultValue: Value = .null,
                options: Options = [], originalName: String? = nil)
    {
        self.name = name
        self.type = type
        self.isOptional = isOptional
        self.defaultValue = defaultValue
        self.options = options
        self.originalName = originalName
    }

    /// Whether `value` may be stored in this attribute: a value of its type, or `.null` when the
    /// attribute is optional. (A store fills in ``defaultValue`` before it checks a record.)
    public func accepts(_ value: Value) -> Bool {
        value.isNull ? isOptional : type.accepts(value)
    }
}
