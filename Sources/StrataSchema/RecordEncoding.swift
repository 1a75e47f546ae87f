/// What one `RecordEncoder.encode` call collects. A class because the encoder and its
/// containers (value types handed to user code) all write into it; used by one call on one
/// thread, never shared.
final class RecordEncodingState {
    let typeName: String
    var values: [String: Value] = [:]
    /// The first structural problem, recorded where the `Encoder` API cannot throw
    /// (`unkeyedContainer()`, `nestedContainer`…) and thrown when `encode(to:)` returns.
    var failure: RecordCodingError?

    init(typeName: String) { self.typeName = typeName }

    func fail(_ reason: String) {
        if failure == nil { failure = .unsupportedStructure(type: typeName, reason: reason) }
    }
}

/// The `Encoder` a record encodes itself into.
struct RecordEncoding: Encoder {
    let state: RecordEncodingState
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy _: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(RecordKeyedEncodingContainer<Key>(state: state))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        state.fail("it encodes as an unkeyed container (a list); a record needs a keyed container")
        return DiscardingEncodingContainer()
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        state.fail("it encodes as a single value; a record needs a keyed container")
        return DiscardingEncodingContainer()
    }
}

/// Stores each key's value as an attribute.
struct RecordKeyedEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let state: RecordEncodingState
    var codingPath: [any CodingKey] { [] }

    mutating func encodeNil(forKey key: Key) throws {
        state.values[key.stringValue] = .null
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        state.values[key.stringValue] = try ValueConversion.value(of: value, attribute: key.stringValue)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy _: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        state.fail("attribute \(key.stringValue) asks for a nested keyed container; encode a Codable value instead")
        return KeyedEncodingContainer(RecordKeyedEncodingContainer<NestedKey>(state: RecordEncodingState(typeName: state.typeName)))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        state.fail("attribute \(key.stringValue) asks for a nested unkeyed container; encode an array value instead")
        return DiscardingEncodingContainer()
    }

    /// The superclass encodes into the same record (its attributes are inherited ones).
    mutating func superEncoder() -> any Encoder { RecordEncoding(state: state) }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        state.fail("attribute \(key.stringValue) asks for a keyed super-encoder; use superEncoder() without a key")
        return RecordEncoding(state: RecordEncodingState(typeName: state.typeName))
    }
}

/// Where values go after a structural failure was recorded: accepted and dropped, so the
/// record's `encode(to:)` runs to its end and the recorded failure is reported.
struct DiscardingEncodingContainer: UnkeyedEncodingContainer, SingleValueEncodingContainer {
    var codingPath: [any CodingKey] { [] }
    var count: Int { 0 }

    mutating func encodeNil() throws {}
    mutating func encode<T: Encodable>(_: T) throws {}

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy _: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(RecordKeyedEncodingContainer<NestedKey>(state: RecordEncodingState(typeName: "")))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { DiscardingEncodingContainer() }
    mutating func superEncoder() -> any Encoder { RecordEncoding(state: RecordEncodingState(typeName: "")) }
}
