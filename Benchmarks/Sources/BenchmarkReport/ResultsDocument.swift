import Foundation

/// One results file: the machine it was measured on and its rows.
package struct ResultsDocument: Sendable, Equatable {
    /// The path it was read from, as given (the README names it so).
    package var path: String
    /// `machine.date`, `machine.cpu`, `machine.cores`, as written.
    package var date: String
    package var cpu: String
    package var machineCores: Int
    /// The rows in file order.
    package var rows: [ResultRow]

    /// Reads and parses the file at `path` (relative paths resolve against `base`).
    package static func load(path: String, base: String? = nil) throws -> ResultsDocument {
        let resolved = base.map { path.hasPrefix("/") ? path : ($0 as NSString).appendingPathComponent(path) } ?? path
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: resolved))
        } catch {
            throw ReportError.unreadable(path: path, reason: "\(error.localizedDescription)")
        }
        return try parse(data, path: path)
    }

    /// Parses a results file's bytes; `path` names it in errors and in the README.
    package static func parse(_ data: Data, path: String) throws -> ResultsDocument {
        let json: ReportJSON
        do {
            json = try JSONDecoder().decode(ReportJSON.self, from: data)
        } catch {
            throw ReportError.malformedResults(path: path, reason: "not JSON (\(error))")
        }
        guard case .array(let results)? = json["results"] else {
            throw ReportError.malformedResults(path: path, reason: "no \"results\" array")
        }
        let machine = json["machine"]
        return ResultsDocument(
            path: path,
            date: machine?["date"]?.string ?? "unknown date",
            cpu: machine?["cpu"]?.string ?? "unknown CPU",
            machineCores: machine?["cores"]?.number.map { Int($0) } ?? 0,
            rows: try results.enumerated().map { try ResultRow(json: $1, path: path, index: $0) })
    }
}

/// Rows of several results files as one set: a row of a later file replaces the row of an
/// earlier one for the same workload, baseline and core count (and keeps its place).
package struct MergedResults: Sendable, Equatable {
    /// A row and the index (in `documents`) of the file it came from.
    package struct Entry: Sendable, Equatable {
        package var row: ResultRow
        package var source: Int
    }

    package var documents: [ResultsDocument]
    package var entries: [Entry]

    /// Merges `documents`, later ones winning.
    package init(_ documents: [ResultsDocument]) {
        self.documents = documents
        var entries: [Entry] = []
        var position: [String: Int] = [:]
        for (source, document) in documents.enumerated() {
            for row in document.rows {
                if let index = position[row.key] {
                    entries[index] = Entry(row: row, source: source)
                } else {
                    position[row.key] = entries.count
                    entries.append(Entry(row: row, source: source))
                }
            }
        }
        self.entries = entries
    }

    /// The rows, in merged order.
    package var rows: [ResultRow] { entries.map(\.row) }

    /// The files at least one kept row for which `isIncluded` holds came from, in the order given.
    package func sources(where isIncluded: (ResultRow) -> Bool = { _ in true }) -> [ResultsDocument] {
        let used = Set(entries.filter { isIncluded($0.row) }.map(\.source))
        return documents.enumerated().filter { used.contains($0.offset) }.map(\.element)
    }

    /// "from a.json, b.json": the file names (without folders) of `sources(where:)`, for a chart.
    package func sourceLine(where isIncluded: (ResultRow) -> Bool = { _ in true }) -> String {
        "from " + sources(where: isIncluded).map { ($0.path as NSString).lastPathComponent }.joined(separator: ", ")
    }
}
