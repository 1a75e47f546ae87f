import Foundation

/// Sizes of what is on disk, to report how many bytes a store takes.
enum FolderSize {
    /// The sum of the sizes of the regular files under `path` (recursively); 0 when it does
    /// not exist. Files that vanish while it is being walked are skipped.
    static func bytes(at path: String) -> UInt64 {
        guard let enumerator = FileManager.default.enumerator(atPath: path) else { return 0 }
        var total: UInt64 = 0
        while let relative = enumerator.nextObject() as? String {
            let full = (path as NSString).appendingPathComponent(relative)
            var info = stat()
            if lstat(full, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG {
                total += UInt64(info.st_size)
            }
        }
        return total
    }
}
