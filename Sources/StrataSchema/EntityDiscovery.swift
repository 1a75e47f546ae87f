/// Derives a record type's attributes by running its `init(from:)` against a decoder that
/// records each key it is asked for, and the type asked for.
///
/// `decodeIfPresent`, and `decodeNil` before a `decode`, make an attribute optional. The
/// decoder answers every `decode` with a placeholder (see ``Placeholder``) so the
/// initializer runs to its end. Keys are listed in the order the initializer reads them,
/// which for synthesized conformances is declaration order.
enum EntityDiscovery {
    /// One property found: an attribute, or a relationship when ``destination`` is set.
    struct DiscoveredAttribute: Equatable {
        var name: String
        /// The storage type of an attribute (unused for a relationship).
        var type: AttributeType
        var isOptional: Bool
        /// For a `RecordID` property (to-one) or an array of them (to-many): the destination.
        var destination: DiscoveredDestination? = nil
        /// For a codable attribute: how its type decodes (compares equal whatever it holds).
        var probe: CodableProbe = .unknown
    }

    /// The destination of a relationship property: the record type its identifiers refer to.
    struct DiscoveredDestination: Equatable {
        var type: any PersistentRecord.Type
        var cardinality: Relationship.Cardinality

        static func == (a: DiscoveredDestination, b: DiscoveredDestination) -> Bool {
            ObjectIdentifier(a.type) == ObjectIdentifier(b.type) && a.cardinality == b.cardinality
        }
    }

    /// The attributes of `Record`, in the order its initializer reads them.
    ///
    /// - Throws: ``RecordCodingError/cannotDeriveEntity(type:reason:)`` when the initializer
    ///   fails on placeholders, ``RecordCodingError/unsupportedStructure(type:reason:)`` when
    ///   it does not use one keyed container.
    static func attributes<Record: Decodable>(of _: Record.Type) throws(RecordCodingError) -> [DiscoveredAttribute] {
        let state = DiscoveryState(typeName: String(describing: Record.self))
        do {
            _ = try Record(from: DiscoveryDecoder(state: state))
        } catch let error as RecordCodingError {
            throw error
        } catch {
            throw .cannotDeriveEntity(type: state.typeName, reason: "its init(from:) threw: \(error)")
        }
        return state.attributes.map { attribute in
            var attribute = attribute
            attribute.isOptional = attribute.isOptional || state.nilChecked.contains(attribute.name)
            return attribute
        }
    }

    /// The attribute type a property of type `type` is stored as, whether `type` is optional,
    /// and the destination when it is a relationship (`RecordID<D>` to-one, `[RecordID<D>]`
    /// to-many, either optional or not).
    static func describe(_ type: Any.Type) -> (type: AttributeType, isOptional: Bool, destination: DiscoveredDestination?) {
        if let optionalType = type as? any OptionalDecodable.Type {
            let wrapped = describe(wrappedType(of: optionalType))
            return (wrapped.type, true, wrapped.destination)
        }
        if let reference = type as? any RecordReference.Type {
            return (.int, false, DiscoveredDestination(type: reference.destinationType, cardinality: .toOne))
        }
        if let list = type as? any RecordReferenceList.Type {
            return (.int, false, DiscoveredDestination(type: list.destinationType, cardinality: .toMany))
        }
        return (ValueConversion.scalarType(of: type) ?? .codable(typeName: String(describing: type)), false, nil)
    }

    private static func wrappedType<O: OptionalDecodable>(of _: O.Type) -> Any.Type { O.Wrapped.self }
}

/// What one discovery run has seen. Used by one call on one thread.
final class DiscoveryState {
    let typeName: String
    private(set) var attributes: [EntityDiscovery.DiscoveredAttribute] = []
    /// Keys asked about with `decodeNil(forKey:)`: the initializer treats them as nullable.
    private(set) var nilChecked: Set<String> = []

    init(typeName: String) { self.typeName = typeName }

    func record(_ name: String, as type: Any.Type, optional: Bool) {
        let (attributeType, isOptional, destination) = EntityDiscovery.describe(type)
        if let index = attributes.firstIndex(where: { $0.name == name }) {
            attributes[index].isOptional = attributes[index].isOptional || optional || isOptional
        } else {
            var probe = CodableProbe.unknown
            if case .codable = attributeType, destination == nil { probe = CodableProbe.probe(type) }
            attributes.append(.init(name: name, type: attributeType, isOptional: optional || isOptional, destination: destination,
                                    probe: probe))
        }
    }

    func markNilChecked(_ name: String) { nilChecked.insert(name) }
}

/// The recording `Decoder`.
struct DiscoveryDecoder: Decoder {
    let state: DiscoveryState
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy _: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(DiscoveryKeyedContainer<Key>(state: state))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw RecordCodingError.unsupportedStructure(type: state.typeName, reason: "it decodes from an unkeyed container; a record needs a keyed container")
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw RecordCodingError.unsupportedStructure(type: state.typeName, reason: "it decodes from a single value; a record needs a keyed container")
    }
}

/// Records every key; answers with placeholders.
struct DiscoveryKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let state: DiscoveryState
    var codingPath: [any CodingKey] { [] }
    /// Unknown before the initializer asks: discovery sees only the keys it reads.
    var allKeys: [Key] { [] }

    /// Every key is "present", so the initializer reads each one.
    func contains(_: Key) -> Bool { true }

    /// Marks the key nullable; answers "not nil" so the initializer goes on to decode its type.
    func decodeNil(forKey key: Key) throws -> Bool {
        state.markNilChecked(key.stringValue)
        return false
    }

    func decode<T: Decodable>(_: T.Type, forKey key: Key) throws -> T {
        state.record(key.stringValue, as: T.self, optional: false)
        do {
            return try Placeholder.make(T.self, depth: 0)
        } catch {
            throw RecordCodingError.cannotDeriveEntity(
                type: state.typeName,
                reason: "no placeholder \(T.self) for attribute \(key.stringValue) (make the type CaseIterable or give it a decodable default): \(error)")
        }
    }

    /// Optional attribute: recorded, and answered with nil (no placeholder needed).
    func decodeIfPresent<T: Decodable>(_: T.Type, forKey key: Key) throws -> T? {
        state.record(key.stringValue, as: T.self, optional: true)
        return nil
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy _: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        throw RecordCodingError.unsupportedStructure(
            type: state.typeName, reason: "attribute \(key.stringValue) asks for a nested keyed container; decode a Codable value instead")
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        throw RecordCodingError.unsupportedStructure(
            type: state.typeName, reason: "attribute \(key.stringValue) asks for a nested unkeyed container; decode an array value instead")
    }

    /// The superclass's attributes are part of the same entity.
    func superDecoder() throws -> any Decoder { DiscoveryDecoder(state: state) }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        throw RecordCodingError.unsupportedStructure(
            type: state.typeName, reason: "attribute \(key.stringValue) asks for a keyed super-decoder; use superDecoder() without a key")
    }
}
