import Foundation

/// The machine the numbers were measured on, for the `machine` object of the results file.
struct MachineDescription {
    var cores: Int
    var memoryBytes: UInt64
    var os: String
    var cpu: String
    var swift: String
    var date: Date

    /// Describes this machine now. Parts that cannot be read are "unknown".
    static func current() -> MachineDescription {
        MachineDescription(
            cores: ProcessInfo.processInfo.activeProcessorCount,
            memoryBytes: ProcessInfo.processInfo.physicalMemory,
            os: operatingSystem(),
            cpu: processorModel(),
            swift: swiftVersion(),
            date: Date()
        )
    }

    var json: JSONValue {
        .object([
            ("cores", .int(Int64(cores))),
            ("memory_bytes", .int(Int64(clamping: memoryBytes))),
            ("os", .string(os)),
            ("cpu", .string(cpu)),
            ("swift", .string(swift)),
            ("date", .string(ISO8601DateFormatter().string(from: date))),
        ])
    }

    /// PRETTY_NAME from /etc/os-release, with the kernel's name and release (uname).
    private static func operatingSystem() -> String {
        let release = (try? String(contentsOfFile: "/etc/os-release", encoding: .utf8)) ?? ""
        let prettyName = release.split(separator: "\n")
            .first { $0.hasPrefix("PRETTY_NAME=") }
            .map { $0.dropFirst("PRETTY_NAME=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
        var names = utsname()
        let kernel = uname(&names) == 0 ? "\(field(names.sysname)) \(field(names.release))" : nil
        let parts = [prettyName, kernel].compactMap { $0 }
        return parts.isEmpty ? "unknown" : parts.joined(separator: ", ")
    }

    /// A NUL-terminated character array of `utsname` as a string.
    private static func field<T>(_ characters: T) -> String {
        withUnsafeBytes(of: characters) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    /// "model name" from /proc/cpuinfo.
    private static func processorModel() -> String {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        guard let line = cpuinfo.split(separator: "\n").first(where: { $0.hasPrefix("model name") }),
              let colon = line.firstIndex(of: ":")
        else { return "unknown" }
        return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }

    /// The first line of `swift --version` (the toolchain that built and runs the benchmarks).
    private static func swiftVersion() -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["swift", "--version"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return "unknown" }
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let firstLine = output.split(separator: "\n").first.map(String.init) ?? ""
        return process.terminationStatus == 0 && !firstLine.isEmpty ? firstLine : "unknown"
    }
}
