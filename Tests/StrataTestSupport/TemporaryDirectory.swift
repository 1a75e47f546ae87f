#if canImport(Glibc)
import Glibc
#endif

/// Creates a fresh directory under $TMPDIR (or /tmp) for a test.
public func temporaryDirectory() throws -> String {
    let base = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
    var template = Array((base + "/strata-test-XXXXXX").utf8CString)
    guard let result = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
        struct TemporaryDirectoryError: Error {}
        throw TemporaryDirectoryError()
    }
    return String(cString: result)
}

/// Removes a directory and the files directly in it.
public func removeDirectory(_ path: String) {
    if let directory = opendir(path) {
        while let entry = readdir(directory) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { unlink(path + "/" + name) }
        }
        closedir(directory)
    }
    rmdir(path)
}
