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
        try finish(state, type: Record.self)
        return state.encodedBytes()
    }

    /// Encodes `record` with `state` (fresh, or reset) and returns its bytes.
    func encode<Record: Encodable>(_ record: Record, into state: RecordEncodingState) throws(RecordCodingError) -> [UInt8] {
        // Values go straight into the record's bytes; only names without an id are kept by name.
        _ = try run(record, state)
        try finish(state, type: Record.self)
        return state.encodedBytes()
    }

    /// Throws unless every value `state` kept by name is null (else the first such name is an
    /// unknown attribute).
    func finish(_ state: RecordEncodingState, type: Any.Type) throws(RecordCodingError) {
        if !state.values.isEmpty,
           let unknown = state.values.filter({ !$0.value.isNull }).keys.min()  // the least name: the same error every run
        {
            throw .unknownAttribute(type: String(describing: type), attribute: unknown)
        }
    }

    /// Encodes a typed record with `state` (fresh, or reset); its bytes are `state`'s, valid
    /// until it is reset or freed.
    func encodeInPlace<Record: PersistentRecord>(_ record: Record, into state: RecordEncodingState) throws(RecordCodingError)
        -> UnsafeRawBufferPointer
    {
        _ = try run(record, state)
        try finish(state, type: Record.self)
        return state.finishedBytes()
    }
}

/// Encodes many records with one layout one after another (a bulk insert, a migration's
/// transform), reusing one encoding state — its memory, and the order in which the type gave
/// its names — instead of making one per record. `encode` returns an array; `encodeInPlace`
/// returns the state's own bytes, copied by the caller, with no array at all (what bulk
/// inserts and migrations use).
///
/// A state is reused only when nothing kept it (a record's `encode(to:)` may store its
/// encoder or container; such a state is left to it and a new one made). The same bytes and
/// errors as `RecordEncoder.encode(_:layout:)`. Not thread-safe: one per transaction (or
/// per thread).
package final class RecordEncodingSession {
    package let layout: RecordLayout
    /// The state of the last record (kept until the next one, which reuses it unless a record
    /// kept it too).
    private var current: RecordEncodingState?

    /// Data payloads at least this long are kept by reference while a record is encoded
    /// (`encodeInPlaceUnlessSpliced`, `withPieces`).
    package static var splicedPayloadMinimum: Int { RecordEncodingState.splicedPayloadMinimum }

    package init(layout: RecordLayout) {
        self.layout = layout
    }

    /// A typed record's bytes in the `RecordCodec` encoding, keyed by `layout`'s ids (its fast
    /// path, or its `Encodable` conformance).
    /// - Throws: as `RecordEncoder.encode(_:layout:)`.
    package func encode<Record: PersistentRecord>(_ record: Record) throws(RecordCodingError) -> [UInt8] {
        try RecordEncoder().encode(record, into: reusableState(for: Record.self))
    }

    /// The record's bytes in the `RecordCodec` encoding, keyed by `layout`'s ids.
    /// - Throws: as `RecordEncoder.encode(_:layout:)`.
    package func encode<Record: Encodable>(_ record: Record) throws(RecordCodingError) -> [UInt8] {
        try RecordEncoder().encode(record, into: reusableState(for: Record.self))
    }

    /// A typed record's bytes, as `encode` gives them, in memory of the session's: valid until
    /// the next call on the session (or its end).
    /// - Throws: as `RecordEncoder.encode(_:layout:)`.
    package func encodeInPlace<Record: PersistentRecord>(_ record: Record) throws(RecordCodingError) -> UnsafeRawBufferPointer {
        try RecordEncoder().encodeInPlace(record, into: reusableState(for: Record.self))
    }

    /// A typed record's bytes as `encodeInPlace` gives them — or nil when the record holds
    /// large data payloads, which are then not copied: `withPieces` gives the record, its
    /// payloads as the caller's values hold them (a bulk insert of a 200 MB value writes it to
    /// the log from the caller's `Data`).
    /// - Throws: as `RecordEncoder.encode(_:layout:)`.
    package func encodeInPlaceUnlessSpliced<Record: PersistentRecord>(_ record: Record) throws(RecordCodingError) -> UnsafeRawBufferPointer? {
        let state = reusableState(for: Record.self)
        _ = try RecordEncoder().run(record, state)
        try RecordEncoder().finish(state, type: Record.self)
        return state.hasPayloads ? nil : state.finishedBytes()
    }

    /// Calls `body` with the last record, for which `encodeInPlaceUnlessSpliced` returned nil,
    /// as consecutive pieces valid during the call (see `RecordEncodingState.withPieces`).
    package func withPieces(_ body: ([UnsafeRawBufferPointer]) throws -> Void) rethrows {
        guard let current else { return try body([]) }
        try current.withPieces(body)
    }

    /// The record's bytes, as `encode` gives them, in memory of the session's: valid until the
    /// next call on the session (or its end).
    /// - Throws: as `RecordEncoder.encode(_:layout:)`.
    package func encodeInPlace<Record: Encodable>(_ record: Record) throws(RecordCodingError) -> UnsafeRawBufferPointer {
        let state = reusableState(for: Record.self)
        _ = try RecordEncoder().run(record, state)
        try RecordEncoder().finish(state, type: Record.self)
        return state.finishedBytes()
    }

    /// The last record's state reset for a record of `type`, or a new one when there is none
    /// or a record kept it.
    private func reusableState(for type: Any.Type) -> RecordEncodingState {
        // Checked in place (no reference taken first), so a reused state costs one retain.
        if isKnownUniquelyReferenced(&current), let state = current {
            state.reset(type: type)
            return state
        }
        let state = RecordEncodingState(type: type, layout: layout)
        current = state
        return state
    }
}
