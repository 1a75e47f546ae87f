#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import StrataIO

@Suite struct ProcessorsTests {
    /// On Linux, the processors the process may run on are those its affinity allows, as the
    /// kernel lists them in /proc/self/status (`taskset -c 0 swift test` gives 1), not every
    /// processor online; elsewhere at least one.
    @Test func usableProcessorsFollowTheAffinity() throws {
        #if os(Linux)
        let status = try String(contentsOf: URL(fileURLWithPath: "/proc/self/status"), encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("Cpus_allowed_list:") })
        // "0-1,4" → 3 processors.
        let list = String(line.dropFirst("Cpus_allowed_list:".count).filter { $0 != " " && $0 != "\t" })
        var allowed = 0
        for part in list.split(separator: ",") {
            let bounds = part.split(separator: "-").compactMap { Int($0) }
            allowed += bounds.count == 2 ? bounds[1] - bounds[0] + 1 : 1
        }
        print("usableProcessorsFollowTheAffinity: \(list) → \(allowed), Processors.usable \(Processors.usable)")
        #expect(allowed >= 1)
        #expect(Processors.usable == allowed)
        #else
        #expect(Processors.usable >= 1)
        #endif
    }
}
