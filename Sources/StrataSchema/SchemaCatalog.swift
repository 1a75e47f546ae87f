/// The stored form of a store's schemas: every schema version the store has been opened
/// with, each entity, attribute and relationship under a stable numeric id.
///
/// Ids are assigned at first appearance and never reused, so bytes written under any version
/// stay readable: a record encodes attribute ids, a page names the version id it was written
/// with, and the catalog resolves both. ``register(_:)`` maps a new schema onto the newest
/// version's ids (by name, then `originalName`); Docs/FileFormat.md ("Schema catalog") specifies the bytes.
///
/// A value type: registering returns a new catalog, which the caller stores.
///
/// Invariants (checked by ``checkInvariants()``, which ``decode(_:)`` runs):
/// 1. Version ids are ≥ 1, strictly increasing, below ``nextVersionID``.
/// 2. Within a version, entity ids are ≥ 1, strictly increasing, below ``nextEntityID``;
///    property ids (attributes and relationships share one id space) are ≥ 1, unique,
///    strictly increasing within each list, below ``nextPropertyID``.
/// 3. Parents, destinations and inverses name ids present in the same version.
/// 4. Across versions, a property id always belongs to the same entity id, is always an
///    attribute or always a relationship, and an attribute id always has the same storage
///    type (the codable type name may change), so a stored value's type tag never
///    contradicts its attribute in any version. Ids new in a version are larger than every id
///    of its space in earlier versions, and an id missing from a version never reappears.
/// 5. Each version's shape is a valid schema whose checksum is the stored checksum.
package struct SchemaCatalog: Sendable, Hashable {
    /// Every registered version, in id order.
    package private(set) var versions: [CatalogVersion]
    /// The id the next new version gets.
    package private(set) var nextVersionID: UInt32
    /// The id the next new entity gets.
    package private(set) var nextEntityID: UInt32
    /// The id the next new attribute or relationship gets.
    package private(set) var nextPropertyID: UInt32

    /// An empty catalog: no versions; every id space starts at 1 (0 means "none" on disk).
    package init() {
        self.init(versions: [], nextVersionID: 1, nextEntityID: 1, nextPropertyID: 1)
    }

    /// A catalog with exactly these contents (used by the decoder; not checked here).
    package init(versions: [CatalogVersion], nextVersionID: UInt32, nextEntityID: UInt32, nextPropertyID: UInt32) {
        self.versions = versions
        self.nextVersionID = nextVersionID
        self.nextEntityID = nextEntityID
        self.nextPropertyID = nextPropertyID
    }

    /// The most recently registered version, or nil for an empty catalog.
    package var latest: CatalogVersion? { versions.last }

    /// The version with id `id`, if registered.
    package func version(id: UInt32) -> CatalogVersion? { versions.first { $0.id == id } }

    /// The ids of the versions whose shape has `checksum`, oldest first. Several versions
    /// can share a shape (and still differ in ids, when an attribute was dropped and re-added).
    package func versionIDs(withChecksum checksum: SchemaChecksum) -> [UInt32] {
        versions.filter { $0.checksum == checksum }.map(\.id)
    }

    /// Takes the next id of one id space. Never wraps: the last id (UInt32.max) is never handed out.
    package static func allocate(_ next: inout UInt32, _ kind: String) throws(CatalogError) -> UInt32 {
        guard next < UInt32.max else { throw .identifiersExhausted(kind: kind) }
        defer { next += 1 }
        return next
    }
}
