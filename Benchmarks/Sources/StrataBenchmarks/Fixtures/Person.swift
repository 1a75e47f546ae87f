/// One record of the brief's reference workload: `fullName` ("Last123, First456"),
/// `createdAt` (a date, as seconds since 1970 in a Double) and `note` (about 60 characters).
/// The texts are UTF-8 bytes in buffers that `generate(id:)` reuses, so a workload can
/// produce a million records one after another without allocating for each.
///
/// Record `id` (1, 2, 3, …) is a pure function of the id and a fixed seed. Both stores of a
/// workload get the same records, and whatever is read back is checked against a freshly
/// generated copy — without a million records held in memory, which would count in the
/// peak memory reported for Strata.
///
/// Notes are words from a 32-word list around the record's id, e.g.
/// "dolor magna ref 4711 sed tempor aliqua ut enim labore minim", so they compress like
/// text, not like repeated bytes. Their first two words are one of 1,024 pairs: a prefix
/// such as "lorem ipsum " matches about 0.1% of the records (`scanNotePrefix`).
struct Person: Equatable {
    var fullName: [UInt8] = []
    var createdAt: Double = 0
    var note: [UInt8] = []

    /// The seed every record derives from ("PERSON").
    static let seed: UInt64 = 0x5045_5253_4F4E

    /// The note prefix the scans count: the first two words of the list, about 0.1% of notes.
    static let scanNotePrefix = "lorem ipsum "

    /// The notes grow word by word up to at least this many bytes (about 60 in all).
    private static let noteMinimumBytes = 56

    /// Room for the longest text generated (a note: 55 bytes, a space and a word of 12).
    private static let scratchBytes = 128

    /// The note words, back to back.
    private static let wordBytes: [UInt8] = Array(words.joined().utf8)
    /// Where each word is in `wordBytes`.
    private static let wordRanges: [Range<Int>] = words.reduce(into: []) { ranges, word in
        let start = ranges.last?.upperBound ?? 0
        ranges.append(start..<start + word.utf8.count)
    }
    private static let words = [
        "lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit",
        "sed", "do", "eiusmod", "tempor", "incididunt", "ut", "labore", "et",
        "dolore", "magna", "aliqua", "enim", "ad", "minim", "veniam", "quis",
        "nostrud", "exercitation", "ullamco", "laboris", "nisi", "aliquip", "ex", "commodo",
    ]

    init() {
        fullName.reserveCapacity(32)
        note.reserveCapacity(96)
    }

    /// Replaces the fields with those of record `id`, reusing the buffers.
    mutating func generate(id: UInt64) {
        var random = SplitMix64(seed: SplitMix64.mix(Self.seed ^ id))
        let last = random.next() % 1_000_000
        let first = random.next() % 1_000
        // 2017-07-14 plus up to ~9.5 years, to the millisecond.
        createdAt = 1_500_000_000 + Double(random.next() % 300_000_000_000) / 1_000
        let pair = random.next()

        // Each text is written to a scratch buffer, then copied to its field in one go.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Self.scratchBytes) { scratch in
            Self.wordBytes.withUnsafeBytes { wordBytes in
                var text = TextWriter(scratch)
                text.append("Last")
                text.appendDecimal(last)
                text.append(", First")
                text.appendDecimal(first)
                fullName.removeAll(keepingCapacity: true)
                fullName.append(contentsOf: text.written)

                text = TextWriter(scratch)
                func appendWord(_ index: UInt64) {
                    let range = Self.wordRanges[Int(index & 31)]
                    text.append(UnsafeRawBufferPointer(rebasing: wordBytes[range]))
                }
                appendWord(pair)
                text.append(" ")
                appendWord(pair >> 5)
                text.append(" ref ")
                text.appendDecimal(id)
                while text.count < Self.noteMinimumBytes {
                    text.append(" ")
                    appendWord(random.next())
                }
                note.removeAll(keepingCapacity: true)
                note.append(contentsOf: text.written)
            }
        }
    }

    /// A short description for error messages.
    var summary: String {
        "(\"\(String(decoding: fullName, as: UTF8.self))\", \(createdAt), \"\(String(decoding: note, as: UTF8.self))\")"
    }
}

/// Writes text into a scratch buffer (what `Person.generate` builds each text in), with one
/// bounds check per piece rather than per byte.
private struct TextWriter {
    private let buffer: UnsafeMutableBufferPointer<UInt8>
    private(set) var count = 0

    init(_ buffer: UnsafeMutableBufferPointer<UInt8>) {
        self.buffer = buffer
    }

    /// What has been written.
    var written: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(rebasing: buffer[..<count]) }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        precondition(count + bytes.count <= buffer.count, "a generated text outgrew its scratch buffer")
        UnsafeMutableRawPointer(buffer.baseAddress! + count).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        count += bytes.count
    }

    mutating func append(_ text: StaticString) {
        append(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Appends `value` in decimal digits.
    mutating func appendDecimal(_ value: UInt64) {
        var digits = 1
        var rest = value / 10
        while rest > 0 { digits += 1; rest /= 10 }
        precondition(count + digits <= buffer.count, "a generated text outgrew its scratch buffer")
        var remaining = value
        for offset in stride(from: count + digits - 1, through: count, by: -1) {
            buffer[offset] = UInt8(ascii: "0") + UInt8(remaining % 10)
            remaining /= 10
        }
        count += digits
    }
}
