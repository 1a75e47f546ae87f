import Synchronization

// The in-memory file system's test controls: fault injection, access rules, a capacity, crash
// simulation, and direct access to files' bytes.

extension MemoryFileSystem {
    /// Installs (or removes, with nil) a closure consulted before every mutating operation.
    package func setFaultInjector(_ injector: (@Sendable (Operation) -> Fault?)?) {
        state.withLock { $0.injector = injector }
    }

    /// Installs (or removes, with nil) a closure consulted whenever a path is opened, listed,
    /// looked up, created, renamed, removed or locked, with how the call uses it: an `errno`
    /// it returns fails the call as the real file system would with that code (nothing is
    /// applied; a path refused for reading does not exist for `fileExists`, as `stat` fails).
    package func setAccessRule(_ rule: (@Sendable (_ path: String, _ access: Access) -> Int32?)?) {
        state.withLock { $0.accessRule = rule }
    }

    /// Makes the device hold at most `bytes` bytes of file contents (nil: unlimited, the
    /// default). Files are counted at their current size, once each however many names they
    /// have; a file removed while open no longer counts.
    package func setCapacity(_ bytes: Int?) {
        state.withLock { $0.capacity = bytes }
    }

    /// Bytes of file contents held now (what `setCapacity` limits).
    package var usedBytes: Int { state.withLock { Self.usedBytes($0) } }

    /// The number of mutating operations and of syncs performed so far.
    package var counters: (operations: Int, syncs: Int) {
        state.withLock { ($0.operationCount, $0.syncCount) }
    }

    /// Bytes returned by reads so far (tests check that opening reads no data pages).
    package var bytesRead: Int { state.withLock { $0.bytesRead } }

    /// Whether power was cut by a fault injector and `simulateCrash` not yet called.
    package var isCrashed: Bool { state.withLock { $0.crashed } }

    /// A fresh file system on which `workload` runs with power cut at its `point`-th sync
    /// (of a file or a directory), then rebooted as `simulateCrash(mode:using:)` does: what a
    /// restart finds, and what the workload returned. The crash-point tests of every layer
    /// enumerate their sync points through this.
    package static func runUntilPowerCut<Outcome, R: RandomNumberGenerator>(
        atSync point: Int, mode: CrashMode, using random: inout R, _ workload: (MemoryFileSystem) throws -> Outcome
    ) rethrows -> (fileSystem: MemoryFileSystem, outcome: Outcome) {
        let fileSystem = MemoryFileSystem()
        fileSystem.setFaultInjector { ($0.kind == .sync || $0.kind == .syncDirectory) && $0.syncIndex == point ? .crash : nil }
        let outcome = try workload(fileSystem)
        fileSystem.setFaultInjector(nil)
        fileSystem.simulateCrash(mode: mode, using: &random)
        return (fileSystem, outcome)
    }

    /// Simulates a power loss and reboot: unsynced state is dropped, kept or torn according to
    /// `mode` and `random`; open files become unusable (every call on them fails); locks are
    /// released. The file system can then be used again, as after a reboot.
    package func simulateCrash<R: RandomNumberGenerator>(mode: CrashMode, using random: inout R) {
        state.withLock { state in
            // Directory: a prefix of the pending operations survives.
            let keptOperations: Int
            switch mode {
            case .dropAll: keptOperations = 0
            case .keepAll: keptOperations = state.pendingDirectoryOperations.count
            case .tear: keptOperations = Int.random(in: 0...state.pendingDirectoryOperations.count, using: &random)
            }
            var entries = state.durableEntries
            for operation in state.pendingDirectoryOperations.prefix(keptOperations) {
                switch operation {
                case .link(let name, let inode): entries[name] = inode
                case .unlink(let name): entries[name] = nil
                }
            }
            // Contents: every surviving inode gets its durable bytes plus the surviving writes.
            var seen = Set<ObjectIdentifier>()
            for inode in entries.values where seen.insert(ObjectIdentifier(inode)).inserted {
                var bytes = inode.durable
                for write in inode.pending {
                    switch write {
                    case .truncate(let size):
                        let keep: Bool
                        switch mode {
                        case .dropAll: keep = false
                        case .keepAll: keep = true
                        case .tear: keep = Bool.random(using: &random)
                        }
                        if keep { Self.resize(&bytes, to: size) }
                    case .write(let offset, let data):
                        switch mode {
                        case .dropAll: break
                        case .keepAll: Self.apply(&bytes, offset: offset, data: data[...])
                        case .tear:
                            switch Int.random(in: 0..<3, using: &random) {
                            case 0: break
                            case 1: Self.apply(&bytes, offset: offset, data: data[...])
                            default:
                                // Torn: each 512-byte sector (aligned to the file) survives or not.
                                var start = offset
                                let end = offset + data.count
                                while start < end {
                                    let sectorEnd = min(end, (start / 512 + 1) * 512)
                                    if Bool.random(using: &random) {
                                        Self.apply(&bytes, offset: start, data: data[(start - offset)..<(sectorEnd - offset)])
                                    }
                                    start = sectorEnd
                                }
                            }
                        }
                    }
                }
                inode.durable = bytes
                inode.current = bytes
                inode.pending = []
            }
            state.durableEntries = entries
            state.entries = entries
            state.pendingDirectoryOperations = []
            state.locks = []
            state.crashed = false
            state.generation += 1
        }
    }

    /// The current (not necessarily durable) bytes of a file, for tests that corrupt stores.
    package func contents(of path: String) -> [UInt8]? {
        state.withLock { $0.entries[path]?.current }
    }

    /// Replaces the bytes of a file and makes them durable at once, for tests that corrupt stores.
    package func setContents(of path: String, to bytes: [UInt8]) {
        state.withLock { state in
            if let inode = state.entries[path] {
                inode.current = bytes
                inode.durable = bytes
                inode.pending = []
            }
        }
    }

    /// Makes the whole file system durable as it is now (as after a clean shutdown).
    package func syncEverything() {
        state.withLock { state in
            for inode in state.entries.values {
                inode.durable = inode.current
                inode.pending = []
            }
            state.durableEntries = state.entries
            state.pendingDirectoryOperations = []
        }
    }
}
