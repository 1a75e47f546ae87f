#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import StrataIO

/// Docs/Architecture.md's invariants stay a reference: numbered in the order the document
/// states them, each with a row in "Where each invariant is tested" naming suites and tests
/// that exist, and every "invariant N" cited in the sources, tests and docs is one of them.
@Suite struct ArchitectureDocumentTests {
    /// The repository, three levels up from this file (`Tests/StrataTests/…`).
    static let root = #filePath.split(separator: "/", omittingEmptySubsequences: false).dropLast(3).joined(separator: "/")
    static let fs = POSIXFileSystem()

    static func text(_ path: String) throws -> String {
        let file = try fs.openFile(path, create: false)
        return String(decoding: try file.read(count: Int(try file.size()), at: 0), as: UTF8.self)
    }

    /// Every file under `directory` whose name ends with one of `suffixes`.
    static func files(under directory: String, _ suffixes: [String]) throws -> [String] {
        var found: [String] = []
        for name in try fs.contentsOfDirectory(directory) {
            let path = directory + "/" + name
            if suffixes.contains(where: name.hasSuffix) {
                found.append(path)
            } else if !name.contains("."), (try? fs.contentsOfDirectory(path)) != nil {
                found += try files(under: path, suffixes)
            }
        }
        return found
    }

    /// The numbers of the invariants stated in the document (`N. **Title.**` items), in order.
    static func statedInvariants(_ document: String) -> [Int] {
        document.split(separator: "\n").compactMap { line -> Int? in
            guard let dot = line.firstIndex(of: "."), line[dot...].hasPrefix(". **") else { return nil }
            return Int(line[..<dot])
        }
    }

    /// The section of `document` from `heading` to the next `## ` heading.
    static func section(_ heading: String, of document: String) throws -> Substring {
        let start = try #require(document.firstRange(of: "\n" + heading + "\n"), "no \(heading)")
        let rest = document[start.upperBound...]
        return rest[..<(rest.firstRange(of: "\n## ")?.lowerBound ?? rest.endIndex)]
    }

    @Test func invariantsAreNumberedInOrderAndEachHasTests() throws {
        let document = try Self.text(Self.root + "/Docs/Architecture.md")
        let stated = Self.statedInvariants(document)
        #expect(stated.count >= 30, "found \(stated.count) invariants")
        #expect(stated == Array(1...max(stated.count, 1)), "invariants in document order: \(stated)")
        let table = try Self.section("## Where each invariant is tested", of: document)
        let rows = table.split(separator: "\n").compactMap { line -> Int? in
            guard line.hasPrefix("| ") else { return nil }
            return Int(line.dropFirst(2).prefix { $0 != " " && $0 != "|" })
        }
        #expect(rows == stated, "the table's rows: \(rows)")
    }

    @Test func theTestsTheTableNamesExist() throws {
        let document = try Self.text(Self.root + "/Docs/Architecture.md")
        let table = try Self.section("## Where each invariant is tested", of: document)
        var suites: Set<Substring> = [], functions: Set<Substring> = []
        for file in try Self.files(under: Self.root + "/Tests", [".swift"]) {
            for line in try Self.text(file).split(separator: "\n") {
                let trimmed = line.drop { $0 == " " }
                for keyword in ["struct ", "final class ", "func "] {
                    guard let range = trimmed.firstRange(of: keyword) else { continue }
                    let name = trimmed[range.upperBound...].prefix { $0.isLetter || $0.isNumber || $0 == "_" }
                    if keyword == "func " { functions.insert(name) } else { suites.insert(name) }
                }
            }
        }
        #expect(suites.count > 80 && functions.count > 500, "\(suites.count) suites, \(functions.count) functions")
        var named = 0, missing: [String] = []
        for piece in table.split(separator: "`").enumerated() where piece.offset % 2 == 1 {
            let token = piece.element
            // `Suite`, `Suite.test` or `.test` (another test of the suite named before it).
            let parts = token.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count <= 2, parts.allSatisfy({ $0.allSatisfy { $0.isLetter || $0.isNumber } }) else { continue }
            let suite = parts[0], test = parts.count == 2 ? parts[1] : nil
            guard suite.hasSuffix("Tests") || (suite.isEmpty && test != nil) else { continue }
            named += 1
            if !suite.isEmpty && !suites.contains(suite) { missing.append(String(token)) }
            if let test, !functions.contains(test) { missing.append(String(token)) }
        }
        #expect(named > 60, "found \(named) test names in the table")
        #expect(missing.isEmpty, "named in Architecture.md but not in Tests/: \(missing)")
    }

    @Test func everyCitedInvariantExists() throws {
        let stated = Self.statedInvariants(try Self.text(Self.root + "/Docs/Architecture.md"))
        var cited = 0, unknown: [String] = []
        let files = try Self.files(under: Self.root + "/Sources", [".swift"]) + Self.files(under: Self.root + "/Tests", [".swift"])
            + Self.files(under: Self.root + "/Docs", [".md"])
        for file in files {
            let text = try Self.text(file)
            var rest = text[...]
            while let range = rest.firstRange(of: "nvariant") {
                let before = rest[..<range.lowerBound].suffix(9)
                rest = rest[range.upperBound...]
                if before.hasSuffix("catalog i") || before.hasSuffix("catalog I") { continue }  // FileFormat.md's catalog invariants
                let numbers = rest.drop { $0 == "s" || $0 == " " || $0 == "\n" || $0 == "/" }.prefix { $0.isNumber }
                guard let number = Int(numbers) else { continue }
                cited += 1
                if !stated.contains(number) { unknown.append("\(file.dropFirst(Self.root.count + 1)): invariant \(number)") }
            }
        }
        #expect(cited > 100, "found \(cited) citations")
        #expect(unknown.isEmpty, "\(unknown)")
    }
}
