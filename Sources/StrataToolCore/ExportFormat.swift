#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataSchema

/// The export format's JSON for the schema catalog and for stored values, both ways
/// (Docs/Tools.md, "The export format"). Every value reads back exactly as it was stored —
/// unlike `dump`, which writes dates to the microsecond.
enum ExportFormat {
    /// The `format` member of an export's first line.
    static let formatName = "strata-export"
    /// The version of the format this tool writes and reads.
    static let version = 1

    /// Why a line of an export does not describe what it should; the import reports it with
    /// the line's number.
    struct Mismatch: Error {
        var reason: String
        init(_ reason: String) { self.reason = reason }
    }

    // MARK: Values

    /// An attribute value: `null`; booleans, integers as JSON literals; a double as a number
    /// (NaN and the infinities as strings); a string; data as base64; a date as a number, its
    /// seconds since 2001-01-01 00:00:00 UTC (`timeIntervalSinceReferenceDate`, which is what
    /// is stored); a UUID as its text; a codable value as its stored JSON, or nil when its
    /// bytes are not one JSON value on one line (the caller writes them as base64 elsewhere).
    static func value(_ value: Value) -> JSONText? {
        switch value {
        case .date(let date): JSONText.double(date.timeIntervalSinceReferenceDate)
        case .codable(let bytes): codableText(bytes).map(JSONText.raw)
        default: RecordJSON.value(value)
        }
    }

