import Synchronization
import StrataFormat
import StrataIO

/// The mapping page id → current frame location, as a two-level persistent array:
/// chunks of `chunkEntries` locations. Copies share chunks (copy-on-write), so publishing a
/// new version after a commit copies only the chunk index and the chunks the commit touched;
/// readers keep the version they started with for as long as they like.
///
/// Open (a writer's or a follower's) leaves the checkpointed chunks *pending* (invariant 16): each is read,
/// verified and decoded at its first lookup — once, shared by every copy of the table — so
/// opening a large store does not read its whole table (24 bytes per page). A chunk is
/// *materialized* (its entries stored in this table) before the writer changes it.
package struct PageTable: Sendable {
    /// The format's default, `CheckpointRoot.defaultChunkEntries` (a test checks they are
    /// equal), written out so a lookup divides by a constant (a shift) and calls no lazy
    /// initializer of another module's constant.
    package static let chunkEntries = 1024

    /// Each chunk is either empty (no page in it, or pending) or exactly `chunkEntries` long.
    package private(set) var chunks: [[PageLocation]] = []
    /// The chunks not loaded yet, by index (shorter than `chunks` when the last are loaded).
    private var pending: [PendingChunk?] = []

    package init() {}

    /// The location of page `id`, `.none` when no such page exists.
    /// - Throws: what loading a pending chunk throws (`PageLogError.corruption`, `.io`).
    @inline(__always)
    package func location(of id: UInt64) throws -> PageLocation {
        let chunk = Int(id / UInt64(Self.chunkEntries))
        guard chunk < chunks.count else { return .none }
        let slot = Int(id % UInt64(Self.chunkEntries))
        if !chunks[chunk].isEmpty { return chunks[chunk][slot] }
        // The pending chunk is used in place (`location(at:)`), not bound to a variable and
        // its entries not returned as an array: no reference counting per lookup (a point
        // read looks up a page a few times).
        guard chunk < pending.count else { return .none }
        return try pending[chunk]?.location(at: slot) ?? .none
    }

    /// Sets the location of page `id` (`.none` removes it), materializing its chunk first.
    package mutating func set(_ location: PageLocation, for id: UInt64) throws {
        let chunk = Int(id / UInt64(Self.chunkEntries))
        _ = try materialize(chunk)
        if chunk >= chunks.count {
            if location.isNone { return }
            chunks.append(contentsOf: repeatElement([], count: chunk + 1 - chunks.count))
        }
        if chunks[chunk].isEmpty {
            if location.isNone { return }
            chunks[chunk] = [PageLocation](repeating: .none, count: Self.chunkEntries)
        }
        chunks[chunk][Int(id % UInt64(Self.chunkEntries))] = location
    }

    /// Whether chunk `index` is pending.
    package func isPending(_ index: Int) -> Bool { index < pending.count && pending[index] != nil }

    /// Loads chunk `index` into this table if it is pending; returns its entries then (empty
    /// when it holds no page), nil when it was not pending.
    @discardableResult
    package mutating func materialize(_ index: Int) throws -> [PageLocation]? {
        guard index < pending.count, let lazy = pending[index] else { return nil }
        let entries = try lazy.entries()
        chunks[index] = entries
        pending[index] = nil
        while let last = pending.last, last == nil { pending.removeLast() }
        return entries
    }

    /// Replaces a whole chunk (used when loading a checkpoint). `isEmpty`: no entry of
    /// `entries` is present (the loader counted them while decoding), so the chunk is dropped.
    package mutating func setChunk(_ index: Int, _ entries: [PageLocation], isEmpty: Bool) {
        if index >= chunks.count { chunks.append(contentsOf: repeatElement([], count: index + 1 - chunks.count)) }
        chunks[index] = isEmpty ? [] : entries
        if index < pending.count { pending[index] = nil }
    }

    /// Leaves chunk `index` to be loaded at its first use.
    mutating func setPending(_ index: Int, _ chunk: PendingChunk) {
        if index >= chunks.count { chunks.append(contentsOf: repeatElement([], count: index + 1 - chunks.count)) }
        if index >= pending.count { pending.append(contentsOf: repeatElement(nil, count: index + 1 - pending.count)) }
        chunks[index] = []
        pending[index] = chunk
    }

    /// The entries of a chunk, `chunkEntries` long, for writing a checkpoint.
    package func chunkEntries(_ index: Int) throws -> [PageLocation] {
        let entries = index < chunks.count ? try resolved(index) : []
        return entries.isEmpty ? [PageLocation](repeating: .none, count: Self.chunkEntries) : entries
    }

    package var chunkCount: Int { chunks.count }

    /// The entries of chunk `index` (empty when it holds no page), loading it when pending.
    private func resolved(_ index: Int) throws -> [PageLocation] {
        if index < pending.count, let lazy = pending[index] { return try lazy.entries() }
        return chunks[index]
    }

    /// Calls `body` for every present page, in page id order (loading pending chunks).
    package func forEach(_ body: (UInt64, PageLocation) throws -> Void) throws {
        for chunkIndex in chunks.indices {
            let chunk = try resolved(chunkIndex)
            for (slot, location) in chunk.enumerated() where !location.isNone {
                try body(UInt64(chunkIndex * Self.chunkEntries + slot), location)
            }
        }
    }

    /// `forEach`, but a pending chunk that cannot be loaded is passed to `unreadable` (with
    /// its index and the error) and skipped: for verification, which reports every problem.
    package func forEach(unreadable: (Int, any Error) -> Void, _ body: (UInt64, PageLocation) -> Void) {
        for chunkIndex in chunks.indices {
            let chunk: [PageLocation]
            do { chunk = try resolved(chunkIndex) } catch {
                unreadable(chunkIndex, error)
                continue
            }
            for (slot, location) in chunk.enumerated() where !location.isNone {
                body(UInt64(chunkIndex * Self.chunkEntries + slot), location)
            }
        }
    }

    /// How many present pages each segment holds. Pages written together sit in the same
    /// segment, so entries are counted in runs: one dictionary update per run, not per page.
    package func pageCountsBySegment() throws -> [UInt64: Int] {
        var counts: [UInt64: Int] = [:]
        for chunkIndex in chunks.indices {
            try resolved(chunkIndex).withUnsafeBufferPointer { entries in
                var segment: UInt32 = 0
                var run = 0
                for entry in entries where entry.segment != 0 {
                    if entry.segment != segment {
                        if run > 0 { counts[UInt64(segment), default: 0] += run }
                        segment = entry.segment
                        run = 0
                    }
                    run += 1
                }
                if run > 0 { counts[UInt64(segment), default: 0] += run }
            }
        }
        return counts
    }

    /// The number of present pages (loading pending chunks).
    package func count() throws -> Int {
        try chunks.indices.reduce(0) { total, index in total + (try resolved(index)).reduce(0) { $0 + ($1.isNone ? 0 : 1) } }
    }

    /// Whether two tables map every page id alike (pending chunks loaded to compare; one that
    /// cannot be loaded equals only the same pending chunk).
    package func hasSameEntries(as other: PageTable) -> Bool {
        for index in 0..<max(chunks.count, other.chunks.count) {
            let mine = index < pending.count ? pending[index] : nil, theirs = index < other.pending.count ? other.pending[index] : nil
            if let mine, let theirs, mine === theirs { continue }
            func entries(_ table: PageTable) -> [PageLocation]? {
                index < table.chunks.count ? try? table.resolved(index) : []
            }
            guard let a = entries(self), let b = entries(other) else { return false }
            if a == b { continue }
            // An empty chunk equals one whose entries are all absent.
            if a.isEmpty && b.allSatisfy(\.isNone) || b.isEmpty && a.allSatisfy(\.isNone) { continue }
            return false
        }
        return true
    }
}

