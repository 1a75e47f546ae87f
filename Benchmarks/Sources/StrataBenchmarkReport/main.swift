import BenchmarkReport
import Foundation

// StrataBenchmarkReport: the README's benchmark table and the SVG charts, generated from
// results files written by StrataBenchmarks (no outside dependency).
//
//   StrataBenchmarkReport [--results A.json[,B.json…]] [--readme README.md] [--charts DIR]
//                         [--chart-prefix P] [--check]
//
// --results   the results files, merged in order (a later file's row replaces an earlier
//             one's for the same workload, baseline and cores); without it, the files the
//             README's table names (its `<!-- results: … -->` line), relative to the README
// --readme    replace the table between <!-- benchmark-table:begin/end --> in this file
// --charts    write migration-time.svg and ratios.svg (after the prefix) into this folder
// --check     write nothing; exit 1 listing every output that differs from what the
//             results files make (the README's table, the charts)

let usage = "usage: StrataBenchmarkReport [--results A.json[,B.json...]] [--readme PATH] [--charts DIR] [--chart-prefix P] [--check]"

func main() throws -> Int32 {
    var arguments = CommandLine.arguments.dropFirst()
    var results: [String]?, readme: String?, charts: String?, prefix = "", check = false
    func value(_ flag: String) throws -> String {
        guard let next = arguments.popFirst(), !next.hasPrefix("--") else { throw ReportError.usage("\(flag) needs a value\n\(usage)") }
        return next
    }
    while let argument = arguments.popFirst() {
        switch argument {
        case "--results": results = try value(argument).split(separator: ",").map(String.init)
        case "--readme": readme = try value(argument)
        case "--charts": charts = try value(argument)
        case "--chart-prefix": prefix = try value(argument)
        case "--check": check = true
        case "--help", "-h":
            print(usage)
            return 0
        default: throw ReportError.usage("unknown argument '\(argument)'\n\(usage)")
        }
    }
    guard readme != nil || charts != nil else { throw ReportError.usage("nothing to do: give --readme and/or --charts\n\(usage)") }

    var base: String?
    if results == nil, let readme {
        results = try ReadmeTable.sources(in: try BenchmarkReport.read(readme), path: readme)
        base = (readme as NSString).deletingLastPathComponent
    }
    guard let results, !results.isEmpty else { throw ReportError.noResults("give --results, or --readme with a generated table") }
    let report = BenchmarkReport(try results.map { try ResultsDocument.load(path: $0, base: base.flatMap { $0.isEmpty ? nil : $0 }) })

    if check {
        let differences = try report.differences(readmePath: readme, chartsFolder: charts, prefix: prefix)
        for difference in differences { FileHandle.standardError.write(Data("\(difference)\n".utf8)) }
        if !differences.isEmpty {
            FileHandle.standardError.write(Data("regenerate with `make bench-report`\n".utf8))
            return 1
        }
        print("benchmark report up to date (\(results.joined(separator: ", ")))")
        return 0
    }
    try report.write(readmePath: readme, chartsFolder: charts, prefix: prefix)
    print("benchmark report written from \(results.joined(separator: ", "))")
    return 0
}

do {
    exit(try main())
} catch {
    FileHandle.standardError.write(Data("StrataBenchmarkReport: \(error)\n".utf8))
    exit(2)
}
