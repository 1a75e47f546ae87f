#if canImport(Glibc)
import Glibc
#endif

/// The names (not paths) of the entries of the directory at `path`, `.` and `..` left out, in
/// no particular order; empty when it cannot be read.
public func directoryEntries(_ path: String) -> [String] {
    guard let directory = opendir(path) else { return [] }
    defer { closedir(directory) }
    var names: [String] = []
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if name != "." && name != ".." { names.append(name) }
    }
    return names
}

/// The size in bytes of the file at `path` (0 when it does not exist).
public func fileSize(_ path: String) -> UInt64 {
    var status = stat()
    return stat(path, &status) == 0 ? UInt64(status.st_size) : 0
}

/// Flips the bits of the byte at `position` of the file at `path` (flipping it again restores it).
public func flipByte(inFileAt path: String, at position: Int) {
    guard let file = fopen(path, "r+b") else { return }
    defer { fclose(file) }
    fseek(file, position, SEEK_SET)
    let byte = fgetc(file)
    fseek(file, position, SEEK_SET)
    fputc(Int32(UInt8(truncatingIfNeeded: byte) ^ 0x5A), file)
}

/// Copies every file directly in the directory `source` into the existing directory `destination`.
public func copyFiles(from source: String, to destination: String) {
    for name in directoryEntries(source) {
        guard let input = fopen(source + "/" + name, "rb") else { continue }
        defer { fclose(input) }
        guard let output = fopen(destination + "/" + name, "wb") else { continue }
        defer { fclose(output) }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = fread(&buffer, 1, buffer.count, input)
            if count == 0 { break }
            fwrite(buffer, 1, count, output)
        }
    }
}
