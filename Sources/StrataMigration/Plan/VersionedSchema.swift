import StrataRecords
import StrataSchema

/// One frozen version of an app's schema, in SwiftData's vocabulary: its version number and
/// its record types. Declare each version in a namespace of its own, so the types of every
/// version an installed app may have written stay in the app unchanged:
///
/// ```swift
/// enum SchemaV1: VersionedSchema {
///     static let versionIdentifier = Schema.Version(1, 0, 0)
///     static var models: [any PersistentRecord.Type] { [Person.self] }
///     struct Person: PersistentRecord { var fullName: String }
/// }
/// ```
///
/// A new version is needed only when the stored shape changes (an attribute, entity,
/// relationship or storage option); the same shape under a new number is a validation error
/// of the plan (see ``SchemaMigrationPlan``). Docs/Migrations.md is the guide.
public protocol VersionedSchema {
    /// The version's number, such as `Schema.Version(1, 0, 0)`.
    static var versionIdentifier: Schema.Version { get }
    /// The record types of this version, one entity each (SwiftData's `models`).
    static var models: [any PersistentRecord.Type] { get }
}

extension VersionedSchema {
    /// The version's schema: the entities derived from ``models``, numbered ``versionIdentifier``.
    /// - Throws: `StrataError.invalidSchema` when an entity cannot be derived or the schema is
    ///   not valid.
    public static func schema() throws -> Schema {
        let schema: Schema
        do { schema = try Schema(version: versionIdentifier, types: models) } catch {
            throw StrataError.invalidSchema(reason: "\(Self.self): \(error)")
        }
        do { try schema.validate() } catch { throw StrataError.invalidSchema(reason: "\(Self.self): \(error)") }
        return schema
    }

    /// The name the plan's errors and reports use: the type's name and its version.
    package static var displayName: String { "\(Self.self) (\(versionIdentifier))" }
}
