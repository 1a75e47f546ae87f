extension Schema {
    /// A semantic version number, `major.minor.patch`, such as `Schema.Version(1, 2, 0)`.
    ///
    /// Versions order by major, then minor, then patch. Encoded with `Codable` as the string
    /// `"1.2.0"`.
    public struct Version: Sendable, Hashable, Comparable, CustomStringConvertible, LosslessStringConvertible, Codable {
        /// Incremented for changes that are not backward compatible.
        public var major: UInt32
        /// Incremented for backward-compatible additions.
        public var minor: UInt32
        /// Incremented for fixes.
        public var patch: UInt32

        /// Creates a version `major.minor.patch`.
        public init(_ major: UInt32, _ minor: UInt32, _ patch: UInt32) {
            self.major = major
            self.minor = minor
            self.patch = patch
        }

        /// Parses `"major.minor.patch"` (three decimal numbers, each below 2^32); nil otherwise.
        public init?(_ description: String) {
            let parts = description.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCII) }),
                  let major = UInt32(parts[0]), let minor = UInt32(parts[1]), let patch = UInt32(parts[2])
            else { return nil }
            self.init(major, minor, patch)
        }

        /// `"major.minor.patch"`, e.g. `"1.0.0"`.
        public var description: String { "\(major).\(minor).\(patch)" }

        /// Orders by major, then minor, then patch.
        public static func < (lhs: Version, rhs: Version) -> Bool {
            (lhs.major, lhs.minor, lhs.patch) < (rhs.major, rhs.minor, rhs.patch)
        }

        /// Decodes the string form `"1.2.0"`.
        /// - Throws: `DecodingError.dataCorrupted` when the string is not a version.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let version = Version(text) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "\"\(text)\" is not a version major.minor.patch")
            }
            self = version
        }

        /// Encodes the string form `"1.2.0"`.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(description)
        }
    }
}
