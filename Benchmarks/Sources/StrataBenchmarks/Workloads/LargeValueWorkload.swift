import Foundation
import Strata

/// large-value: one record holding a 200 MiB `Data` attribute, written and read back through
/// the public API, each step in a process of its own so its peak memory (`VmHWM`) is that
/// step's alone. The figure is the peak over the value's size: (peak − resident memory before
/// the store was opened) / value size: the value itself, which the app holds while writing and
/// gets back when reading, counts as 1, and the store's own memory (a few MiB) is included;
/// `…_ratio_after_open` counts from the open store instead. Target: ≤ 2 (issue 21).
///
/// Two values: seeded random bytes (LZ4 cannot shrink them: stored raw) and text-like bytes
/// (compressible). Each is written with `store.write { $0.insert(…) }` and with
/// `Context.insert` + `save()`, read with `Context.record(for:)` and with `fetch` (every read
/// checks the value byte for byte against a fresh generation of it, a MiB at a time), then
/// updated to a value differing in one byte with the journal off and on — for information: an
/// update journals the attribute's old and new values.
enum LargeValueWorkload {
    static let workload = Workload(
        name: "large-value",
        summary: "one 200 MiB Data attribute written and read back; peak memory over the value's size (target ≤ 2)",
        run: run,
        parts: Dictionary(uniqueKeysWithValues: Kind.allCases.flatMap { kind in
            Step.allCases.map { step -> (String, Workload.Part) in
                ("\(step.rawValue)-\(kind.rawValue)", { @Sendable context in try run(step, kind, context) })
            }
        })
    )

    static let targetRatio = 2.0

    /// The record: a name and the large value.
    struct Blob: PersistentRecord {
        var name: String
        var payload: Data
    }

    /// What the value holds.
    enum Kind: String, CaseIterable, Sendable {
        /// Seeded random bytes: incompressible.
        case random
        /// Words from a small list with numbers: compresses about 2–3× with LZ4.
        case text
    }

    /// One measured step, in a process of its own.
    enum Step: String, CaseIterable, Sendable {
        /// `store.write { $0.insert(Blob) }` on a new store.
        case write
        /// `Context.insert` + `save()` on a new store.
        case writeContext = "write-context"
        /// `Context(store).record(for:)`.
        case read
        /// `Context(store).fetch(FetchDescriptor<Blob>())`.
        case readFetch = "read-fetch"
        /// `store.write { $0.update(…) }` of the record to a value differing in one byte, the
        /// journal off (information: the target is for writes and reads).
        case update
        /// The same with the journal on (the default), which records the attribute's old and
        /// new values (information).
        case updateJournaled = "update-journaled"

        /// Whether the target (≤ 2 × the value) applies.
        var hasTarget: Bool { self != .update && self != .updateJournaled }
    }

    /// 200 MiB: a multiple of 8 and of the MiB a check compares at a time.
    static func valueBytes(_ scale: WorkloadScale) -> Int { 200 << 20 }

    /// The bytes of a value of `kind`, generated in order a block at a time (the same bytes
    /// however they are split), so a value read back is checked without a second copy of it.
    struct Generator {
        let kind: Kind
        private var random = SplitMix64(seed: 0x4C41_5247_45)  // "LARGE"
        private var produced = 0
        private var offset = 0
        private static let text = Array("lorem ipsum dolor sit amet 0123 consectetur adipiscing elit 4567 sed do eiusmod ".utf8)

        init(_ kind: Kind) { self.kind = kind }

        /// Fills `raw` with the next bytes (a multiple of 8 of them).
        mutating func fill(_ raw: UnsafeMutableRawBufferPointer) {
            switch kind {
            case .random:
                for index in stride(from: 0, to: raw.count, by: 8) { raw.storeBytes(of: random.next(), toByteOffset: index, as: UInt64.self) }
            case .text:
                for index in 0..<raw.count {
                    // A word from the text at a random place every 64 bytes: text-like, not one
                    // repeated run.
                    if (produced + index) % 64 == 0 { offset = Int(random.next() % UInt64(Self.text.count)) }
                    raw[index] = Self.text[(offset + produced + index) % Self.text.count]
                }
            }
            produced += raw.count
        }
    }

    /// The value of `kind`: the same bytes every time.
    static func value(_ kind: Kind, count: Int) -> Data {
        var data = Data(count: count)
        var generator = Generator(kind)
        data.withUnsafeMutableBytes { generator.fill($0) }
        return data
    }

