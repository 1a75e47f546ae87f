/// Why a report could not be made or checked. Each case names the file it is about.
package enum ReportError: Error, Equatable, CustomStringConvertible {
    /// A file could not be read.
    case unreadable(path: String, reason: String)
    /// A results file is not JSON of the harness's shape (`{"machine": …, "results": [...]}`).
    case malformedResults(path: String, reason: String)
    /// The README has no `<!-- benchmark-table:begin -->` … `<!-- benchmark-table:end -->` pair,
    /// or has them out of order or more than once.
    case markersMissing(path: String, reason: String)
    /// No results file was given and the README's table names none.
    case noResults(String)
    /// The command line is wrong.
    case usage(String)

    /// What went wrong, naming the file.
    package var description: String {
        switch self {
        case .unreadable(let path, let reason): "cannot read \(path): \(reason)"
        case .malformedResults(let path, let reason): "\(path) is not a results file: \(reason)"
        case .markersMissing(let path, let reason): "\(path): \(reason)"
        case .noResults(let reason): "no results file: \(reason)"
        case .usage(let reason): reason
        }
    }
}
