import StrataFormat

extension PageLog {
    /// Checks the in-memory invariants of Docs/Architecture.md that can be checked without
    /// reading pages, and returns a description of every violation (empty when all hold).
    /// Tests call it after every step of their workloads; it takes the writer lock.
    package func checkInvariants() -> [String] {
        writerLock.withLock { _ in
            var problems: [String] = []
            let (published, segments, flushed) = shared.withLock { ($0.table, Set($0.segments.keys), $0.flushedPosition) }
            // 11: between transactions, readers see exactly the head table.
            if !published.hasSameEntries(as: writer.table) { problems.append("published page table differs from the writer's") }
            // Live bytes recomputed from what the state refers to (table, chunks, root).
            var live: [UInt64: UInt64] = [:]
            var maximumID: UInt64 = 0
            var sawPage = false
            writer.table.forEach(unreadable: { index, error in problems.append("page table chunk \(index) cannot be loaded: \(error)") }) { id, location in
                sawPage = true
                live[UInt64(location.segment), default: 0] += UInt64(location.length)
                maximumID = max(maximumID, id)
                if !segments.contains(UInt64(location.segment)) {
                    problems.append("page \(id) refers to segment \(location.segment), which is not open")
                }
            }
            for chunk in writer.chunkLocations where !chunk.isNone {
                live[UInt64(chunk.segment), default: 0] += UInt64(chunk.length)
            }
            live[writer.rootAddress.segment, default: 0] += UInt64(writer.rootAddress.length)
            for (id, usage) in writer.usage where usage.liveBytes != live[id, default: 0] {
                problems.append("segment \(id): live bytes \(usage.liveBytes), recomputed \(live[id, default: 0])")
            }
            for id in live.keys where writer.usage[id] == nil { problems.append("segment \(id) is referenced but has no usage entry") }
            for (id, usage) in writer.usage where usage.liveBytes > usage.totalBytes {
                problems.append("segment \(id): live bytes \(usage.liveBytes) exceed total \(usage.totalBytes)")
            }
            if Set(writer.usage.keys) != segments { problems.append("usage covers segments \(writer.usage.keys.sorted()), open are \(segments.sorted())") }
            // 13: page ids.
            if sawPage, maximumID >= PageLog.firstAllocatablePageID, maximumID >= writer.nextPageID {
                problems.append("page \(maximumID) is at or above the next page id \(writer.nextPageID)")
            }
            var free = Set<UInt64>()
            for range in writer.freePageIDs.ranges {
                if range.lowerBound < PageLog.firstAllocatablePageID || range.upperBound > writer.nextPageID {
                    problems.append("free page ids \(range) out of range")
                }
                guard range.count <= 1 << 16 else { continue }  // a large never-written span: bounds only
                for id in range {
                    if !free.insert(id).inserted { problems.append("page id \(id) is free twice") }
                    if (try? writer.table.location(of: id))?.isNone != true { problems.append("free page id \(id) holds a page") }
                }
            }
            // 8: durable ≤ written.
            let durablePosition = durable.withLock { $0 }
            if durablePosition > flushed { problems.append("durable position \(durablePosition) is past the written end \(flushed)") }
            if writer.buffer.isEmpty && flushed != writer.endPosition {
                problems.append("flushed position \(flushed) differs from the writer's end \(writer.endPosition)")
            }
            // 10: retired segments are unreferenced.
            for retired in writer.retired where live[retired.segment, default: 0] > 0 {
                problems.append("retired segment \(retired.segment) is still referenced")
            }
            return problems
        }
    }
}
