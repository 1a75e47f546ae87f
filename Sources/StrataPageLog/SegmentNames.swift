/// File names inside a store folder (Docs/FileFormat.md, "Store folder").
enum StoreFileNames {
    static let superblock = "superblock"
    static let lock = "LOCK"
    static let temporarySuffix = ".tmp"
    static let segmentSuffix = ".seg"

    /// `0000000000000001.seg`: 16 lowercase hex digits, so names sort like ids.
    static func segment(_ id: UInt64) -> String {
        let hex = String(id, radix: 16)
        return String(repeating: "0", count: max(0, 16 - hex.count)) + hex + segmentSuffix
    }

    /// The id of a segment file name, or nil when the name is not one.
    static func segmentID(_ name: String) -> UInt64? {
        guard name.hasSuffix(segmentSuffix), name.utf8.count == 16 + segmentSuffix.utf8.count,
              name.utf8.prefix(16).allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) })
        else { return nil }
        return UInt64(name.prefix(16), radix: 16)
    }
}
