import Foundation

/// Which CPUs this process may run on, as the kernel reports it (`Cpus_allowed_list` in
/// /proc/self/status: inherited from the parent, set by `taskset`), and how the harness
/// restricts a child to N of them.
enum CPUAffinity {
    /// The allowed CPUs as the kernel lists them, e.g. "0" or "0-1"; nil when unreadable.
    static func allowedList() -> String? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        return status.split(separator: "\n")
            .first { $0.hasPrefix("Cpus_allowed_list:") }
            .map { $0.dropFirst("Cpus_allowed_list:".count).trimmingCharacters(in: .whitespaces) }
    }

    /// How many CPUs a list such as "0,2-3" names; nil when it is not such a list.
    static func count(ofList list: String) -> Int? {
        var total = 0
        for piece in list.split(separator: ",") {
            let bounds = piece.split(separator: "-").map { Int($0.trimmingCharacters(in: .whitespaces)) }
            switch bounds.count {
            case 1:
                guard bounds[0] != nil else { return nil }
                total += 1
            case 2:
                guard let low = bounds[0], let high = bounds[1], high >= low else { return nil }
                total += high - low + 1
            default:
                return nil
            }
        }
        return total
    }

    /// Throws unless this process may run on exactly `cores` CPUs (a child started with the
    /// harness's `--cores N` checks it got what was asked); returns the list.
    @discardableResult
    static func check(cores: Int) throws -> String {
        guard let list = allowedList(), let allowed = count(ofList: list) else {
            throw BenchmarkError.setupFailed("cannot read this process's allowed CPUs from /proc/self/status")
        }
        guard allowed == cores else {
            throw BenchmarkError.setupFailed("asked to run on \(cores) CPU(s), but this process may run on \(allowed) (\(list))")
        }
        return list
    }

    /// The `taskset` command that runs a program on CPUs 0...cores-1.
    static func tasksetPrefix(cores: Int) -> [String] {
        ["taskset", "-c", cores == 1 ? "0" : "0-\(cores - 1)"]
    }
}
