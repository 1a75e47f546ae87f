/// The type of an attribute's values.
public enum AttributeType: Sendable, Hashable {
    /// `Bool`.
    case bool
    /// Any Swift integer type that fits in `Int64` (`Int`, `Int32`, `UInt16`, …).
    case int
    /// `Double` (and `Float`, widened).
    case double
    /// `String`.
    case string
    /// `Data` or `[UInt8]`.
    case data
    /// `Date`.
    case date
    /// `UUID`.
    case uuid
    /// Any other `Codable` type, stored in encoded form.
    ///
    /// - Parameter typeName: The Swift type's name as `String(describing:)` prints it, such as
    ///   `"Address"` or `"Array<String>"`. It is part of the schema's shape (and checksum).
    case codable(typeName: String)

    /// Whether `value` is a value of this type. `.null` is not: optionality is the attribute's.
    public func accepts(_ value: Value) -> Bool {
        switch (self, value) {
        case (.bool, .bool), (.int, .int), (.double, .double), (.string, .string), (.data, .data),
             (.date, .date), (.uuid, .uuid), (.codable, .codable):
            true
        default:
            false
        }
    }
}

extension AttributeType: CustomStringConvertible {
    /// `bool`, `int`, … or `codable(Address)`.
    public var description: String {
        switch self {
        case .bool: "bool"
        case .int: "int"
        case .double: "double"
        case .string: "string"
        case .data: "data"
        case .date: "date"
        case .uuid: "uuid"
        case .codable(let typeName): "codable(\(typeName))"
        }
    }
}
