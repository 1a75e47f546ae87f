#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Every public declaration of the library has a `///` comment of its own (the Standards'
/// rule): the sources are read and each line declaring something `public` or `open` must
/// follow a doc comment (attributes between them allowed). Extensions are exempt (their
/// members are checked).
@Suite struct PublicDocumentationTests {
    /// `Sources/`, three levels up from this file (`Tests/StrataTests/…`).
    static let sources = #filePath.split(separator: "/", omittingEmptySubsequences: false).dropLast(3).joined(separator: "/") + "/Sources"

    @Test func everyPublicDeclarationIsDocumented() throws {
        let files = Self.swiftFiles(under: Self.sources)
        #expect(files.count > 50, "read \(files.count) source files under \(Self.sources)")
        var undocumented: [String] = []
        var declarations = 0
        for file in files {
            let text = try String(contentsOfFile: file, encoding: .utf8)
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
                String(line.drop { $0 == " " || $0 == "\t" })
            }
            for (index, line) in lines.enumerated() where Self.declaresPublic(line) {
                declarations += 1
                var previous = index - 1
                while previous >= 0 && lines[previous].hasPrefix("@") { previous -= 1 }
                if previous < 0 || !lines[previous].hasPrefix("///") {
                    undocumented.append("\(file.dropFirst(Self.sources.count + 1)):\(index + 1): \(line.prefix(90))")
                }
            }
        }
        #expect(declarations > 300, "found \(declarations) public declarations")
        #expect(undocumented.isEmpty, "public declarations without a doc comment:\n\(undocumented.joined(separator: "\n"))")
    }

    /// Every `.swift` file under `directory`, recursively.
    static func swiftFiles(under directory: String) -> [String] {
        var files: [String] = []
        guard let handle = opendir(directory) else { return files }
        defer { closedir(handle) }
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard name != ".", name != ".." else { continue }
            let path = directory + "/" + name
            if name.hasSuffix(".swift") { files.append(path) } else if !name.contains(".") { files += swiftFiles(under: path) }
        }
        return files
    }

    /// Whether a trimmed source line declares something public or open (not an extension, an
    /// import, or a `public` inside a comment).
    static func declaresPublic(_ line: String) -> Bool {
        guard !line.hasPrefix("//") else { return false }
        var rest = Substring(line)
        while rest.hasPrefix("@") {  // attributes on the same line: @discardableResult public func …
            guard let space = rest.firstIndex(of: " ") else { return false }
            rest = rest[rest.index(after: space)...].drop { $0 == " " }
        }
        guard rest.hasPrefix("public ") || rest.hasPrefix("open ") else { return false }
        return !rest.contains("extension ") && !rest.hasPrefix("public import ")
    }
}
