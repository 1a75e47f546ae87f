/// A decoding failure: the bytes are not a valid instance of the structure being read.
/// `offset` is relative to the start of the decoded buffer; the page log adds the file
/// and the absolute offset when it turns this into a store error.
package struct FormatError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong, for a person.
    package var reason: String
    /// Byte offset inside the decoded buffer where the problem was found.
    package var offset: Int

    /// Set when the bytes are valid but written in a newer format version than this library reads.
    package var unsupportedVersion: UInt16?

    package init(_ reason: String, at offset: Int = 0, unsupportedVersion: UInt16? = nil) {
        self.reason = reason
        self.offset = offset
        self.unsupportedVersion = unsupportedVersion
    }

    package var description: String { "\(reason) (at byte \(offset))" }
}

/// The on-disk format version this library writes and the newest it reads.
/// Docs/FileFormat.md, "Versions".
package let currentFormatVersion: UInt16 = 3
