#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import Strata
import StrataTestSupport
@testable import StrataToolCore

/// `strata backup PATH DEST` and the progress bar it draws on a terminal.
@Suite struct BackupCommandTests {
    typealias Volume = ToolTests.Volume

    /// What a command printed and returned, with standard error a terminal or not.
    static func strata(terminal: Bool, _ arguments: String...) -> ToolTests.Run {
        final class Captured: @unchecked Sendable {
            var output: [UInt8] = []
            var errors = ""
        }
        let captured = Captured()
        let output = ToolOutput(output: { captured.output += $0 }, error: { captured.errors += $0 }, errorIsTerminal: terminal)
        let status = StrataTool.run(arguments, output: output)
        return ToolTests.Run(status: status, output: String(decoding: captured.output, as: UTF8.self), errors: captured.errors)
    }

    /// A backup of a store the app holds open for writing: the app is not blocked, the backup
    /// holds what was committed, verifies, and a second backup to the same place is refused.
    @Test func backupCopiesAStoreTheAppHoldsOpen() throws {
        let folder = try temporaryDirectory(), backups = try temporaryDirectory()
        defer { removeDirectory(folder); removeDirectory(backups) }
        try ToolTests.fill(folder)
        let store = try Store(at: folder, for: [ToolTests.Writer.self, Volume.self])
        try store.write { transaction in for index in 0..<300 { _ = try transaction.insert(Volume(title: "volume \(index)", writer: nil)) } }
        let before = ToolTests.strata("dump", folder)
        let destination = backups + "/copy"
        let run = Self.strata(terminal: false, "backup", folder, destination)
        #expect(run.status == .success, "\(run.errors)")
        #expect(run.errors.isEmpty)
        #expect(run.lines.count == 1)
        #expect(run.output.hasPrefix("backed up \(folder) to \(destination): "))
        #expect(run.output.contains("bytes in ") && run.output.contains(" files; the copy verified (") && run.output.hasSuffix(" page frames)\n"))
        // The app goes on writing; the backup keeps the state it copied.
        try store.write { transaction in _ = try transaction.insert(Volume(title: "after the backup", writer: nil)) }
        #expect(ToolTests.strata("dump", destination).output == before.output)
        #expect(ToolTests.strata("verify", destination).status == .success)
        #expect(ToolTests.names(in: backups) == ["copy"])  // no copy.tmp left
        let full = Self.strata(terminal: false, "backup", "--verify=full", folder, backups + "/full")
        #expect(full.status == .success, "\(full.errors)")
        #expect(full.output.hasPrefix("backed up \(folder) to \(backups)/full: ") && full.output.contains(" pages, 306 records, "))
        #expect(ToolTests.strata("dump", backups + "/full").output.count > before.output.count)  // holds the later commit too
        let again = Self.strata(terminal: false, "backup", folder, destination)
        #expect(again.status == .storeError)
        #expect(again.errors == "strata backup: \(destination) already exists: a backup is written only to a new path, nothing was written there\n")
        #expect(ToolTests.strata("dump", destination).output == before.output)
        try store.close()
    }

    @Test func backupHelpUsageAndAMissingStore() throws {
        let help = Self.strata(terminal: false, "backup", "--help")
        #expect(help.status == .success && help.output.hasPrefix("usage: strata backup [--verify frames|full] PATH DEST\n") && help.output.contains("exit status"))
        #expect(Self.strata(terminal: false, "help", "backup").output == help.output)
        #expect(ToolTests.strata("--help").output.contains("\n  backup "))
        let missing = Self.strata(terminal: false, "backup", "/tmp/somewhere")
        #expect(missing.status == .usage && missing.errors.hasPrefix("strata backup: missing DEST\nusage: strata backup [--verify frames|full] PATH DEST\n"))
        let folder = try temporaryDirectory()
        defer { removeDirectory(folder) }
        let level = Self.strata(terminal: false, "backup", "--verify", "most", folder, folder + "/copy")
        #expect(level.status == .usage && level.errors.hasPrefix("strata backup: --verify must be frames or full, not most\n"))
        let absent = Self.strata(terminal: false, "backup", folder + "/absent", folder + "/copy")
        #expect(absent.status == .storeError)
        #expect(absent.errors == "strata backup: there is no store at \(folder)/absent\n")
        #expect(ToolTests.names(in: folder).isEmpty)
    }

    /// On a terminal, the copy's progress is one bar redrawn in place up to 100%, then a line
    /// about the verification; piped, standard error stays empty.
    @Test func theProgressBarIsDrawnOnlyOnATerminal() throws {
        let folder = try temporaryDirectory(), backups = try temporaryDirectory()
        defer { removeDirectory(folder); removeDirectory(backups) }
        try ToolTests.fill(folder)
        let run = Self.strata(terminal: true, "backup", folder, backups + "/copy")
        #expect(run.status == .success, "\(run.errors)")
        let drawings = run.errors.split(separator: "\r", omittingEmptySubsequences: true)
        #expect(drawings.count >= 2)
        #expect(drawings.allSatisfy { $0.hasPrefix("copying [") })
        #expect(drawings.last?.hasPrefix("copying [##############################] 100%  ") == true)
        #expect(run.errors.hasSuffix("\nverifying the copy…\n"))
        let piped = Self.strata(terminal: false, "backup", folder, backups + "/piped")
        #expect(piped.status == .success && piped.errors.isEmpty)
    }

    @Test func aProgressBarRedrawsOnlyWhenItsPercentageChanges() {
        final class Captured: @unchecked Sendable { var errors = "" }
        for terminal in [true, false] {
            let captured = Captured()
            let output = ToolOutput(output: { _ in }, error: { captured.errors += $0 }, errorIsTerminal: terminal)
            let bar = ProgressBar(total: 3 << 20, label: "working", unit: .bytes, output: output)
            for done in stride(from: UInt64(0), through: 3 << 20, by: 1 << 10) { bar.update(done: done) }
            bar.finish()
            bar.update(done: 0)
            guard terminal else {
                #expect(captured.errors.isEmpty)
                continue
            }
            let drawings = captured.errors.dropLast().split(separator: "\r").map(String.init)
            #expect(drawings.count == 101)  // 0% … 100%, once each
            #expect(drawings.first == "working [..............................]   0%  0.0 MiB of 3.0 MiB")
            #expect(drawings[50] == "working [###############...............]  50%  1.5 MiB of 3.0 MiB")
            #expect(drawings.last == "working [##############################] 100%  3.0 MiB of 3.0 MiB")
            #expect(captured.errors.hasSuffix("\n") && captured.errors.filter { $0 == "\n" }.count == 1)
        }
        #expect(ProgressBar.percent(done: 0, total: 0) == 100)
        #expect(ProgressBar.mebibytes(1_572_864) == "1.5 MiB")
    }
}
