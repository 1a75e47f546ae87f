#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import StrataFormat
import StrataIO
import StrataTestSupport
@testable import Strata
#if canImport(Glibc)
import Glibc
#endif

// Store-file fuzzing (issue 6, item 3): a real small store (FzStore: two entities, a unique and
// an indexed attribute, overflowed records, a journal, a completed custom migration with
// quarantined records, several segment files) damaged — bit flips, truncation, zeroed ranges,
// two frames exchanged, a stale older frame put back at its offset, an older copy of a whole
// file put back — then opened, read record by record and by predicates (indexed and scanned),
// its history fetched, verified, and migrated on (a lightweight and a custom stage). A forged
// page — its content damaged, its frame's checksum made valid again — tests the decoders above
// the page log: there any typed error is acceptable and the data cannot be checked.
//
// Every operation must return correct data or throw one of the acceptable `StrataError`s:
// `.corruption`, `.unsupportedFormatVersion`, `.io` (a read past a truncated file), or
// `.migrationFailed` whose category is `storage` (the store could not be read).
// Correct data is the records of one committed state of the store — all entities from the
// same one: the newest, or an older one when the damage cut the log's tail (the same outcome
// as a crash that lost the tail) or put an older file back — together with every fetch's
// answer on that state; the migration must give that state's records, transformed. When
// `verify()` reports no problem, every record read must equal that state's.

enum StoreMutation: CaseIterable, CustomStringConvertible {
    case bitFlip, truncate, zeroRange, swapFrames, staleFrame, staleFile, forgedPage

    var description: String {
        switch self {
        case .bitFlip: "bit flip"
        case .truncate: "truncation"
        case .zeroRange: "zeroed range"
        case .swapFrames: "frames swapped"
        case .staleFrame: "stale frame put back"
        case .staleFile: "older file put back"
        case .forgedPage: "forged page"
        }
    }

    /// Applies the mutation to one file of `files`; returns what was done (nil: not applicable
    /// to the file drawn).
    func apply(to files: inout [String: [UInt8]], older: [[String: [UInt8]]], _ random: inout SeededRandom) -> String? {
        let names = files.keys.sorted()
        // Files drawn by size (the superblock file as often as a segment).
        let name = names[Int(random.next() % UInt64(names.count))]
        guard var bytes = files[name] else { return nil }
        func position() -> Int { bytes.isEmpty ? 0 : Int(random.next() % UInt64(bytes.count)) }
        var what: String
        switch self {
        case .bitFlip:
            guard !bytes.isEmpty else { return nil }
            let at = position()
            // Near the start of a frame as often as anywhere: headers are where lengths live.
            let frames = fzFrames(of: bytes)
            let target = !frames.isEmpty && random.next() % 2 == 0
                ? min(bytes.count - 1, frames[Int(random.next() % UInt64(frames.count))].offset + Int(random.next() % 64)) : at
            bytes[target] ^= 1 << UInt8(random.next() % 8)
            what = "bit flip at \(target)"
        case .truncate:
            let length = position()
            bytes.removeLast(bytes.count - length)
            what = "truncated to \(length)"
        case .zeroRange:
            guard !bytes.isEmpty else { return nil }
            let start = position(), end = min(bytes.count, start + 1 + Int(random.next() % 4_096))
            bytes.replaceSubrange(start..<end, with: repeatElement(0, count: end - start))
            what = "zeroed \(start)..<\(end)"
        case .swapFrames:
            let frames = fzFrames(of: bytes)
            guard frames.count >= 2 else { return nil }
            var first = Int(random.next() % UInt64(frames.count)), second = Int(random.next() % UInt64(frames.count - 1))
            if second >= first { second += 1 }
            if first > second { swap(&first, &second) }
            let a = frames[first], b = frames[second]
            let aBytes = bytes[a.offset..<(a.offset + a.length)], bBytes = bytes[b.offset..<(b.offset + b.length)]
            bytes = Array(bytes[..<a.offset]) + bBytes + bytes[(a.offset + a.length)..<b.offset] + aBytes + bytes[(b.offset + b.length)...]
            what = "frames at \(a.offset) and \(b.offset) swapped"
        case .staleFrame:
            // An older version of a page (a frame the log still holds, or one of an older copy
            // of the files) written over the frame of a newer version of the same page.
            let frames = fzFrames(of: bytes).filter { $0.header.kind == .page }
            var versions: [(frame: [UInt8], lsn: UInt64, pageID: UInt64)] = []
            for source in [files] + older {
                for (path, contents) in source where path.hasSuffix(".seg") {
                    for frame in fzFrames(of: contents) where frame.header.kind == .page {
                        versions.append((Array(contents[frame.offset..<(frame.offset + frame.length)]), frame.header.lsn, frame.header.pageID))
                    }
                }
            }
            let candidates = frames.flatMap { newer in
                versions.filter { $0.pageID == newer.header.pageID && $0.lsn < newer.header.lsn }.map { (newer, $0) }
            }
            guard !candidates.isEmpty else { return nil }
            let (newer, stale) = candidates[Int(random.next() % UInt64(candidates.count))]
            let end = min(bytes.count, newer.offset + stale.frame.count)
            bytes.replaceSubrange(newer.offset..<end, with: stale.frame.prefix(end - newer.offset))
            what = "page \(stale.pageID) of LSN \(stale.lsn) put over its LSN \(newer.header.lsn) frame at \(newer.offset)"
        case .forgedPage:
            // A page's content damaged and its frame rebuilt with a valid checksum (a file
            // written by a buggy or hostile program): only the decoders above the page log can
            // tell. The frame keeps its length (the page table records it).
            let frames = fzFrames(of: bytes).filter { $0.header.kind == .page }
            guard !frames.isEmpty else { return nil }
            let frame = frames[Int(random.next() % UInt64(frames.count))]
            var payload = frame.payload
            guard !payload.isEmpty else { return nil }
            let (mutation, mutated) = Mutation.apply(payload, others: [], &random)
            guard mutated.count == payload.count || frame.header.codec != .none else { return nil }
            payload = mutated
            var rebuilt: [UInt8] = []
            for compress in [frame.header.codec != .none, false] {
                rebuilt = []
                payload.withUnsafeBytes { raw in
                    _ = FrameCodec.append(kind: .page, pageID: frame.header.pageID, lsn: frame.header.lsn, entityID: frame.header.entityID,
                                          schemaVersion: frame.header.schemaVersion, payload: raw, compress: compress,
                                          formatVersion: UInt16(frame.header.formatVersion), to: &rebuilt)
                }
                if rebuilt.count == frame.length { break }
            }
            guard rebuilt.count == frame.length else { return nil }
            bytes.replaceSubrange(frame.offset..<(frame.offset + frame.length), with: rebuilt)
            what = "page \(frame.header.pageID) forged (\(mutation)) at \(frame.offset)"
        case .staleFile:
            let copies = older.compactMap { $0[name] }.filter { $0 != bytes }
            guard !copies.isEmpty else { return nil }
            bytes = copies[Int(random.next() % UInt64(copies.count))]
            what = "older copy (\(bytes.count) bytes)"
        }
        files[name] = bytes
        return "\(name): \(what)"
    }
}

