import Foundation
import Synchronization

/// The peak memory of this process, so each workload process can report what it used. Linux
/// only; other systems report 0.
///
/// Two peaks: `VmHWM`, the kernel's high-water mark of resident memory, which also counts the
/// pages of memory-mapped files the process touched (a store read through a read-only map,
/// Strata's or SQLite's: page cache the system can drop, not the process's own); and the peak of
/// *anonymous* resident memory (heap, stacks, caches the process allocated — what an iOS
/// app's memory footprint counts), which the kernel keeps no high-water mark of: a thread
/// started by `startSampling()` samples it (`/proc/self/statm`: resident − file-backed) every
/// 5 ms (a peak shorter than that can be missed), and `anonymousPeakBytes()` adds a sample
/// taken when asked.
enum PeakMemory {
    /// The highest anonymous resident memory sampled so far.
    private static let sampledAnonymousPeak = Atomic<UInt64>(0)

    /// Starts the sampling thread (once per process; later calls do nothing).
    static func startSampling() {
        guard !samplingStarted.exchange(true, ordering: .relaxed) else { return }
        let thread = Thread {
            while true {
                noteAnonymousSample()
                usleep(5_000)
            }
        }
        thread.stackSize = 64 << 10
        thread.start()
    }
    private static let samplingStarted = Atomic<Bool>(false)

    /// The peak anonymous resident memory of this process: the highest sample, or now.
    static func anonymousPeakBytes() -> UInt64 {
        noteAnonymousSample()
        return sampledAnonymousPeak.load(ordering: .relaxed)
    }

    private static func noteAnonymousSample() {
        let now = currentAnonymousBytes()
        var peak = sampledAnonymousPeak.load(ordering: .relaxed)
        while now > peak {
            let (exchanged, original) = sampledAnonymousPeak.compareExchange(expected: peak, desired: now, ordering: .relaxed)
            if exchanged { break }
            peak = original
        }
    }

    /// Resident memory not backed by a file, now: `/proc/self/statm`'s resident pages minus its
    /// shared (file-backed and shared-memory) ones. 0 when it cannot be read.
    static func currentAnonymousBytes() -> UInt64 {
        let descriptor = open("/proc/self/statm", O_RDONLY)
        guard descriptor >= 0 else { return 0 }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return 0 }
        let fields = buffer[0..<count].split(separator: UInt8(ascii: " ")).prefix(3).compactMap { UInt64(String(decoding: $0, as: UTF8.self)) }
        guard fields.count == 3, fields[1] >= fields[2] else { return 0 }
        return (fields[1] - fields[2]) * UInt64(sysconf(Int32(_SC_PAGESIZE)))
    }

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
