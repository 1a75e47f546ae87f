#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Attribute {
    /// A `Bool` attribute.
    ///
    /// - Parameters:
    ///   - name: The attribute's name.
    ///   - isOptional: Whether records may lack a value.
    ///   - options: Unique, indexed, preserve value on deletion.
    ///   - default: The value of records that have none.
    ///   - originalName: The name in the previous schema version, if renamed.
    public static func bool(_ name: String, isOptional: Bool = false, options: Options = [],
                            default: Bool? = nil, originalName: String? = nil) -> Attribute
    {
        Attribute(name: name, type: .bool, isOptional: isOptional, defaultValue: `default`.map(Value.bool) ?? .null,
                  options: options, originalName: originalName)
    }

    /// An integer attribute (`Int64`; any Swift integer type that fits).
    /// Parameters as in ``bool(_:isOptional:options:default:originalName:)``.
    public static func int(_ name: String, isOptional: Bool = false, options: Options = [],
                           default: Int64? = nil, originalName: String? = nil) -> Attribute
    {
        Attribute(name: name, type: .int, isOptional: isOptional, defaultValue: `default`.map(Value.int) ?? .null,
                  options: options, originalName: originalName)
    }

    /// A `Double` attribute.
    /// Parameters as in ``bool(_:isOptional:options:default:originalName:)``.
    public static func double(_ name: String, isOptional: Bool = false, options: Options = [],
                              default: Double? = nil, originalName: String? = nil) -> Attribute
    {
        Attribute(name: name, type: .double, isOptional: isOptional, defaultValue: `default`.map(Value.double) ?? .null,
                  options: options, originalName: originalName)
    }

    /// A `String` attribute.
    /// Parameters as in ``bool(_:isOptional:options:default:originalName:)``.
    public static func string(_ name: String, isOptional: Bool = false, options: Options = [],
                              default: String? = nil, originalName: String? = nil) -> Attribute
    {
        Attribute(name: name, type: .string, isOptional: isOptional, defaultValue: `default`.map(Value.string) ?? .null,
                  options: options, originalName: originalName)
    }

    /// A bytes attribute (`Data` or `[UInt8]`).
    /// Parameters as in ``bool(_:isOptional:options:default:originalName:)``.
    public static func data(_ name: String, isOptional: Bool = false, options: Options = [],
                            default: [UInt8]? = nil, originalName: String? = nil) -> Attribute
    {
        Attribute(name: name, type: .data, isOptional: isOptional, defaultValue: `default`.map(Value.data) ?? .null,
                  options: options, originalName: originalName)
    }

    /// A `Date` attribute.
    /// Parameters as in ``bool(_:isOptional:options:default:originalName:)``.
    public static func date(_ name: String, isOptional: Bool = false, options: Options = [],
                            default: Date? = nil, originalName: String? = nil) -> Attribute
    {
        Attribute(name: name, type: .date, isOptional: isOptional, defaultValue: `default`.map(Value.date) ?? .null,
                  options: options, originalName: originalName)
    }

    /// A `UUID` attribute.
    /// Parameters as in ``bool(_:isOptional:options:default:originalName:)``.
    public static func uuid(_ name: String, isOptional: Bool = false, options: Options = [],
                            default: UUID? = nil, originalName: String? = nil) -> Attribute
    {
        Attribute(name: name, type: .uuid, isOptional: isOptional, defaultValue: `default`.map(Value.uuid) ?? .null,
                  options: options, originalName: originalName)
    }

    /// An attribute holding a nested `Codable` value, stored in encoded form.
    ///
    /// - Parameters:
    ///   - name: The attribute's name.
    ///   - typeName: The Swift type's name (`String(describing: T.self)`).
    ///   - isOptional: Whether records may lack a value.
    ///   - options: Unique, indexed, preserve value on deletion.
    ///   - default: The encoded form of the default value (see ``RecordEncoder``), if any.
    ///   - originalName: The name in the previous schema version, if renamed.
    public static func codable(_ name: String, typeName: String, isOptional: Bool = false, options: Options = [],
                               default: [UInt8]? = nil, originalName: String? = nil) -> Attribute
    {
        Attribute(name: name, type: .codable(typeName: typeName), isOptional: isOptional,
                  defaultValue: `default`.map(Value.codable) ?? .null, options: options, originalName: originalName)
    }
}