/// A checkpointed page table chunk open did not read: read, verified and decoded at its first
/// lookup, then kept (invariant 16). A failed load is not remembered (the next lookup tries
/// again, and throws again on a damaged frame).
///
/// Thread-safety (`@unchecked Sendable`): `loaded` is written once, under `loadLock`, before
/// `isLoaded` is set (releasing); it is read only after `isLoaded` was seen set (acquiring),
/// so lookups of a loaded chunk take no lock — snapshots of a store nobody writes keep their
/// chunks pending for good.
final class PendingChunk: @unchecked Sendable {
    let index: Int
    let location: PageLocation
    let file: any StorageFile
    let entriesPerChunk: Int
    /// The checkpoint's next page id: every entry's id is below it.
    let nextPageID: UInt64
    /// The segments the log had at open: every entry's segment is one of them.
    let segments: Set<UInt64>
    private let isLoaded = Atomic<Bool>(false)
    private nonisolated(unsafe) var loaded: [PageLocation] = []
    private let loadLock = Lock<Void>(())

    init(index: Int, location: PageLocation, file: any StorageFile, entriesPerChunk: Int, nextPageID: UInt64, segments: Set<UInt64>) {
        self.index = index
        self.location = location
        self.file = file
        self.entriesPerChunk = entriesPerChunk
        self.nextPageID = nextPageID
        self.segments = segments
    }

    /// The chunk's entries: empty when it holds no page, else `entriesPerChunk` long.
    @inline(__always)
    func entries() throws -> [PageLocation] {
        if isLoaded.load(ordering: .acquiring) { return loaded }
        return try load()
    }

    /// The location in slot `slot` (< `entriesPerChunk`) of the chunk: `.none` when the chunk
    /// holds no page.
    @inline(__always)
    func location(at slot: Int) throws -> PageLocation {
        if isLoaded.load(ordering: .acquiring) { return loaded.isEmpty ? .none : loaded[slot] }
        let entries = try load()
        return entries.isEmpty ? .none : entries[slot]
    }

    private func load() throws -> [PageLocation] {
        try loadLock.withLock { _ in
            if isLoaded.load(ordering: .acquiring) { return loaded }
            var scratch: [UInt8] = []
            let (entries, present) = try Recovery.readChunk(index, at: location, in: file, entries: entriesPerChunk, scratch: &scratch)
            var seen = Set<UInt64>()
            try Recovery.checkChunk(entries, index: index, at: location, in: file, nextPageID: nextPageID, seen: &seen) { segments.contains($0) }
            loaded = present > 0 ? entries : []
            isLoaded.store(true, ordering: .releasing)
            return loaded
        }
    }
}
