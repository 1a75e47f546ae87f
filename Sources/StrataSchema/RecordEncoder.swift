/// Turns a typed record into its attribute values: `[attribute name: Value]`.
///
/// The record's `encode(to:)` must use one keyed container; each key is an attribute.
/// Scalars (see ``PersistentRecord``) become their ``Value``; `nil` optionals are left out
/// (absent, as `.null` would be); any other `Codable` value becomes `.codable` with its
/// sorted-keys JSON. `superEncoder()` shares the record's attributes, so a subclass and its
/// superclass encode into one record.
///
/// A value type with no state: safe to share and use from any thread.
public struct RecordEncoder: Sendable {
    /// Creates an encoder.
    public init() {}

    /// The attribute values of `record`; attributes that are `nil` are absent.
    ///
    /// - Throws: ``RecordCodingError/unsupportedStructure(type:reason:)`` when the record does
    ///   not encode as one keyed container; ``RecordCodingError/integerOutOfRange(attribute:value:type:)``;
    ///   ``RecordCodingError/invalidCodableValue(attribute:type:reason:)``;
    ///   ``RecordCodingError/recordCodingFailed(type:reason:)`` when `encode(to:)` throws an
    ///   error of its own.
    public func encode<Record: Encodable>(_ record: Record) throws(RecordCodingError) -> [String: Value] {
        let state = try run(record, RecordEncodingState(type: Record.self))
        return state.values.filter { !$0.value.isNull }
    }

    /// Runs a typed record's `encode(to: RecordWriter)` into `state` (the fast path when the
    /// type implements it, else its `Encodable` conformance) and throws the failure it recorded.
    func run<Record: PersistentRecord>(_ record: Record, _ state: RecordEncodingState) throws(RecordCodingError) -> RecordEncodingState {
        try perform(state) {
            var writer = RecordWriter(state: state)
            try record.encode(to: &writer)
        }
    }

    /// Runs the record's `encode(to:)` into `state` and throws the failure it recorded.
    func run<Record: Encodable>(_ record: Record, _ state: RecordEncodingState) throws(RecordCodingError) -> RecordEncodingState {
        try perform(state) { try record.encode(to: RecordEncoding(state: state)) }
    }

    /// Runs `encode`, turning what it throws into a `RecordCodingError`, then throws the
    /// failure `state` recorded, if any.
    @inline(__always)
    private func perform(_ state: RecordEncodingState, _ encode: () throws -> Void) throws(RecordCodingError) -> RecordEncodingState {
        do {
            try encode()
        } catch let error as RecordCodingError {
            throw error
        } catch {
            throw .recordCodingFailed(type: state.typeName, reason: "\(error)")
        }
        if let failure = state.failure { throw failure }
        return state
    }
}