    /// A codable value's stored bytes as JSON text, when they are exactly one JSON value with
    /// no line break (so the line holds them as they are).
    static func codableText(_ bytes: [UInt8]) -> String? {
        guard !bytes.contains(0x0A), !bytes.contains(0x0D), JSONReader.isExactlyOneValue(bytes[...]) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The stored value of an attribute of `type` that `member` holds.
    /// - Throws: `Mismatch` when the JSON is not a value of that type.
    static func attributeValue(_ member: JSONMember, type: AttributeType) throws(Mismatch) -> Value {
        let json = member.value
        if case .null = json { return .null }
        switch (type, json) {
        case (.bool, .bool(let flag)): return .bool(flag)
        case (.int, .number(let text)):
            guard let number = Int64(text) else { throw Mismatch("\(text) is not a 64-bit integer") }
            return .int(number)
        case (.double, _): return .double(try double(json))
        case (.date, _): return .date(Date(timeIntervalSinceReferenceDate: try double(json)))
        case (.string, .string(let text)): return .string(text)
        case (.data, .string(let text)):
            guard let data = Data(base64Encoded: text) else { throw Mismatch("the data is not base64") }
            return .data([UInt8](data))
        case (.uuid, .string(let text)):
            guard let uuid = UUID(uuidString: text) else { throw Mismatch("\(text) is not a UUID") }
            return .uuid(uuid)
        case (.codable, _): return .codable(Array(member.text))
        default: throw Mismatch("expected a value of type \(type), found \(json.kindName)")
        }
    }

    /// A double from a number, or the strings `NaN`, `Infinity`, `-Infinity`.
    private static func double(_ json: JSONValue) throws(Mismatch) -> Double {
        switch json {
        case .number(let text):
            guard let number = Double(text) else { throw Mismatch("\(text) is not a double") }
            return number
        case .string("NaN"): return .nan
        case .string("Infinity"): return .infinity
        case .string("-Infinity"): return -.infinity
        default: throw Mismatch("expected a number, found \(json.kindName)")
        }
    }

    /// A relationship's stored value from its JSON: a to-one an id or null, a to-many an
    /// array of ids (empty: none).
    /// - Throws: `Mismatch` for anything else.
    static func relationshipValue(_ json: JSONValue) throws(Mismatch) -> Value {
        switch json {
        case .null: return .null
        case .number: return .references([try recordID(json)])
        case .array(let elements):
            var ids: [UInt64] = []
            ids.reserveCapacity(elements.count)
            for element in elements { ids.append(try recordID(element)) }
            return ids.isEmpty ? .null : .references(ids)
        default: throw Mismatch("expected a record id or an array of them, found \(json.kindName)")
        }
    }

    /// A record id (a whole number ≥ 1).
    static func recordID(_ json: JSONValue) throws(Mismatch) -> UInt64 {
        guard case .number(let text) = json, let id = UInt64(text), id > 0 else {
            throw Mismatch("expected a record id (a whole number from 1), found \(json.kindName == "a number" ? "\(json)" : json.kindName)")
        }
        return id
    }

    // MARK: The catalog

    /// A catalog version as one JSON object: everything the stored catalog keeps.
    static func versionJSON(_ version: CatalogVersion) -> JSONText {
        .object([
            ("id", .int(version.id)), ("version", .string("\(version.schemaVersion)")), ("checksum", .string("\(version.checksum)")),
            ("entities", .array(version.entities.map { entity in
                .object([
                    ("id", .int(entity.id)), ("name", .string(entity.name)), ("parentID", entity.parentID.map(JSONText.int) ?? .null),
                    ("abstract", .bool(entity.isAbstract)),
                    ("attributes", .array(entity.attributes.map { attribute in
                        var members: [(String, JSONText)] = [
                            ("id", .int(attribute.id)), ("name", .string(attribute.name)), ("type", .string("\(attribute.type)")),
                            ("optional", .bool(attribute.isOptional)), ("default", value(attribute.defaultValue) ?? .null),
                            ("unique", .bool(attribute.isUnique)), ("indexed", .bool(attribute.isIndexed)),
                        ]
                        if case .codable(let bytes) = attribute.defaultValue, codableText(bytes) == nil {
                            members.append(("defaultBytes", .string(Data(bytes).base64EncodedString())))
                        }
                        if let originalName = attribute.originalName { members.append(("originalName", .string(originalName))) }
                        return .object(members)
                    })),
                    ("relationships", .array(entity.relationships.map { relationship in
                        var members: [(String, JSONText)] = [
                            ("id", .int(relationship.id)), ("name", .string(relationship.name)),
                            ("destinationID", .int(relationship.destinationID)),
                            ("inverseID", relationship.inverseID.map(JSONText.int) ?? .null),
                            ("cardinality", .string(relationship.cardinality == .toMany ? "to-many" : "to-one")),
                            ("deleteRule", .string("\(relationship.deleteRule)")), ("optional", .bool(relationship.isOptional)),
                        ]
                        if let originalName = relationship.originalName { members.append(("originalName", .string(originalName))) }
                        return .object(members)
                    })),
                ] + (entity.originalName.map { [("originalName", JSONText.string($0))] } ?? []))
            })),
        ])
    }

    /// A catalog version from its JSON (`versionJSON`), its checksum checked against its shape.
    /// - Throws: `Mismatch` naming the member at fault.
    static func version(from json: JSONValue) throws(Mismatch) -> CatalogVersion {
        let id = try uint32(json, "id")
        guard let number = Schema.Version(try string(json, "version")) else { throw Mismatch("version: not a version number (1.2.3)") }
        var entities: [CatalogEntity] = []
        for entity in try array(json, "entities") {
            var attributes: [CatalogAttribute] = []
            for attribute in try array(entity, "attributes") { attributes.append(try self.attribute(from: attribute)) }
            var relationships: [CatalogRelationship] = []
            for relationship in try array(entity, "relationships") { relationships.append(try self.relationship(from: relationship)) }
            entities.append(CatalogEntity(id: try uint32(entity, "id"), name: try string(entity, "name"),
                                          parentID: try optionalUInt32(entity, "parentID"), isAbstract: try bool(entity, "abstract"),
                                          attributes: attributes, relationships: relationships,
                                          originalName: try optionalString(entity, "originalName")))
        }
        let stated = try string(json, "checksum")
        guard let checksum = SchemaChecksum(hex: stated) else { throw Mismatch("checksum: not 64 hex digits") }
        let version = CatalogVersion(id: id, schemaVersion: number, checksum: checksum, entities: entities)
        let computed = version.shape.checksum
        guard computed == checksum else {
            throw Mismatch("version \(id): the checksum \(stated) is not its shape's (\(computed)); the schema was changed")
        }
        return version
    }

    private static func attribute(from json: JSONValue) throws(Mismatch) -> CatalogAttribute {
        let typeName = try string(json, "type")
        let type: AttributeType
        switch typeName {
        case "bool": type = .bool
        case "int": type = .int
        case "double": type = .double
        case "string": type = .string
        case "data": type = .data
        case "date": type = .date
        case "uuid": type = .uuid
        default:
            guard typeName.hasPrefix("codable("), typeName.hasSuffix(")"), typeName.count > "codable()".count else {
                throw Mismatch("type: unknown attribute type \(typeName)")
            }
            type = .codable(typeName: String(typeName.dropFirst("codable(".count).dropLast()))
        }
        var options: Attribute.Options = []
        if try bool(json, "unique") { options.insert(.unique) }
        if try bool(json, "indexed") { options.insert(.indexed) }
        guard case .object(let members) = json, let defaultMember = members.first(where: { $0.key == "default" }) else {
            throw Mismatch("an attribute lacks its default")
        }
        var defaultValue = try attributeValue(defaultMember, type: type)
        if case .string(let base64)? = json["defaultBytes"] {
            guard let bytes = Data(base64Encoded: base64) else { throw Mismatch("defaultBytes: not base64") }
            defaultValue = .codable([UInt8](bytes))
        }
        let name = try string(json, "name")
        return CatalogAttribute(id: try uint32(json, "id"),
                                attribute: Attribute(name: name, type: type, isOptional: try bool(json, "optional"),
                                                     defaultValue: defaultValue, options: options,
                                                     originalName: try optionalString(json, "originalName")))
    }

    private static func relationship(from json: JSONValue) throws(Mismatch) -> CatalogRelationship {
        let cardinality: Relationship.Cardinality
        switch try string(json, "cardinality") {
        case "to-one": cardinality = .toOne
        case "to-many": cardinality = .toMany
        case let other: throw Mismatch("cardinality: \(other) is not to-one or to-many")
        }
        let deleteRule: Relationship.DeleteRule
        switch try string(json, "deleteRule") {
        case "nullify": deleteRule = .nullify
        case "cascade": deleteRule = .cascade
        case "deny": deleteRule = .deny
        case "noAction": deleteRule = .noAction
        case let other: throw Mismatch("deleteRule: unknown rule \(other)")
        }
        return CatalogRelationship(id: try uint32(json, "id"), name: try string(json, "name"), destinationID: try uint32(json, "destinationID"),
                                   inverseID: try optionalUInt32(json, "inverseID"), cardinality: cardinality, deleteRule: deleteRule,
                                   isOptional: try bool(json, "optional"), originalName: try optionalString(json, "originalName"))
    }

    // MARK: Members

    static func member(_ json: JSONValue, _ key: String) throws(Mismatch) -> JSONValue {
        guard case .object = json else { throw Mismatch("expected an object with \(key)") }
        guard let value = json[key] else { throw Mismatch("\(key) is missing") }
        return value
    }

    static func string(_ json: JSONValue, _ key: String) throws(Mismatch) -> String {
        guard case .string(let text) = try member(json, key) else { throw Mismatch("\(key) must be a string") }
        return text
    }

    static func bool(_ json: JSONValue, _ key: String) throws(Mismatch) -> Bool {
        guard case .bool(let flag) = try member(json, key) else { throw Mismatch("\(key) must be true or false") }
        return flag
    }

    static func uint64(_ json: JSONValue, _ key: String) throws(Mismatch) -> UInt64 {
        guard case .number(let text) = try member(json, key), let number = UInt64(text) else {
            throw Mismatch("\(key) must be a whole number ≥ 0")
        }
        return number
    }

    static func uint32(_ json: JSONValue, _ key: String) throws(Mismatch) -> UInt32 {
        guard case .number(let text) = try member(json, key), let number = UInt32(text) else {
            throw Mismatch("\(key) must be a whole number from 0 to \(UInt32.max)")
        }
        return number
    }

    static func optionalUInt32(_ json: JSONValue, _ key: String) throws(Mismatch) -> UInt32? {
        if case .null = try member(json, key) { return nil }
        return try uint32(json, key)
    }

    /// A string member that may be absent (nil).
    static func optionalString(_ json: JSONValue, _ key: String) throws(Mismatch) -> String? {
        guard json[key] != nil else { return nil }
        return try string(json, key)
    }

    static func array(_ json: JSONValue, _ key: String) throws(Mismatch) -> [JSONValue] {
        guard case .array(let elements) = try member(json, key) else { throw Mismatch("\(key) must be an array") }
        return elements
    }
}
