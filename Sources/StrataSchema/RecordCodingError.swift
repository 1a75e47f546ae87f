/// Why a typed record could not be encoded, decoded or described as an entity.
/// Each case names the record type or the attribute involved.
public enum RecordCodingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The type's `Codable` implementation does something a record cannot store: it encodes
    /// as something other than a keyed container, or asks for a nested container or a keyed
    /// super-encoder for an attribute. Nested values belong in their own `Codable` type (a
    /// codable attribute).
    case unsupportedStructure(type: String, reason: String)
    /// An integer does not fit: a `UInt64` (or `UInt`) above `Int64.max` when encoding, or a
    /// stored integer outside the range of the property's type when decoding.
    case integerOutOfRange(attribute: String, value: String, type: String)
    /// The stored value has another type than the property (`expected` is the Swift type).
    case typeMismatch(attribute: String, expected: String, found: Value)
    /// A non-optional property has no stored value and no default.
    case missingValue(attribute: String, type: String)
    /// A codable attribute's value could not be encoded to, or decoded from, its stored form.
    case invalidCodableValue(attribute: String, type: String, reason: String)
    /// The entity of a record type could not be derived: its `init(from:)` failed on
    /// placeholder values (an enum that is not `CaseIterable`, a validating initializer, …).
    /// Implement ``PersistentRecord/entity()`` by hand for such a type.
    case cannotDeriveEntity(type: String, reason: String)
    /// A name used in ``PersistentRecord`` customization (options, defaults, original names),
    /// or a value being encoded to bytes, is not an attribute of the entity.
    case unknownAttribute(type: String, attribute: String)
    /// The type's own `init(from:)` or `encode(to:)` threw an error of its own.
    case recordCodingFailed(type: String, reason: String)

    /// A sentence describing the problem.
    public var description: String {
        switch self {
        case .unsupportedStructure(let type, let reason):
            "\(type) cannot be stored as a record: \(reason)"
        case .integerOutOfRange(let attribute, let value, let type):
            "attribute \(attribute): the integer \(value) does not fit in \(type)"
        case .typeMismatch(let attribute, let expected, let found):
            "attribute \(attribute): expected a value of type \(expected), found \(found)"
        case .missingValue(let attribute, let type):
            "attribute \(attribute) of type \(type) has no value and no default"
        case .invalidCodableValue(let attribute, let type, let reason):
            "attribute \(attribute): the \(type) value cannot be coded: \(reason)"
        case .cannotDeriveEntity(let type, let reason):
            "cannot derive the entity of \(type): \(reason); implement `static func entity()` by hand"
        case .unknownAttribute(let type, let attribute):
            "\(type) has no attribute named \(attribute)"
        case .recordCodingFailed(let type, let reason):
            "coding a \(type) failed: \(reason)"
        }
    }
}
