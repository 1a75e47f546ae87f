#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Finds the attribute a key path of a record type names — the customizations keyed by key
/// path (`PersistentRecord.attributeOptionsByKeyPath`, …) are checked by the compiler, and
/// mapped to attribute names here.
///
/// The type is decoded once with placeholders everywhere (``Placeholder``) and once per
/// attribute with a *marked* value for that attribute only (true, 1, "\u{1}", a date one second
/// in, a one-element array, the last case of a `CaseIterable`, …, all the way down its nested
/// values). The key path reads a different value from exactly one marked instance: that
/// attribute's. Values are compared by `String(reflecting:)`, which tells these apart for
/// every type a record can hold.
enum KeyPathNames {
    /// The attribute name of each key path, in the order given.
    /// - Throws: ``RecordCodingError/cannotDeriveEntity(type:reason:)`` when a key path reads no
    ///   single attribute (a computed property, or values the type's decoding does not let apart).
    static func names<Record: PersistentRecord>(of keyPaths: [PartialKeyPath<Record>], in _: Record.Type,
                                                attributes: [String]) throws(RecordCodingError) -> [PartialKeyPath<Record>: String] {
        guard !keyPaths.isEmpty else { return [:] }
        let typeName = String(describing: Record.self)
        let baseline: Record, marked: [(name: String, record: Record)]
        do {
            baseline = try Placeholder.make(Record.self, depth: 0)
            marked = try attributes.map { name in (name, try Record(from: MarkingDecoder(marked: name, depth: 1, markAll: false))) }
        } catch {
            throw .cannotDeriveEntity(type: typeName, reason: "its key-path customizations cannot be mapped to attributes: \(error)")
        }
        var result: [PartialKeyPath<Record>: String] = [:]
        for keyPath in keyPaths {
            // A struct's stored property has an offset; a computed one has none.
            if !(Record.self is AnyClass), MemoryLayout<Record>.offset(of: keyPath) == nil {
                throw .cannotDeriveEntity(type: typeName, reason: "a key-path customization names \(keyPath), which is not a stored "
                    + "property (a computed property?); key it by the property's name instead")
            }
            let plain = String(reflecting: baseline[keyPath: keyPath])
            let differing = marked.filter { String(reflecting: $0.record[keyPath: keyPath]) != plain }
            guard differing.count == 1, let name = differing.first?.name else {
                throw .cannotDeriveEntity(type: typeName, reason: "a key-path customization names \(keyPath), which is not one stored "
                    + "property of the type (a computed property?); key it by the property's name instead")
            }
            result[keyPath] = name
        }
        return result
    }
}

/// A decoder giving placeholders everywhere except under the key `marked` (or everywhere,
/// with `markAll`), where it gives marked values, all the way down.
private struct MarkingDecoder: Decoder, SingleValueDecodingContainer {
    let marked: String
    let depth: Int
    let markAll: Bool
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy _: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(MarkingKeyedContainer<Key>(marked: marked, depth: depth, markAll: markAll))
    }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        markAll ? MarkingUnkeyedContainer(depth: depth) : PlaceholderUnkeyedContainer(depth: depth)
    }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }
    func decodeNil() -> Bool { false }
    func decode<T: Decodable>(_: T.Type) throws -> T {
        markAll ? try MarkedValue.make(T.self, depth: depth) : try Placeholder.make(T.self, depth: depth)
    }
}

private struct MarkingKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let marked: String
    let depth: Int
    let markAll: Bool
    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { [] }

    private func isMarked(_ key: Key) -> Bool { markAll || key.stringValue == marked }
    func contains(_ key: Key) -> Bool { isMarked(key) }
    func decodeNil(forKey key: Key) throws -> Bool { !isMarked(key) }
    func decode<T: Decodable>(_: T.Type, forKey key: Key) throws -> T {
        isMarked(key) ? try MarkedValue.make(T.self, depth: depth) : try Placeholder.make(T.self, depth: depth)
    }
    func nestedContainer<NestedKey: CodingKey>(keyedBy _: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        KeyedDecodingContainer(MarkingKeyedContainer<NestedKey>(marked: marked, depth: depth, markAll: isMarked(key)))
    }
    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        isMarked(key) ? MarkingUnkeyedContainer(depth: depth) : PlaceholderUnkeyedContainer(depth: depth)
    }
    func superDecoder() throws -> any Decoder { MarkingDecoder(marked: marked, depth: depth, markAll: markAll) }
    func superDecoder(forKey key: Key) throws -> any Decoder { MarkingDecoder(marked: marked, depth: depth, markAll: isMarked(key)) }
}

/// One marked element, then the end.
private struct MarkingUnkeyedContainer: UnkeyedDecodingContainer {
    let depth: Int
    var codingPath: [any CodingKey] { [] }
    var count: Int? { 1 }
    var isAtEnd: Bool { currentIndex >= 1 }
    var currentIndex = 0

    init(depth: Int) { self.depth = depth }
    mutating func decodeNil() throws -> Bool { false }
    mutating func decode<T: Decodable>(_: T.Type) throws -> T {
        currentIndex += 1
        return try MarkedValue.make(T.self, depth: depth)
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy _: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        currentIndex += 1
        return KeyedDecodingContainer(MarkingKeyedContainer<NestedKey>(marked: "", depth: depth, markAll: true))
    }
    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        currentIndex += 1
        return MarkingUnkeyedContainer(depth: depth)
    }
    mutating func superDecoder() throws -> any Decoder {
        currentIndex += 1
        return MarkingDecoder(marked: "", depth: depth, markAll: true)
    }
}

/// Values that differ from ``Placeholder``'s.
private enum MarkedValue {
    static func make<T: Decodable>(_: T.Type, depth: Int) throws -> T {
        if let scalar = Placeholder.scalar(T.self, marked: true) as? T { return scalar }
        if let caseIterable = T.self as? any CaseIterable.Type, let last = lastCase(of: caseIterable) as? T { return last }
        guard depth < Placeholder.maximumDepth else { throw Placeholder.TooDeep(typeName: String(describing: T.self)) }
        return try T(from: MarkingDecoder(marked: "", depth: depth + 1, markAll: true))
    }

    private static func lastCase<C: CaseIterable>(of _: C.Type) -> Any? { C.allCases.count > 1 ? Array(C.allCases).last : nil }
}
