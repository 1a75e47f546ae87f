import Foundation

/// The peak resident memory of this process (the kernel's high-water mark), so each workload
/// process can report what it used. Linux only; other systems report 0.
enum PeakMemory {
    /// `VmHWM` from `/proc/self/status`, in bytes; 0 when it cannot be read.
    static func currentProcessBytes() -> UInt64 {
        field("VmHWM")
    }

    /// The resident memory of this process now (`VmRSS`), in bytes; 0 when it cannot be read.
    static func currentResidentBytes() -> UInt64 {
        field("VmRSS")
    }

    /// A memory field of `/proc/self/status` ("VmHWM:	   12345 kB"), in bytes; 0 when it
    /// cannot be read.
    private static func field(_ name: String) -> UInt64 {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix(name + ":") {
            let fields = line.dropFirst(name.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard let amount = fields.first.flatMap({ UInt64($0) }) else { return 0 }
            return fields.dropFirst().first == "kB" ? amount * 1024 : amount
        }
        return 0
    }
}
