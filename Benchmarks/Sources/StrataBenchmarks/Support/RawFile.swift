import Foundation

/// A plain file written with `pwrite` and synced with `fdatasync`: the "copy" baseline, what
/// the machine does with the same bytes and no storage engine at all.
///
/// Not thread-safe; one owner at a time.
final class RawFile {
    let path: String
    private var descriptor: Int32

    /// Opens `path` for reading and writing; `truncate` creates it or empties it first.
    init(path: String, truncate: Bool) throws {
        let flags = O_RDWR | O_CLOEXEC | (truncate ? O_CREAT | O_TRUNC : 0)
        descriptor = open(path, flags, 0o644)
        self.path = path
        guard descriptor >= 0 else { throw BenchmarkError.system(call: "open", path: path, errno: errno) }
    }

    deinit {
        if descriptor >= 0 { _ = Glibc.close(descriptor) }
    }

    /// Writes all of `bytes` at `offset` (pwrite, repeated after a short write or EINTR).
    func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        guard let base = bytes.baseAddress else { return }
        var done = 0
        while done < bytes.count {
            let written = pwrite(descriptor, base + done, bytes.count - done, off_t(offset) + off_t(done))
            if written < 0 {
                if errno == EINTR { continue }
                throw BenchmarkError.system(call: "pwrite", path: path, errno: errno)
            }
            done += written
        }
    }

    /// Reads exactly `count` bytes at `offset`; fewer only when the file ends first.
    func read(count: Int, at offset: UInt64) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let got = bytes.withUnsafeMutableBytes { buffer -> Int in
                guard let base = buffer.baseAddress else { return 0 }
                return pread(descriptor, base + done, count - done, off_t(offset) + off_t(done))
            }
            if got < 0 {
                if errno == EINTR { continue }
                throw BenchmarkError.system(call: "pread", path: path, errno: errno)
            }
            if got == 0 { break }
            done += got
        }
        return Array(bytes.prefix(done))
    }

    /// Reads up to `buffer.count` bytes at `offset` into `buffer` (one pread, repeated after
    /// EINTR); 0 at the end of the file.
    func read(into buffer: inout [UInt8], at offset: UInt64) throws -> Int {
        while true {
            let got = buffer.withUnsafeMutableBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return pread(descriptor, base, raw.count, off_t(offset))
            }
            if got >= 0 { return got }
            if errno != EINTR { throw BenchmarkError.system(call: "pread", path: path, errno: errno) }
        }
    }

    /// Makes the written bytes durable (fdatasync).
    func sync() throws {
        guard fdatasync(descriptor) == 0 else { throw BenchmarkError.system(call: "fdatasync", path: path, errno: errno) }
    }

    /// Closes the file; later calls fail.
    func close() throws {
        let result = Glibc.close(descriptor)
        descriptor = -1
        guard result == 0 else { throw BenchmarkError.system(call: "close", path: path, errno: errno) }
    }
}
