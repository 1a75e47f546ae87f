/// A SHA-256 digest of a schema's storage-relevant shape (see ``Schema/checksum``).
///
/// Two schemas have the same checksum exactly when they store records the same way: the
/// same entities, attributes and relationships, in any declaration order. The checksum is
/// identical across runs, processes and platforms. Printed as 64 lowercase hex digits.
public struct SchemaChecksum: Sendable, Hashable, CustomStringConvertible {
    /// The 32 digest bytes.
    public let bytes: [UInt8]

    /// Wraps 32 digest bytes; nil for any other count.
    public init?(bytes: [UInt8]) {
        guard bytes.count == SHA256.digestLength else { return nil }
        self.bytes = bytes
    }

    /// The SHA-256 digest of `message`.
    package init(digestOf message: [UInt8]) {
        bytes = SHA256.hash(message)
    }

    /// Parses 64 hex digits (either case); nil otherwise.
    public init?(hex: String) {
        let digits = Array(hex.utf8)
        guard digits.count == 2 * SHA256.digestLength else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(SHA256.digestLength)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = Self.nibble(digits[index]), let low = Self.nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        self.bytes = bytes
    }

    /// 64 lowercase hex digits.
    public var description: String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(2 * bytes.count)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
