#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing

/// The public surface is declared in one place (Docs/Architecture.md, "Layers"): every public
/// type the layers under the facade define is re-exported by name in
/// `Sources/Strata/PublicAPI.swift` (a scoped `@_exported import`, or a `public typealias`),
/// that file re-exports nothing else, and no source re-exports a whole module.
@Suite struct PublicSurfaceTests {
    static let sources = PublicDocumentationTests.sources
    /// The targets under the facade whose public types reach the API.
    static let lowerTargets = ["StrataIO", "StrataFormat", "StrataPageLog", "StrataSchema", "StrataRecords", "StrataHistory", "StrataMigration"]

    /// The public top-level types of `target`: "Module.Name".
    static func publicTypes(of target: String) throws -> Set<String> {
        var names: Set<String> = []
        for file in PublicDocumentationTests.swiftFiles(under: sources + "/" + target) {
            for line in try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n") {
                guard line.hasPrefix("public ") else { continue }  // top level: no indentation
                let words = line.split(separator: " ")
                guard words.count >= 3 else { continue }
                let kind = words[1] == "final" ? words.dropFirst(2).first : words[1]
                guard let kind, ["struct", "enum", "class", "protocol", "typealias"].contains(kind) else { continue }
                let declared = words[1] == "final" ? words[3] : words[2]
                let name = declared.prefix { $0.isLetter || $0.isNumber || $0 == "_" }
                names.insert("\(target).\(name)")
            }
        }
        return names
    }

    @Test func publicAPIReexportsEveryPublicTypeOfTheLowerLayersByName() throws {
        var lower: Set<String> = []
        for target in Self.lowerTargets { lower.formUnion(try Self.publicTypes(of: target)) }
        #expect(lower.count > 30, "found \(lower.count) public types under the facade")
        let api = try String(contentsOfFile: Self.sources + "/Strata/PublicAPI.swift", encoding: .utf8)
        var exported: Set<String> = []
        var aliased: Set<String> = []
        for line in api.split(separator: "\n") {
            let words = line.split(separator: " ")
            if words.count == 4, words[0] == "@_exported", words[1] == "import" { exported.insert(String(words[3])) }
            if words.count >= 5, words[0] == "public", words[1] == "typealias", words[3] == "=" { aliased.insert(String(words[4])) }
        }
        let missing = lower.subtracting(exported).subtracting(aliased).sorted()
        #expect(missing.isEmpty, "public types of lower layers not re-exported in PublicAPI.swift: \(missing)")
        let unknown = exported.subtracting(lower).sorted()
        #expect(unknown.isEmpty, "PublicAPI.swift re-exports what no lower layer declares public: \(unknown)")
    }

    @Test func noSourceReexportsAWholeModule() throws {
        var whole: [String] = []
        for file in PublicDocumentationTests.swiftFiles(under: Self.sources) {
            for (index, line) in try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let words = line.split(separator: " ")
                if words.count == 3, words[0] == "@_exported", words[1] == "import" {
                    whole.append("\(file.dropFirst(Self.sources.count + 1)):\(index + 1): \(line)")
                }
            }
        }
        #expect(whole.isEmpty, "whole modules re-exported (declare each type in PublicAPI.swift instead):\n\(whole.joined(separator: "\n"))")
    }
}
