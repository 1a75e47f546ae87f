import Foundation

/// Strata's scan predicate for the key-value peers: a person's note starts with a prefix,
/// bytes compared (case-sensitive), on each record in `PersonEncoding`'s form.
struct PersonNoteFilter {
    let prefix: [UInt8]
    /// Names the store in errors.
    let store: String

    init(prefix: String, store: String) {
        self.prefix = Array(prefix.utf8)
        self.store = store
    }

    /// Whether person `id`'s note (`bytes`, an encoded person) starts with the prefix.
    /// Throws when the bytes are not a valid encoding.
    func matches(_ bytes: UnsafeRawBufferPointer, id: UInt64) throws -> Bool {
        guard let fields = PersonEncoding.decode(bytes) else {
            throw BenchmarkError.verificationFailed("\(store): person \(id) is not a valid encoding (\(bytes.count) bytes)")
        }
        guard fields.note.count >= prefix.count, let base = bytes.baseAddress else { return prefix.isEmpty }
        return prefix.withUnsafeBytes { prefix in
            prefix.baseAddress.map { memcmp(base + fields.note.lowerBound, $0, prefix.count) == 0 } ?? true
        }
    }
}
