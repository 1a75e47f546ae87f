#if canImport(Glibc)
import Glibc
#endif

/// Runs one test of this test binary in a child process — how tests check what another
/// process sees (a widget opening the app's store). The child gets `environment` added to
/// its own; the test it runs should do nothing unless that environment is set. Returns the
/// child's exit status (0: its tests passed).
public func runChildTest(_ filter: String, environment: [String: String]) throws -> Int32 {
    let pid = try spawnChildTest(filter, environment: environment)
    return waitForChild(pid)
}

/// Why a child test could not be started.
public struct SpawnError: Error, CustomStringConvertible {
    /// The errno `readlink` or `posix_spawn` gave.
    public let code: Int32
    public var description: String { "posix_spawn failed: \(code)" }
}

/// Starts one test of this test binary in a child process, as `runChildTest` does, and
/// returns at once with its process id (for `waitForChild`, `childExitStatus` or
/// `killChild`).
public func spawnChildTest(_ filter: String, environment: [String: String]) throws -> pid_t {
    var executable = [CChar](repeating: 0, count: 4096)
    let length = readlink("/proc/self/exe", &executable, executable.count - 1)
    guard length > 0 else { throw SpawnError(code: errno) }
    let path = String(decoding: executable[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    let arguments = [path, "--testing-library", "swift-testing", "--filter", filter]
    var variables: [String] = []
    var index = 0
    while let entry = environ[index] {
        variables.append(String(cString: entry))
        index += 1
    }
    variables += environment.map { "\($0.key)=\($0.value)" }
    let argv = arguments.map { strdup($0) } + [nil]
    let envp = variables.map { strdup($0) } + [nil]
    defer {
        argv.forEach { free($0) }
        envp.forEach { free($0) }
    }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, path, nil, nil, argv, envp)
    guard spawned == 0 else { throw SpawnError(code: spawned) }
    return pid
}

/// Waits for the child `pid` to exit; its exit status (0: its tests passed; 128 + the signal
/// when a signal ended it).
public func waitForChild(_ pid: pid_t) -> Int32 {
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    return exitStatus(status)
}

/// The child's exit status if it has ended (it is then reaped), nil while it runs.
public func childExitStatus(_ pid: pid_t) -> Int32? {
    var status: Int32 = 0
    let reaped = waitpid(pid, &status, WNOHANG)
    return reaped == pid ? exitStatus(status) : nil
}

/// Kills the child `pid` with SIGKILL — a crash of the process, the kernel keeping what it
/// wrote — and waits for it; true when the signal ended it (false: it had exited before).
public func killChild(_ pid: pid_t) -> Bool {
    kill(pid, SIGKILL)
    return waitForChild(pid) == 128 + SIGKILL
}

private func exitStatus(_ status: Int32) -> Int32 {
    let signal = status & 0x7f
    return signal == 0 ? (status >> 8) & 0xff : 128 + signal
}

/// Reads a small text file (what a child process reported), or nil.
public func readTextFile(_ path: String) -> String? {
    guard let file = fopen(path, "r") else { return nil }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = fread(&buffer, 1, buffer.count, file)
        if count <= 0 { break }
        bytes += buffer[0..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// Writes a small text file (what a child process reports).
public func writeTextFile(_ path: String, _ text: String) {
    guard let file = fopen(path, "w") else { return }
    defer { fclose(file) }
    var bytes = Array(text.utf8)
    fwrite(&bytes, 1, bytes.count, file)
}

/// Runs a command (looked up in PATH) with its output discarded; its exit status, or nil when
/// it could not be started.
public func runCommand(_ arguments: [String]) -> Int32? {
    runCommand(arguments, output: "/dev/null", errors: "/dev/null")
}

/// Runs a command (looked up in PATH) and returns its exit status with what it wrote to its
/// standard output and error, or nil when it could not be started. The output goes through
/// files in `scratch` (a folder the caller owns).
public func runCommandCapturing(_ arguments: [String], scratch: String) -> (status: Int32, output: String, errors: String)? {
    let outputPath = scratch + "/command-output", errorPath = scratch + "/command-errors"
    defer {
        unlink(outputPath)
        unlink(errorPath)
    }
    guard let status = runCommand(arguments, output: outputPath, errors: errorPath) else { return nil }
    return (status, readTextFile(outputPath) ?? "", readTextFile(errorPath) ?? "")
}

/// Runs a command (looked up in PATH) with its standard output and error written to the files
/// at `output` and `errors` (created or emptied); its exit status, or nil when it could not start.
private func runCommand(_ arguments: [String], output: String, errors: String) -> Int32? {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    posix_spawn_file_actions_addopen(&actions, 2, errors, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    let argv = arguments.map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    guard posix_spawnp(&pid, arguments[0], &actions, nil, argv, environ) == 0 else { return nil }
    return waitForChild(pid)
}
