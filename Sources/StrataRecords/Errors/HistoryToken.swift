#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A point in a store's history: the token of one committed transaction. Tokens increase
/// with every journaled transaction, never repeat, and stay valid across launches, processes
/// and migrations; keep the last one you processed (it is `Codable`, as a number) and ask for
/// the transactions after it.
public struct HistoryToken: Hashable, Comparable, Codable, Sendable, CustomStringConvertible {
    /// The token's number: 1 for a store's first journaled transaction, then increasing.
    public let rawValue: UInt64

    /// A token from a number previously read from `rawValue`.
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// Before every transaction: history after it is the whole journal.
    public static let start = HistoryToken(rawValue: 0)

    /// Commit order.
    public static func < (a: HistoryToken, b: HistoryToken) -> Bool { a.rawValue < b.rawValue }

    /// Encodes as the bare number.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    /// Decodes from the bare number.
    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(UInt64.self)
    }

    /// `#42`.
    public var description: String { "#\(rawValue)" }
}
