import StrataFormat
import StrataSchema

/// The history journal's root, kept in a version 4 store root (Docs/FileFormat.md, "Store
/// root" and "History journal"; Architecture.md invariant 31): where the journal's tree is,
/// the next token to hand out, from which token on the journal is complete, what it weighs,
/// and the named consumers' cursors.
///
/// ```
/// history  := rootPage:u64 count:u64 nextToken:u64 horizon:u64 firstTimestamp:i64
///             lastTimestamp:i64 bytes:u64 consumerCount:u32 flags:u32
///             consumer{consumerCount}                                  ; names ascending
/// consumer := token:u64 nameLength:u16 name:byte{nameLength}           ; UTF-8, 1...255 bytes
/// ```
package struct HistoryRoot: Equatable, Sendable {
    static let fixedSize = 64
    /// More consumers than this is corruption (and refused by `setCursor`).
    package static let maximumConsumers = 1024
    /// The longest consumer name, in UTF-8 bytes.
    package static let maximumNameLength = 255
    /// Each transaction's entry is stored under `token << partBits | part`.
    package static let partBits: UInt64 = 24
    /// Tokens are below this (40 bits: a trillion transactions).
    package static let maximumToken: UInt64 = 1 << 40

    /// The journal's tree: one record per part of a transaction's entry.
    package var tree: RecordTreeRoot = .empty
    /// The token the next journaled transaction gets (tokens start at 1).
    package var nextToken: UInt64 = 1
    /// The journal holds every transaction with a token above this one: the entries of
    /// tokens up to it were deleted (retention, `deleteHistory`) or never written (a commit
    /// made with the journal off).
    package var horizon: UInt64 = 0
    /// Microseconds since 1970 of the oldest entry kept (0 when the journal is empty).
    package var firstTimestamp: Int64 = 0
    /// Microseconds since 1970 of the newest entry written (0: none yet); an entry's
    /// timestamp is never below the one before it.
    package var lastTimestamp: Int64 = 0
    /// The bytes of every entry kept (the parts' encoded sizes), for the size limit.
    package var bytes: UInt64 = 0
    /// Each named consumer's last-seen token.
    package var consumers: [String: UInt64] = [:]
    /// Whether entries of tokens up to `horizon` are still in the tree (deleted in bounded
    /// batches by later commits; never returned by reads).
    package var hasStaleEntries = false
    static let staleFlag: UInt32 = 1

    package init() {}

    /// The tree key of part `part` of `token`'s entry.
    package static func key(token: UInt64, part: UInt64) -> UInt64 { token << partBits | part }
    /// The token of a tree key.
    package static func token(ofKey key: UInt64) -> UInt64 { key >> partBits }
    /// The part number of a tree key.
    package static func part(ofKey key: UInt64) -> UInt64 { key & ((1 << partBits) - 1) }

    func append(to writer: inout ByteWriter) {
        writer.append(tree.rootPageID)
        writer.append(tree.count)
        writer.append(nextToken)
        writer.append(horizon)
        writer.append(firstTimestamp)
        writer.append(lastTimestamp)
        writer.append(bytes)
        writer.append(UInt32(consumers.count))
        writer.append(hasStaleEntries ? Self.staleFlag : 0)
        for (name, token) in consumers.sorted(by: { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) }) {
            let utf8 = Array(name.utf8)
            writer.append(token)
            writer.append(UInt16(utf8.count))
            writer.append(bytes: utf8)
        }
    }

    static func read(from reader: inout ByteReader) throws -> HistoryRoot {
        let at = reader.position
        guard reader.remaining >= fixedSize else {
            throw FormatError("history root of \(reader.remaining) bytes, at least \(fixedSize) needed", at: at)
        }
        var root = HistoryRoot()
        root.tree = RecordTreeRoot(rootPageID: try reader.read(UInt64.self, "history root page"), count: try reader.read(UInt64.self, "history count"))
        root.nextToken = try reader.read(UInt64.self, "next token")
        root.horizon = try reader.read(UInt64.self, "history horizon")
        root.firstTimestamp = try reader.read(Int64.self, "first timestamp")
        root.lastTimestamp = try reader.read(Int64.self, "last timestamp")
        root.bytes = try reader.read(UInt64.self, "history bytes")
        let count = Int(try reader.read(UInt32.self, "consumer count"))
        let flags = try reader.read(UInt32.self, "history flags")
        guard flags & ~staleFlag == 0 else { throw FormatError("unknown history flags \(flags)", at: at + 60) }
        root.hasStaleEntries = flags & staleFlag != 0
        guard (root.tree.rootPageID == 0) == (root.tree.count == 0) else {
            throw FormatError("history tree root \(root.tree.rootPageID) with \(root.tree.count) entries", at: at)
        }
        guard root.nextToken >= 1, root.nextToken <= maximumToken, root.horizon < root.nextToken else {
            throw FormatError("history tokens out of range (next \(root.nextToken), horizon \(root.horizon))", at: at + 16)
        }
        guard count <= maximumConsumers, count * 10 <= reader.remaining else {
            throw FormatError("\(count) history consumers in \(reader.remaining) bytes", at: at + 56)
        }
        var previous: [UInt8]?
        for _ in 0..<count {
            let position = reader.position
            let token = try reader.read(UInt64.self, "consumer token")
            let length = Int(try reader.read(UInt16.self, "consumer name length"))
            guard length >= 1, length <= maximumNameLength else { throw FormatError("consumer name of \(length) bytes", at: position + 8) }
            let name = try reader.readBytes(length, "consumer name")
            guard previous.map({ $0.lexicographicallyPrecedes(name) }) ?? true else {
                throw FormatError("consumer names do not ascend", at: position)
            }
            guard let string = String(validating: name, as: UTF8.self) else { throw FormatError("consumer name is not UTF-8", at: position + 10) }
            guard token < root.nextToken else { throw FormatError("consumer \(string) is at token \(token), past \(root.nextToken - 1)", at: position) }
            previous = name
            root.consumers[string] = token
        }
        return root
    }
}
