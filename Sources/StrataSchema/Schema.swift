/// The shape of the records in a store: a list of entities, with a version number.
///
/// A schema is a plain value: build it, check it with ``validate()``, and compare shapes
/// with ``checksum``. Equality (`==`) compares declarations exactly, in order; the checksum
/// ignores declaration order and migration metadata (see ``SchemaChecksum``).
///
/// ```swift
/// let schema = Schema(version: Schema.Version(1, 0, 0), [
///     Entity("Person", attributes: [
///         .string("fullName", options: [.indexed]),
///         .date("createdAt"),
///         .string("note", isOptional: true),
///     ]),
/// ])
/// try schema.validate()
/// ```
public struct Schema: Sendable, Hashable {
    /// The longest entity, attribute or relationship name, in UTF-8 bytes.
    public static let maximumNameLength = 255
    /// The longest type name of a `.codable` attribute, in UTF-8 bytes.
    public static let maximumTypeNameLength = 1024

    /// The schema's version number. Not part of the shape: two versions may share a checksum.
    public var version: Version
    /// The entities, in declaration order.
    public var entities: [Entity]

    /// Creates a schema.
    ///
    /// - Parameters:
    ///   - version: The schema's version number (default 1.0.0).
    ///   - entities: Its entities.
    public init(version: Version = Version(1, 0, 0), _ entities: [Entity]) {
        self.version = version
        self.entities = entities
    }

    /// The entity named `name`, if any. With duplicate names (an invalid schema), the first.
    public func entity(named name: String) -> Entity? {
        entities.first { $0.name == name }
    }

    /// The entities by name; with duplicate names, the first wins (never traps).
    package var entitiesByName: [String: Entity] {
        Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }
}
