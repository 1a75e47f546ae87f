/// Why a schema could not be registered in a catalog.
package enum CatalogError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The schema failed ``Schema/validate()``.
    case invalidSchema(SchemaError)
    /// An id space (`"version"`, `"entity"` or `"property"`) has no ids left (2^32 − 2 used).
    case identifiersExhausted(kind: String)

    package var description: String {
        switch self {
        case .invalidSchema(let error): "cannot register an invalid schema: \(error)"
        case .identifiersExhausted(let kind): "the schema catalog has used every \(kind) id"
        }
    }
}
