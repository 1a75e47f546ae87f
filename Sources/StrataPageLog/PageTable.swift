import StrataFormat

/// The mapping page id → current frame location, as a two-level persistent array:
/// chunks of `chunkEntries` locations. Copies share chunks (copy-on-write), so publishing a
/// new version after a commit copies only the chunk index and the chunks the commit touched;
/// readers keep the version they started with for as long as they like.
package struct PageTable: Sendable, Equatable {
    package static let chunkEntries = CheckpointRoot.defaultChunkEntries

    /// Each chunk is either empty (no page in it) or exactly `chunkEntries` long.
    package private(set) var chunks: [[PageLocation]] = []

    package init() {}

    package subscript(id: UInt64) -> PageLocation {
        get {
            let chunk = Int(id / UInt64(Self.chunkEntries))
            guard chunk < chunks.count, !chunks[chunk].isEmpty else { return .none }
            return chunks[chunk][Int(id % UInt64(Self.chunkEntries))]
        }
        set {
            let chunk = Int(id / UInt64(Self.chunkEntries))
            if chunk >= chunks.count {
                if newValue.isNone { return }
                chunks.append(contentsOf: repeatElement([], count: chunk + 1 - chunks.count))
            }
            if chunks[chunk].isEmpty {
                if newValue.isNone { return }
                chunks[chunk] = [PageLocation](repeating: .none, count: Self.chunkEntries)
            }
            chunks[chunk][Int(id % UInt64(Self.chunkEntries))] = newValue
        }
    }

    /// Replaces a whole chunk (used when loading a checkpoint). `isEmpty`: no entry of
    /// `entries` is present (the loader counted them while decoding), so the chunk is dropped.
    package mutating func setChunk(_ index: Int, _ entries: [PageLocation], isEmpty: Bool) {
        if index >= chunks.count { chunks.append(contentsOf: repeatElement([], count: index + 1 - chunks.count)) }
        chunks[index] = isEmpty ? [] : entries
    }

    /// The entries of a chunk, `chunkEntries` long, for writing a checkpoint.
    package func chunkEntries(_ index: Int) -> [PageLocation] {
        guard index < chunks.count, !chunks[index].isEmpty else {
            return [PageLocation](repeating: .none, count: Self.chunkEntries)
        }
        return chunks[index]
    }

    package var chunkCount: Int { chunks.count }

    /// Calls `body` for every present page, in page id order.
    package func forEach(_ body: (UInt64, PageLocation) throws -> Void) rethrows {
        for (chunkIndex, chunk) in chunks.enumerated() where !chunk.isEmpty {
            for (slot, location) in chunk.enumerated() where !location.isNone {
                try body(UInt64(chunkIndex * Self.chunkEntries + slot), location)
            }
        }
    }

    /// How many present pages each segment holds. Pages written together sit in the same
    /// segment, so entries are counted in runs: one dictionary update per run, not per page.
    package func pageCountsBySegment() -> [UInt64: Int] {
        var counts: [UInt64: Int] = [:]
        for chunk in chunks where !chunk.isEmpty {
            chunk.withUnsafeBufferPointer { entries in
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

    /// The number of present pages.
    package var count: Int {
        chunks.reduce(0) { total, chunk in total + chunk.reduce(0) { $0 + ($1.isNone ? 0 : 1) } }
    }
}