    /// Whether `data` is the value of `kind`, checked a MiB at a time.
    static func isValue(_ data: Data, _ kind: Kind, count: Int) -> Bool {
        guard data.count == count else { return false }
        var generator = Generator(kind)
        let block = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 8)
        defer { block.deallocate() }
        return data.withUnsafeBytes { raw in
            var start = 0
            while start < count {
                let part = UnsafeMutableRawBufferPointer(rebasing: block[0..<min(block.count, count - start)])
                generator.fill(part)
                guard memcmp(part.baseAddress!, raw.baseAddress! + start, part.count) == 0 else { return false }
                start += part.count
            }
            return true
        }
    }

    static func storePath(_ context: WorkloadContext, _ kind: Kind, _ step: Step) -> String {
        context.path("store-\(kind.rawValue)-\(step == .writeContext ? "context" : "store")")
    }

    /// The store, in the default configuration (the journal on: an insert journals its id), or
    /// with the journal off.
    static func open(_ path: String, journal: Bool = true) throws -> Store {
        var configuration = Store.Configuration()
        configuration.history.isEnabled = journal
        return try Store(at: path, for: [Blob.self], configuration: configuration)
    }

    /// Runs one step and reports its time, the resident memory before the value existed (the
    /// store open) and (added by the part process) its peak.
    static func run(_ step: Step, _ kind: Kind, _ context: WorkloadContext) throws -> JSONValue {
        let count = valueBytes(context.scale)
        let seconds: Double, before: UInt64, opened: UInt64
        switch step {
        case .write, .writeContext:
            before = PeakMemory.currentResidentBytes()
            let store = try open(storePath(context, kind, step))
            opened = PeakMemory.currentResidentBytes()
            let blob = Blob(name: "large", payload: value(kind, count: count))
            let stopwatch = Stopwatch()
            if step == .write {
                try store.write { _ = try $0.insert(blob) }
            } else {
                let work = Context(store)
                try work.insert(blob)
                try work.save()
            }
            try store.close()
            seconds = stopwatch.elapsedSeconds
        case .update, .updateJournaled:
            before = PeakMemory.currentResidentBytes()
            let store = try open(storePath(context, kind, .write), journal: step == .updateJournaled)
            opened = PeakMemory.currentResidentBytes()
            // A byte changed, another for each update: the second one changes the record too.
            var changed = value(kind, count: count)
            changed[step == .update ? count / 2 : count / 3] ^= 1
            let blob = Blob(name: "large", payload: changed)
            let stopwatch = Stopwatch()
            try store.write { try $0.update(RecordID<Blob>(rawValue: 1), to: blob) }
            try store.close()
            seconds = stopwatch.elapsedSeconds
        case .read, .readFetch:
            before = PeakMemory.currentResidentBytes()
            let store = try open(storePath(context, kind, .write))
            defer { try? store.close() }
            opened = PeakMemory.currentResidentBytes()
            let stopwatch = Stopwatch()
            let blob: Blob?
            if step == .read {
                blob = try Context(store).record(for: RecordID<Blob>(rawValue: 1))
            } else {
                blob = try Context(store).fetch(FetchDescriptor<Blob>()).first?.record
            }
            seconds = stopwatch.elapsedSeconds
            guard let blob, blob.name == "large" else { throw BenchmarkError.verificationFailed("the large record is missing") }
            guard isValue(blob.payload, kind, count: count) else {
                throw BenchmarkError.verificationFailed("the \(kind.rawValue) value read back differs from the one written")
            }
        }
        return .object([("seconds", .double(seconds)), ("resident_before_bytes", .int(Int64(clamping: before))),
                        ("resident_open_bytes", .int(Int64(clamping: opened))), ("value_bytes", .int(Int64(count)))])
    }

    static func run(_ context: WorkloadContext) throws -> WorkloadResult {
        let count = valueBytes(context.scale)
        var extra: [(key: String, value: JSONValue)] = [("value_bytes", .int(Int64(count))), ("target_ratio", .double(targetRatio))]
        var notes: [String] = [], peak: UInt64 = 0, anonymousPeak: UInt64 = 0, worst = 0.0, seconds = 0.0
        for kind in Kind.allCases {
            var ratios: [String] = []
            for step in Step.allCases {
                context.progress("\(step.rawValue), \(kind.rawValue) value of \(ByteCount.text(count))")
                let report = try context.runPartProcess("\(step.rawValue)-\(kind.rawValue)")
                let stepPeak = try report.peakMemoryBytes
                let ratio = Double(stepPeak - min(stepPeak, try report.uint64("resident_before_bytes"))) / Double(count)
                let valueRatio = Double(stepPeak - min(stepPeak, try report.uint64("resident_open_bytes"))) / Double(count)
                let key = "\(kind.rawValue)_\(step.rawValue.replacingOccurrences(of: "-", with: "_"))"
                extra += [("\(key)_peak_bytes", .int(Int64(clamping: stepPeak))), ("\(key)_ratio", .double(ratio)),
                          ("\(key)_ratio_after_open", .double(valueRatio)), ("\(key)_seconds", .double(try report.double("seconds")))]
                ratios.append(String(format: "%@ %.2f", step.rawValue, ratio))
                peak = max(peak, stepPeak)
                anonymousPeak = max(anonymousPeak, report.peakAnonymousMemoryBytes)
                if step.hasTarget { worst = max(worst, ratio) }
                if kind == .random && (step == .write || step == .read) { seconds += try report.double("seconds") }
            }
            notes.append("\(kind.rawValue): " + ratios.joined(separator: ", "))
        }
        var result = WorkloadResult(
            workload: workload.name, records: 1, strataSeconds: seconds, baseline: nil,
            notes: "peak memory over the value's size: " + notes.joined(separator: "; ")
                + String(format: "; worst write or read %.2f (target ≤ %.0f; updates: information); time: random write + read",
                         worst, targetRatio),
            extra: extra + [("worst_ratio", .double(worst))])
        result.peakMemoryBytes = peak  // the steps' own processes
        result.peakAnonymousMemoryBytes = anonymousPeak
        return result
    }
}
