// swift-tools-version:6.0
// Strata — an embeddable, log-structured storage engine with its own on-disk format.
// Layers (each target imports only the ones below it):
//   StrataIO, StrataFormat → StrataPageLog → StrataSchema + StrataRecords → StrataHistory
//   → StrataMigration → Strata (the public API, declared in Sources/Strata/PublicAPI.swift)
//   → StrataToolCore → StrataTool (the `strata` command-line tool, Docs/Tools.md)
import PackageDescription
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

let package = Package(
    name: "Strata",
    products: [
        .library(name: "Strata", targets: ["Strata"]),
        // The `strata` command-line tool (Docs/Tools.md).
        .executable(name: "strata", targets: ["StrataTool"]),
    ],
    targets: [
        // liblz4, the only outside dependency of the library.
        .systemLibrary(
            name: "CLZ4",
            pkgConfig: "liblz4",
            providers: [.apt(["liblz4-dev"]), .brew(["lz4"])]
        ),
        // CRC32C (Castagnoli) with SSE4.2 / ARMv8 CRC when the CPU has it, portable fallback otherwise.
        .target(name: "CStrataChecksum"),
        // I/O layer: the only layer that makes system calls.
        .target(name: "StrataIO"),
        // Format layer: pure byte codecs, checksums, LZ4. No I/O.
        .target(name: "StrataFormat", dependencies: ["CLZ4", "CStrataChecksum"]),
        // Page log: segments, page table, transactions, snapshots, checkpoints, recovery, compaction.
        .target(name: "StrataPageLog", dependencies: ["StrataIO", "StrataFormat"]),
        // Records: record trees (B+trees of records keyed by id) on the page log.
        .target(name: "StrataRecords", dependencies: ["StrataPageLog", "StrataSchema", "StrataFormat", "StrataIO"]),
        // Records & schema (pure parts): schema model, checksum, catalog, record encoding, typed records.
        .target(name: "StrataSchema", dependencies: ["StrataFormat"]),
        // History: the journal's queries (descriptors, decoded transactions), journaling settings, retention.
        .target(name: "StrataHistory", dependencies: ["StrataRecords", "StrataPageLog", "StrataSchema"]),
        // Migration: plan check, runner, streaming stages and transform pipeline, quarantine.
        .target(name: "StrataMigration", dependencies: ["StrataHistory", "StrataRecords", "StrataPageLog", "StrataSchema", "StrataFormat", "StrataIO"]),
        // The public face.
        .target(name: "Strata", dependencies: ["StrataMigration", "StrataHistory", "StrataRecords", "StrataPageLog", "StrataFormat", "StrataIO", "StrataSchema"]),
        // The `strata` tool's commands, above the public API (reading stores through their own
        // catalog, with `package` access to Strata); tests run them in-process.
        .target(name: "StrataToolCore", dependencies: ["Strata", "StrataSchema", "StrataIO"]),
        // The `strata` executable: arguments and standard streams in, exit status out.
        .executableTarget(name: "StrataTool", dependencies: ["StrataToolCore", "StrataIO"]),
        // Shared test support: seeded random generator, model helpers.
        .target(name: "StrataTestSupport", path: "Tests/StrataTestSupport"),
        .testTarget(name: "StrataFormatTests", dependencies: ["StrataFormat", "StrataTestSupport"]),
        .testTarget(name: "StrataIOTests", dependencies: ["StrataIO", "StrataTestSupport"]),
        .testTarget(name: "StrataPageLogTests", dependencies: ["StrataPageLog", "StrataFormat", "StrataIO", "StrataTestSupport"],
                    exclude: ["Fixtures"]),  // golden stores, read from the source tree
        .testTarget(name: "StrataRecordsTests", dependencies: ["StrataRecords", "StrataSchema", "StrataPageLog", "StrataIO", "StrataTestSupport"]),
        .testTarget(name: "StrataSchemaTests", dependencies: ["StrataSchema", "StrataFormat", "StrataTestSupport"]),
        .testTarget(name: "StrataTests", dependencies: ["Strata", "StrataMigration", "StrataIO", "StrataTestSupport"],
                    exclude: ["Fixtures"]),  // golden record stores, read from the source tree
        .testTarget(name: "StrataToolTests", dependencies: ["StrataToolCore", "Strata", "StrataRecords", "StrataPageLog", "StrataIO", "StrataTestSupport"]),
        // Seeded, bounded fuzzing of every layer (STRATA_FUZZ_SEED, STRATA_FUZZ_ITERATIONS).
        .testTarget(name: "StrataFuzzTests",
                    dependencies: ["Strata", "StrataRecords", "StrataSchema", "StrataPageLog", "StrataFormat", "StrataIO", "StrataTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)

// The libFuzzer executable (Tests/Fuzzer, Docs/Testing.md "libFuzzer"), declared only when
// STRATA_LIBFUZZER is set — by Scripts/fuzz.sh, which builds it with
// `--sanitize fuzzer --sanitize address` in its own build folder. It lives in this package
// because the decoders it drives are `package` (or internal) declarations a separate package
// cannot reach; declaring it only on request keeps `swift build`, `swift test`, `make test`
// and `make bench` from building it (it has no `main` of its own: libFuzzer supplies it).
if getenv("STRATA_LIBFUZZER") != nil {
    package.targets.append(
        .executableTarget(name: "StrataFuzzer",
                          dependencies: ["Strata", "StrataRecords", "StrataSchema", "StrataPageLog", "StrataFormat", "StrataIO"],
                          path: "Tests/Fuzzer/StrataFuzzer"))
    package.products.append(.executable(name: "StrataFuzzer", targets: ["StrataFuzzer"]))
}
