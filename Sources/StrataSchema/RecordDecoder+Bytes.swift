extension RecordDecoder {
    /// A record from values decoded by ``RecordCodec``, named through one catalog version's
    /// attribute ids (id → name). Values whose id the version does not name (attributes
    /// dropped since the record was written) are ignored.
    ///
    /// - Throws: as ``decode(_:from:)``.
    package func decode<Record: Decodable>(_ type: Record.Type, from values: [UInt32: Value],
                                           attributeNames: [UInt32: String]) throws(RecordCodingError) -> Record
    {
        var named: [String: Value] = [:]
        for (id, value) in values {
            if let name = attributeNames[id] { named[name] = value }
        }
        return try decode(type, from: named)
    }
}

extension RecordDecoder {
    /// A record from fields decoded by `RecordCodec.decodeFields`, named through `layout` (one
    /// catalog version's attributes of the record's entity), without a dictionary of names.
    /// Attributes absent from `fields` take the layout's catalog defaults, then the type's
    /// ``PersistentRecord/attributeDefaults``; fields whose id the layout lacks are ignored. A
    /// `.null` field is a null field (nil for an optional property, whatever its default).
    ///
    /// - Throws: as ``decode(_:from:)``.
    package func decode<Record: PersistentRecord>(_ type: Record.Type, fields: [(id: UInt32, value: Value)],
                                                  layout: RecordLayout) throws(RecordCodingError) -> Record
    {
        var slots = layout.defaults
        var nulls: [Int] = []
        // Both ascending by id: one merge walk.
        var position = 0
        let ids = layout.ids
        for field in fields {
            while position < ids.count && ids[position] < field.id { position += 1 }
            if position == ids.count { break }
            if ids[position] == field.id {
                slots[position] = field.value
                if field.value.isNull { nulls.append(position) }
            }
        }
        return try decode(type, slots: slots, nulls: nulls, layout: layout)
    }

    /// A record from its stored bytes, named through `layout` as ``decode(_:fields:layout:)``
    /// names fields, with the same results and errors, decoded straight from the bytes.
    ///
    /// - Throws: `FormatError` for bytes that are not a valid record (as
    ///   `RecordCodec.decodeFields`); `RecordCodingError` as ``decode(_:from:)``.
    package func decode<Record: PersistentRecord>(_ type: Record.Type, bytes: UnsafeRawBufferPointer, layout: RecordLayout) throws -> Record {
        // One validating pass notes where each field is; the record's `init(from:)` then reads
        // its properties straight from the bytes, with no `Value` in between.
        var state = try RecordDecodingState.locating(bytes, layout: layout, type: Record.self)
        defer { RecordDecodingState.finish(&state) }
        return try run(Record.self, state)
    }

    /// A record from the values of `layout`'s attributes (catalog defaults already in place;
    /// `nulls`: the positions of null fields).
    private func decode<Record: PersistentRecord>(_ type: Record.Type, slots: [Value], nulls: [Int],
                                                  layout: RecordLayout) throws(RecordCodingError) -> Record
    {
        var slots = slots
        var layout = layout
        let defaults = Record.attributeDefaults
        if !defaults.isEmpty {
            var others: [(name: String, id: UInt32, defaultValue: Value)] = []
            for (name, value) in defaults {
                if let index = layout.position(of: name) {
                    if slots[index].isNull && !nulls.contains(index) { slots[index] = value }
                } else {
                    others.append((name, 0, value))
                }
            }
            if !others.isEmpty {
                // Defaults of names this version lacks (never in a binding's own version):
                // named in an extended layout, after the version's attributes.
                let base = layout
                layout = RecordLayout(attributes: base.ids.indices.map { (base.names[$0], UInt32($0), Value.null) }
                                      + others.enumerated().map { ($1.name, UInt32(base.ids.count + $0), .null) })
                slots += others.map(\.defaultValue)
            }
        }
        return try run(Record.self, RecordDecodingState.holding(slots, nulls: nulls, layout: layout, type: Record.self))
    }
}

/// Decodes many records with one layout one after another (a migration's transform), reusing
/// one decoding state — its allocation and its spans — instead of making one per record.
/// A state a record's `init(from:)` kept (it may store its decoder) is left to it, its values
/// copied out as a single decode does, and a new one made. The same records and errors as
/// `RecordDecoder.decode(_:bytes:layout:)`. Not thread-safe: one per thread.
package final class RecordDecodingSession {
    package let layout: RecordLayout
    private var spare: RecordDecodingState?

    package init(layout: RecordLayout) {
        self.layout = layout
    }

    /// A record from its stored bytes, named through `layout`.
    /// - Throws: as `RecordDecoder.decode(_:bytes:layout:)`.
    package func decode<Record: PersistentRecord>(_ type: Record.Type, bytes: UnsafeRawBufferPointer) throws -> Record {
        // The spare state is moved out and back (`take`, `consume`), not copied: no reference
        // counting of it per record.
        var state: RecordDecodingState
        if var reused = spare.take(), isKnownUniquelyReferenced(&reused) {
            try reused.relocate(bytes, type: Record.self)
            state = reused
        } else {
            state = try RecordDecodingState.locating(bytes, layout: layout, type: Record.self)
        }
        let record: Record
        do {
            record = try RecordDecoder().run(Record.self, state)
        } catch {
            RecordDecodingState.finish(&state)
            if isKnownUniquelyReferenced(&state) { spare = consume state }
            throw error
        }
        RecordDecodingState.finish(&state)
        if isKnownUniquelyReferenced(&state) { spare = consume state }
        return record
    }
}