@Suite struct StoreFileFuzzTests {
    /// What one damaged store gave.
    enum Outcome { case newest, older, typedError }

    struct Tally {
        var runs = 0, files = 0, newest = 0, older = 0, typedErrors = 0, verifiedClean = 0, verifyProblems = 0, migrated = 0, readOnly = 0, forged = 0, forgedOpened = 0
        var errors: [String: Int] = [:]
    }

    /// Counts `error`; records an issue when a damaged store may not throw it. A forged page
    /// may hold any valid-looking value (a record of the wrong kind, a repeated unique value…):
    /// there any `StrataError` about the store's content will do.
    static func fail(_ error: any Error, _ step: String, forged: Bool, files: [String: [UInt8]], tally: inout Tally, _ context: String) {
        tally.errors[kind(error), default: 0] += 1
        if !(isAcceptable(error) || (forged && isAcceptableForForged(error))) {
            Issue.record("\(step): unacceptable error \(type(of: error)): \(error) (\(context); files kept in \(keep(files, context)))")
        }
    }

    /// Writes the damaged files of a failing run to a folder under /tmp (the store's bytes
    /// hold its random store id and commit times, so a replay from the seed makes the same
    /// mutations on slightly different bytes); returns the folder. Open it with
    /// `Store(at:)` or turn it into a regression test.
    static func keep(_ files: [String: [UInt8]], _ context: String) -> String {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in context.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        let folder = "/tmp/strata-fuzz-failure-\(String(hash, radix: 16))"
        mkdir(folder, 0o755)
        mkdir(folder + "/store", 0o755)
        for (path, bytes) in files {
            guard let file = fopen(folder + path, "wb") else { continue }
            _ = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
            fclose(file)
        }
        return folder
    }

    /// Whether `error` is one a store with a forged page may throw: any `StrataError` but
    /// those about the caller or the instance, never about stored bytes.
    static func isAcceptableForForged(_ error: any Error) -> Bool {
        guard let error = error as? StrataError else { return false }
        switch error {
        case .invalidPageID, .closed, .locked, .readOnly, .poisoned, .storeNotFound, .invalidSchema: return false
        default: return true
        }
    }

