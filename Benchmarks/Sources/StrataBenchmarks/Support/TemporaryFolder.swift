import Foundation

/// A uniquely named folder (mkdtemp) that holds the stores of one benchmark run; it is
/// removed by `remove()`.
struct TemporaryFolder: Sendable {
    let path: String

    /// Creates `<parent>/strata-bench.XXXXXX`. `parent` defaults to `$TMPDIR`, else `/tmp`.
    init(parent: String? = nil) throws {
        let base = parent ?? ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array((base.hasSuffix("/") ? base : base + "/").utf8CString.dropLast())
        template.append(contentsOf: Array("strata-bench.XXXXXX".utf8CString))
        let created = template.withUnsafeMutableBufferPointer { buffer -> String? in
            guard let base = buffer.baseAddress, mkdtemp(base) != nil else { return nil }
            return String(cString: base)
        }
        guard let created else { throw BenchmarkError.system(call: "mkdtemp", path: base, errno: errno) }
        path = created
    }

    /// Creates (if needed) a folder inside this one and returns its path.
    func subfolder(_ name: String) throws -> String {
        let subpath = (path as NSString).appendingPathComponent(name)
        try FileManager.default.createDirectory(atPath: subpath, withIntermediateDirectories: true)
        return subpath
    }

    /// Removes the folder and everything in it.
    func remove() throws {
        try FileManager.default.removeItem(atPath: path)
    }
}
