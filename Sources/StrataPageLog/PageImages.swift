import StrataFormat
import StrataIO

/// Page images a pass over a tree read — verified and decompressed — kept for a write
/// transaction that reads the same pages soon after: a migration closure's flush rewrites the
/// leaves its enumeration read a moment before, and would otherwise read, verify and
/// decompress each one again.
///
/// Keyed by the frame's location (segment, offset, length, LSN): an open log never writes over
/// a committed frame (compaction copies frames into new segments) and never reuses a segment
/// number (a new segment takes the next; only a closed store's log is cut back), so an image
/// kept from a snapshot's read is valid for as long as a page table names that location. An
/// image is taken out when a transaction reads it (a flush reads each leaf once); the oldest go
/// first past `budget` bytes. Thread-safe: a flush may be written on a thread of its own while
/// the enumeration reads on.
package final class PageImages: Sendable {
    private struct State {
        var images: [PageLocation: Page] = [:]
        /// Locations in the order they were kept (some since taken out).
        var order: [PageLocation] = []
        var orderHead = 0
        var bytes = 0
        var taken = 0
    }

    /// The most bytes of images kept.
    package let budget: Int
    private let state = Lock(State())

    package init(budget: Int) {
        self.budget = budget
    }

    /// Keeps the image of page `id` read from the frame at `location` (`header` its header,
    /// `bytes` its payload, verified and decompressed), copying the bytes.
    package func keep(_ bytes: UnsafeRawBufferPointer, id: UInt64, header: FrameHeader, at location: PageLocation) {
        guard bytes.count <= budget else { return }
        keep(Page(id: id, entityID: header.entityID, schemaVersion: header.schemaVersion, lsn: header.lsn, bytes: Array(bytes)), at: location)
    }

    /// Keeps `image` as the image of the frame at `location`.
    package func keep(_ image: Page, at location: PageLocation) {
        guard image.bytes.count <= budget else { return }
        state.withLock { state in
            guard state.images.updateValue(image, forKey: location) == nil else { return }
            state.order.append(location)
            state.bytes += image.bytes.count
            while state.bytes > budget, state.orderHead < state.order.count {
                let oldest = state.order[state.orderHead]
                state.orderHead += 1
                if let gone = state.images.removeValue(forKey: oldest) { state.bytes -= gone.bytes.count }
            }
            if state.orderHead > 1024 && state.orderHead * 2 > state.order.count {
                state.order.removeFirst(state.orderHead)
                state.orderHead = 0
            }
        }
    }

    /// The image of page `id` at `location`, taken out; nil when none is kept.
    package func take(_ id: UInt64, at location: PageLocation) -> Page? {
        state.withLock { state in
            guard let image = state.images[location], image.id == id else { return nil }
            state.images[location] = nil
            state.bytes -= image.bytes.count
            state.taken += 1
            return image
        }
    }

    /// How many images are kept, and how many were taken so far (tests).
    package var count: Int { state.withLock { $0.images.count } }
    package var taken: Int { state.withLock { $0.taken } }
}