    /// Whether `error` is one a damaged store may throw.
    static func isAcceptable(_ error: any Error) -> Bool {
        guard let error = error as? StrataError else { return false }
        switch error {
        case .corruption, .unsupportedFormatVersion, .io: return true
        case .migrationFailed(let report): return report.category == .storage
        default: return false
        }
    }

    static func kind(_ error: any Error) -> String {
        guard let error = error as? StrataError else { return "untyped" }
        switch error {
        case .corruption: return "corruption"
        case .unsupportedFormatVersion: return "unsupportedFormatVersion"
        case .io: return "io"
        case .migrationFailed(let report): return "migrationFailed(\(report.category.rawValue))"
        default: return Mirror(reflecting: error).children.first?.label ?? "\(error)"
        }
    }

    /// Opens the damaged `files`, reads everything, verifies, migrates; checks every answer.
    static func run(_ files: [String: [UInt8]], reference: FzStore, readOnly: Bool = true, forged: Bool = false, tally: inout Tally,
                    _ context: String) {
        let fs = MemoryFileSystem(files: files)
        var state: FzState?
        func fail(_ error: any Error, _ step: String) {
            Self.fail(error, step, forged: forged, files: files, tally: &tally, context)
        }
        if forged {
            runForged(fs, files: files, tally: &tally, context)
            return
        }
        // Read-only (a reader process: no recovery written, no migration): one committed
        // state's records, or a typed error (`migrationRequired` too, for a state from before
        // the migration).
        if readOnly {
            do {
                var configuration = FzStore.configuration()
                configuration.isReadOnly = true
                let store = try Store(at: FzStore.path, schema: FzV2.self, migrationPlan: nil, configuration: configuration, fileSystem: fs)
                defer { try? store.close() }
                let read = Context(store)
                var found = FzState()
                for item in try read.fetch(FetchDescriptor<FzV2.Item>()) { found.items[item.id.rawValue] = item.record }
                for tag in try read.fetch(FetchDescriptor<FzV1.Tag>()) { found.tags[tag.id.rawValue] = tag.record }
                #expect(reference.states.contains(found), "read-only: records equal no committed state (\(context))")
                tally.readOnly += 1
            } catch StrataError.migrationRequired {
            } catch {
                fail(error, "read-only open and read")
            }
        }
        // Open, read, fetch, history, verify.
        do {
            let store = try Store(at: FzStore.path, schema: FzV2.self, migrationPlan: FzPlanV2.self, configuration: FzStore.configuration(),
                                  fileSystem: fs)
            defer { try? store.close() }
            let read = Context(store)
            var found = FzState()
            for item in try read.fetch(FetchDescriptor<FzV2.Item>()) { found.items[item.id.rawValue] = item.record }
            for tag in try read.fetch(FetchDescriptor<FzV1.Tag>()) { found.tags[tag.id.rawValue] = tag.record }
            guard let index = reference.states.lastIndex(of: found) else {
                Issue.record("records equal no committed state: \(found.items.count) items, \(found.tags.count) tags (\(context); files kept in \(keep(files, context)))")
                return
            }
            state = found
            // Each record by id; fetches with predicates (indexed, unique, scanned) against the state.
            for (id, item) in found.items {
                let again = try read.record(for: RecordID<FzV2.Item>(rawValue: id))
                #expect(again == item, "item \(id) by id (\(context))")
            }
            let ranked = try read.fetch(FetchDescriptor<FzV2.Item>(predicate: #Predicate { $0.rank >= 3 && $0.rank < 9 }))
            #expect(Set(ranked.map(\.id.rawValue)) == Set(found.items.filter { $0.value.rank >= 3 && $0.value.rank < 9 }.keys),
                    "indexed range fetch (\(context))")
            let equal = try read.fetch(FetchDescriptor<FzV2.Item>(predicate: #Predicate { $0.rank == 4 }))
            #expect(Set(equal.map(\.id.rawValue)) == Set(found.items.filter { $0.value.rank == 4 }.keys), "indexed equality fetch (\(context))")
            let named = try read.fetch(FetchDescriptor<FzV2.Item>(predicate: #Predicate { $0.name == "item 8" }))
            #expect(named.map(\.record) == found.items.values.filter { $0.name == "item 8" }, "unique fetch (\(context))")
            let heavy = try read.fetch(FetchDescriptor<FzV1.Tag>(predicate: #Predicate { $0.weight > 4 }))
            #expect(Set(heavy.map(\.id.rawValue)) == Set(found.tags.filter { $0.value.weight > 4 }.keys), "scanned fetch (\(context))")
            // The journal: every transaction returned is the one committed under its token.
            let history = try store.fetchHistory()
            if index == reference.states.count - 1 {
                #expect(history == reference.history, "history of the newest state (\(context))")
            }
            for transaction in history where transaction.token <= reference.history.last?.token ?? .init(rawValue: 0) {
                if let committed = reference.history.first(where: { $0.token == transaction.token }) {
                    #expect(transaction == committed, "history transaction \(transaction.token) (\(context))")
                }
            }
            if index == reference.states.count - 1 {
                #expect(try store.quarantinedRecords().count == reference.quarantined, "quarantine (\(context))")
            }
            let report = try store.verify()
            if report.isValid {
                tally.verifiedClean += 1
                // Verified sound: what was read is exactly one committed state (checked above),
                // and again now, after verify read every page.
                var again = FzState()
                for item in try read.fetch(FetchDescriptor<FzV2.Item>()) { again.items[item.id.rawValue] = item.record }
                for tag in try read.fetch(FetchDescriptor<FzV1.Tag>()) { again.tags[tag.id.rawValue] = tag.record }
                #expect(again == found, "a verified store reads differently (\(context))")
            } else {
                tally.verifyProblems += 1
            }
            if index == reference.states.count - 1 { tally.newest += 1 } else { tally.older += 1 }
        } catch {
            tally.typedErrors += 1
            fail(error, "open and read")
        }
        // Migrate on: V2 → V3 (lightweight) → V4 (custom).
        do {
            let store = try Store(at: FzStore.path, schema: FzV4.self, migrationPlan: FzPlanV4.self, configuration: FzStore.configuration(),
                                  fileSystem: fs)
            defer { try? store.close() }
            let read = Context(store)
            var items: [UInt64: FzV4.Item] = [:]
            for item in try read.fetch(FetchDescriptor<FzV4.Item>()) { items[item.id.rawValue] = item.record }
            var tags: [UInt64: FzV1.Tag] = [:]
            for tag in try read.fetch(FetchDescriptor<FzV1.Tag>()) { tags[tag.id.rawValue] = tag.record }
            if let state {
                #expect(items == state.items.mapValues(fzRewrite) && tags == state.tags, "migrated records (\(context))")
            } else {
                // The first open failed; the migration may still succeed (it reads less): its
                // records must then be one committed state's, transformed.
                #expect(reference.states.contains { $0.items.mapValues(fzRewrite) == items && $0.tags == tags },
                        "migrated records equal no committed state (\(context))")
            }
            tally.migrated += 1
        } catch {
            fail(error, "migration")
        }
    }

    /// Found by this campaign: a migration failing because the store's bytes are damaged was
    /// reported with the category of the step it was in (`schemaChange`) instead of `storage`.
    @Test func fuzzFinding1_migrationOnDamagedStoreReportsStorage() throws {
        var random = SeededRandom(seed: 0x5704_A6E)
        let reference = try FzStore.build(&random)
        var failures = 0
        // Each live page frame of the newest segment damaged in turn; the migration reads them.
        let newest = reference.files.keys.filter { $0.hasSuffix(".seg") }.sorted().last ?? ""
        for frame in fzFrames(of: reference.files[newest] ?? []) where frame.header.kind == .page {
            var files = reference.files
            files[newest]?[frame.offset + FrameHeader.size] ^= 0x40
            let fs = MemoryFileSystem(files: files)
            do {
                let store = try Store(at: FzStore.path, schema: FzV4.self, migrationPlan: FzPlanV4.self, configuration: FzStore.configuration(),
                                      fileSystem: fs)
                try store.close()
            } catch StrataError.migrationFailed(let report) {
                failures += 1
                #expect(report.category == .storage, "page \(frame.header.pageID) at \(frame.offset): \(report)")
            } catch {
                #expect(Self.isAcceptable(error), "page \(frame.header.pageID) at \(frame.offset): \(error)")
            }
        }
        #expect(failures > 0)
    }

    /// A store with a forged page: every operation returns or throws a `StrataError` (the
    /// data cannot be checked: a forged value is indistinguishable from a stored one).
    static func runForged(_ fs: MemoryFileSystem, files: [String: [UInt8]], tally: inout Tally, _ context: String) {
        func fail(_ error: any Error, _ step: String) {
            Self.fail(error, step, forged: true, files: files, tally: &tally, context)
        }
        do {
            let store = try Store(at: FzStore.path, schema: FzV2.self, migrationPlan: FzPlanV2.self, configuration: FzStore.configuration(),
                                  fileSystem: fs)
            defer { try? store.close() }
            let read = Context(store)
            for item in try read.fetch(FetchDescriptor<FzV2.Item>()) { _ = try read.record(for: item.id) }
            _ = try read.fetch(FetchDescriptor<FzV1.Tag>())
            _ = try read.fetch(FetchDescriptor<FzV2.Item>(predicate: #Predicate { $0.rank >= 3 && $0.rank < 9 }))
            _ = try read.fetch(FetchDescriptor<FzV2.Item>(predicate: #Predicate { $0.name == "item 8" }))
            _ = try store.fetchHistory()
            _ = try store.quarantinedRecords()
            if try store.verify().isValid { tally.verifiedClean += 1 } else { tally.verifyProblems += 1 }
            _ = try read.insert(FzV2.Item(name: "forged \(tally.runs)", rank: 4, note: "", score: 0, summary: ""))
            try read.save()
            tally.forgedOpened += 1
        } catch {
            tally.typedErrors += 1
            fail(error, "forged: open, read, write")
        }
        do {
            let store = try Store(at: FzStore.path, schema: FzV4.self, migrationPlan: FzPlanV4.self, configuration: FzStore.configuration(),
                                  fileSystem: fs)
            defer { try? store.close() }
            _ = try Context(store).fetch(FetchDescriptor<FzV4.Item>())
            tally.migrated += 1
        } catch {
            fail(error, "forged: migration")
        }
    }

    @Test func damagedStoresGiveCorrectDataOrTypedErrors() throws {
        let started = ContinuousClock.now
        let (seed, base) = FuzzConfiguration.generator(for: "store files")
        var random = base
        // Two stores: pages compressed when that pays, and never (so more forged pages keep
        // their frame's length).
        let references = [try FzStore.build(&random), try FzStore.build(&random, compression: false)]
        var tally = Tally()
        for reference in references {
            #expect(reference.quarantined > 0 && reference.files.keys.filter { $0.hasSuffix(".seg") }.count >= 3)
            // The undamaged store reads as its newest state, closed or not.
            Self.run(reference.files, reference: reference, tally: &tally, "undamaged, seed \(seed)")
            Self.run(reference.tailFiles, reference: reference, tally: &tally, "undamaged tail, seed \(seed)")
        }
        #expect(tally.newest == 4 && tally.migrated == 4 && tally.verifiedClean == 4)
        tally = Tally()
        let runs = 8_000 * FuzzConfiguration.multiplier
        var byMutation: [String: Int] = [:]
        for run in 0..<runs {
            // Half the runs damage a closed store, half one whose newest commits are in the log's
            // tail (replayed at open).
            let reference = references[(run / 2) % 2]
            var files = run % 2 == 0 ? reference.files : reference.tailFiles
            var done: [String] = ["\(run % 2 == 0 ? "closed" : "tail") \((run / 2) % 2 == 0 ? "compressed" : "uncompressed") store"]
            for _ in 0..<(random.next() % 4 == 0 ? 2 : 1) {
                var attempts = 0
                while attempts < 10 {
                    attempts += 1
                    // Forged pages drawn three times as often: they reach the most code.
                    let draw = Int(random.next() % UInt64(StoreMutation.allCases.count + 2))
                    let mutation = draw < StoreMutation.allCases.count ? StoreMutation.allCases[draw] : .forgedPage
                    if let what = mutation.apply(to: &files, older: reference.olderFiles, &random) {
                        done.append(what)
                        byMutation[mutation.description, default: 0] += 1
                        break
                    }
                }
            }
            tally.runs += 1
            tally.files += done.count - 1
            let forged = done.contains { $0.contains(" forged ") }
            if forged { tally.forged += 1 }
            Self.run(files, reference: reference, readOnly: run % 4 < 2, forged: forged, tally: &tally, "run \(run): \(done.joined(separator: "; ")), seed \(seed)")
        }
        FuzzConfiguration.report("store-files", ["files": tally.files, "mutations": tally.files, "stores": tally.runs,
                                                 "newest": tally.newest, "older": tally.older, "typedErrors": tally.typedErrors,
                                                 "verifiedClean": tally.verifiedClean, "verifyProblems": tally.verifyProblems,
                                                 "migrated": tally.migrated, "readOnlyReads": tally.readOnly,
                                                 "forged": tally.forged, "forgedOpened": tally.forgedOpened, "ms": Int((ContinuousClock.now - started) / .milliseconds(1))])
        print("fuzz: store-files mutations \(byMutation.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")); errors \(tally.errors.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))")
    }
}
