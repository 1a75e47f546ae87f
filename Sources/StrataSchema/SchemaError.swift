/// Why a schema is invalid. Each case names the entity and property involved.
public enum SchemaError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A name is empty or longer than ``Schema/maximumNameLength`` UTF-8 bytes (or, for a
    /// codable type name, ``Schema/maximumTypeNameLength``). `what` says whose name it is.
    case invalidName(what: String, name: String)
    /// Two entities have the same name.
    case duplicateEntity(String)
    /// An entity has two properties (attributes or relationships, own or inherited) named `name`.
    case duplicateProperty(entity: String, name: String)
    /// A name was looked up that the schema does not have.
    case unknownEntity(String)
    /// An entity's parent is not in the schema.
    case unknownParent(entity: String, parent: String)
    /// Entities inherit from each other in a cycle; `cycle` lists them, starting and ending
    /// with the same entity.
    case inheritanceCycle([String])
    /// A relationship's destination is not in the schema.
    case unknownDestination(entity: String, relationship: String, destination: String)
    /// A relationship's inverse does not exist on the destination, or does not refer back.
    case invalidInverse(entity: String, relationship: String, inverse: String, reason: String)
    /// An attribute's default value is not of its type.
    case defaultValueTypeMismatch(entity: String, attribute: String, type: AttributeType, value: Value)
    /// An `originalName` that cannot say which old entity or property was renamed: two
    /// declarations claim it, or it is also the current name of another declaration.
    /// `entity` is nil for entity names.
    case ambiguousOriginalName(entity: String?, originalName: String)

    /// A sentence describing the problem.
    public var description: String {
        switch self {
        case .invalidName(let what, let name):
            "invalid name \(String(reflecting: name)) for \(what): names must be 1 to \(Schema.maximumNameLength) UTF-8 bytes"
                + " (codable type names up to \(Schema.maximumTypeNameLength))"
        case .duplicateEntity(let name):
            "the schema declares entity \(name) more than once"
        case .duplicateProperty(let entity, let name):
            "entity \(entity) has more than one attribute or relationship named \(name) (inherited ones included)"
        case .unknownEntity(let name):
            "the schema has no entity named \(name)"
        case .unknownParent(let entity, let parent):
            "entity \(entity) inherits from \(parent), which is not in the schema"
        case .inheritanceCycle(let cycle):
            "entities inherit from each other in a cycle: \(cycle.joined(separator: " → "))"
        case .unknownDestination(let entity, let relationship, let destination):
            "relationship \(entity).\(relationship) refers to entity \(destination), which is not in the schema"
        case .invalidInverse(let entity, let relationship, let inverse, let reason):
            "the inverse \(inverse) of relationship \(entity).\(relationship) is invalid: \(reason)"
        case .defaultValueTypeMismatch(let entity, let attribute, let type, let value):
            "attribute \(entity).\(attribute) of type \(type) has a default value of another type: \(value)"
        case .ambiguousOriginalName(let entity, let originalName):
            if let entity {
                "in entity \(entity), originalName \(originalName) is claimed twice or is also a current name"
            } else {
                "entity originalName \(originalName) is claimed twice or is also a current entity name"
            }
        }
    }
}
