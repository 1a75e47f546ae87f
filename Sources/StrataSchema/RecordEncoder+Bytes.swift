extension RecordEncoder {
    /// The record's bytes in the ``RecordCodec`` encoding, keyed by the attribute ids of one
    /// catalog version (`CatalogVersion.attributeIDs(ofEntity:)`).
    ///
    /// - Throws: as ``encode(_:)``, and ``RecordCodingError/unknownAttribute(type:attribute:)``
    ///   for a non-null value whose attribute has no id (the type does not match the version).
    package func encode<Record: Encodable>(_ record: Record, attributeIDs: [String: UInt32]) throws(RecordCodingError) -> [UInt8] {
        try encode(record, layout: RecordLayout(attributes: attributeIDs.map { ($0.key, $0.value, .null) }))
    }

    /// The record's bytes in the ``RecordCodec`` encoding, keyed by the attribute ids of
    /// `layout`; what a schema binding calls, with a layout made once per entity.
    ///
    /// - Throws: as ``encode(_:attributeIDs:)``.
    package func encode<Record: Encodable>(_ record: Record, layout: RecordLayout) throws(RecordCodingError) -> [UInt8] {
        try encode(record, into: RecordEncodingState(type: Record.self, layout: layout))
    }

    /// A typed record's bytes (its fast path, or its `Encodable` conformance), keyed by `layout`.
    /// - Throws: as ``encode(_:layout:)-(Encodable,_)``.
    package func encode<Record: PersistentRecord>(_ record: Record, layout: RecordLayout) throws(RecordCodingError) -> [UInt8] {
        try encode(record, into: RecordEncodingState(type: Record.self, layout: layout))
    }

    /// Encodes a typed record with `state` (fresh, or reset) and returns its bytes.
    func encode<Record: PersistentRecord>(_ record: Record, into state: RecordEncodingState) throws(RecordCodingError) -> [UInt8] {
        _ = try run(record, state)
        return try finish(state, type: Record.self)
    }

    /// Encodes `record` with `state` (fresh, or reset) and returns its bytes.
    func encode<Record: Encodable>(_ record: Record, into state: RecordEncodingState) throws(RecordCodingError) -> [UInt8] {
        // Values go straight into the record's bytes; only names without an id are kept by name.
        _ = try run(record, state)
        return try finish(state, type: Record.self)
    }

    /// The bytes `state` holds, once every value it kept by name is null (else the first such
    /// name is an unknown attribute).
    private func finish(_ state: RecordEncodingState, type: Any.Type) throws(RecordCodingError) -> [UInt8] {
        if !state.values.isEmpty,
           let unknown = state.values.filter({ !$0.value.isNull }).keys.min()  // the least name: the same error every run
        {
            throw .unknownAttribute(type: String(describing: type), attribute: unknown)
        }
        return state.encodedBytes()
    }
}

/// Encodes many records with one layout one after another (a bulk insert), reusing one
/// encoding state and one byte buffer instead of allocating both per record: the bytes of
/// `encode` given back with `recycle` become the next record's buffer.
///
/// A state is reused only when nothing kept it (a record's `encode(to:)` may store its
/// encoder or container; such a state is left to it and a new one made). The same bytes and
/// errors as `RecordEncoder.encode(_:layout:)`. Not thread-safe: one per transaction.
package final class RecordEncodingSession {
    package let layout: RecordLayout
    private var spare: RecordEncodingState?
    private var spareBuffer: [UInt8] = []
    /// Whether the last record came out of attribute-id order (records of one type do alike).
    private var lastWasDisordered = false

    package init(layout: RecordLayout) {
        self.layout = layout
    }

    /// A typed record's bytes in the `RecordCodec` encoding, keyed by `layout`'s ids (its fast
    /// path, or its `Encodable` conformance).
    /// - Throws: as `RecordEncoder.encode(_:layout:)`.
    package func encode<Record: PersistentRecord>(_ record: Record) throws(RecordCodingError) -> [UInt8] {
        var state = reusableState(for: Record.self)
        defer {
            lastWasDisordered = state.isDisordered
            if isKnownUniquelyReferenced(&state) { spare = state }
        }
        return try RecordEncoder().encode(record, into: state)
    }

    /// The record's bytes in the `RecordCodec` encoding, keyed by `layout`'s ids.
    /// - Throws: as `RecordEncoder.encode(_:layout:)`.
    package func encode<Record: Encodable>(_ record: Record) throws(RecordCodingError) -> [UInt8] {
        var state = reusableState(for: Record.self)
        defer {
            lastWasDisordered = state.isDisordered
            if isKnownUniquelyReferenced(&state) { spare = state }
        }
        return try RecordEncoder().encode(record, into: state)
    }

    /// The spare state reset for a record of `type` (writing into the spare buffer), or a new one.
    private func reusableState(for type: Any.Type) -> RecordEncodingState {
        guard let spare else { return RecordEncodingState(type: type, layout: layout) }
        self.spare = nil
        var buffer: [UInt8] = []
        swap(&buffer, &spareBuffer)
        spare.reset(type: type, buffer: buffer, expectingDisorder: lastWasDisordered)
        return spare
    }

    /// Gives back the bytes of an earlier `encode`, once the caller no longer needs them, to
    /// be written over by the next record.
    package func recycle(_ bytes: consuming [UInt8]) {
        spareBuffer = bytes
    }
}
