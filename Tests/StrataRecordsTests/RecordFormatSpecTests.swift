import Testing
import StrataFormat
import StrataIO
import StrataPageLog
import StrataRecords
import StrataSchema

/// Docs/FileFormat.md's record layer tables against the code and the golden record stores:
/// the store root, catalog and record versions the spec lists are the ones the decoders
/// accept, and each golden store keeps its schema catalog as the spec's "The catalog page"
/// says.
@Suite struct RecordFormatSpecTests {
    /// `Tests/`, two levels up from this file.
    static let tests = #filePath.split(separator: "/", omittingEmptySubsequences: false).dropLast(2).joined(separator: "/")

    static func specLines() throws -> [Substring] {
        let file = try POSIXFileSystem().openFile(tests + "/../Docs/FileFormat.md", create: false)
        return String(decoding: try file.read(count: Int(try file.size()), at: 0), as: UTF8.self).split(separator: "\n")
    }

    /// The versions of `payload` in the spec's "Versions" table (`| payload | version | …`).
    static func versionsTable(_ payload: String, _ lines: [Substring]) -> [Int] {
        lines.compactMap { line -> Int? in
            let cells = line.split(separator: "|").map { $0.filter { $0 != " " } }
            guard cells.count >= 2, cells[0] == payload.filter({ $0 != " " }) else { return nil }
            return Int(cells[1])
        }
    }

    /// The numbers outside parentheses in the "Record and catalog numbers" row `what`, from
    /// `after` to the next `;` (each version is named with what it adds in parentheses).
    static func numbersRow(_ what: String, after: String = "", _ lines: [Substring]) throws -> [Int] {
        let row = try #require(lines.first { $0.hasPrefix("| \(what) |") }, "no row \(what)")
        var rest = row.dropFirst(what.count + 4)
        if !after.isEmpty { rest = rest[try #require(rest.firstRange(of: after)).upperBound...] }
        var numbers: [Int] = [], digits = "", depth = 0
        func flush() {
            if let number = Int(digits) { numbers.append(number) }
            digits = ""
        }
        for character in rest {
            if character == "(" { flush(); depth += 1; continue }
            if character == ")" { depth -= 1; continue }
            if depth > 0 { continue }
            if character == ";" || character == "|" { break }
            if character.isNumber { digits.append(character) } else { flush() }
        }
        flush()
        return numbers
    }

    /// The versions among 1 ... 9 a decoder does not report as unsupported (other errors,
    /// from the minimal bytes given, are fine: the version itself was accepted).
    static func accepted(_ decode: (UInt16) throws -> Void) -> [Int] {
        (1...9).filter { version in
            do { try decode(UInt16(version)) } catch let error as FormatError { return error.unsupportedVersion == nil } catch { return true }
            return true
        }
    }

    @Test func documentedVersionsAreTheOnesTheDecodersAccept() throws {
        let lines = try Self.specLines()
        let roots = Self.accepted { version in
            var bytes = Array("SROT".utf8) + [UInt8(version & 0xFF), UInt8(version >> 8), 0, 0]
            bytes += [UInt8](repeating: 0, count: 16)
            _ = try StoreRoot.decode(bytes)
        }
        #expect(roots == Array(1...6))
        #expect(Self.versionsTable("store root", lines) == roots)
        #expect(try Self.numbersRow("store root versions", lines) == roots)
        let catalogs = Self.accepted { version in
            var bytes = Array("STRATSCH".utf8) + [UInt8(version & 0xFF), UInt8(version >> 8), 0, 0]
            bytes += [1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]
            _ = try SchemaCatalog.decode(bytes)
        }
        #expect(catalogs == [1, 2, 3])
        #expect(Self.versionsTable("schema catalog", lines) == catalogs)
        #expect(try Self.numbersRow("formats", after: "catalog format versions", lines) == catalogs)
        let records = Self.accepted { version in _ = try RecordCodec.decode([UInt8(version), 0]) }
        #expect(records == [1, 2, 3])
        #expect(Self.versionsTable("record encoding", lines) == records)
        #expect(try Self.numbersRow("formats", after: "record formats", lines) == records)
    }

    @Test func catalogPagesHoldTheCatalogVerbatim() throws {
        let fs = POSIXFileSystem()
        let fixtures = Self.tests + "/StrataTests/Fixtures"
        let names = try fs.contentsOfDirectory(fixtures)
        #expect(names.count >= 6, "\(names)")
        for name in names {
            // A follower writes nothing: the committed fixture is read in place.
            let log = try PageLog.open(directory: fixtures + "/" + name, fileSystem: fs, readOnly: true)
            defer { try? log.close() }
            let snapshot = try log.snapshot()
            let rootPage = try #require(try snapshot.read(StoreRoot.pageID), "\(name)")
            #expect(rootPage.entityID == 0 && rootPage.schemaVersion == 0, "\(name): store root page header")
            let root = try StoreRoot.decode(rootPage.bytes)
            #expect(root.catalogPageID >= 16, "\(name)")
            let page = try #require(try snapshot.read(root.catalogPageID), "\(name)")
            #expect(page.entityID == 0 && page.schemaVersion == 0, "\(name): catalog page header")
            // The payload is the catalog's bytes, all of them and nothing else.
            let catalog = try SchemaCatalog.decode(page.bytes)
            #expect(catalog.encoded() == page.bytes, "\(name)")
        }
    }
}
