// swift-tools-version:6.0
// StrataBenchmarks — Strata measured side by side with its peers (SQLite, LMDB, RocksDB, or
// copying the same bytes), in one run, in release mode. See README.md in this folder.
//
//   swift run -c release StrataBenchmarks [--quick | --full] [--cores 1|2|both] [--only NAME[,NAME]] [--dir PATH] [--json PATH]
//   swift run StrataBenchmarkReport --results results/latest.json --charts results --chart-prefix latest-
import PackageDescription

let package = Package(
    name: "StrataBenchmarks",
    dependencies: [
        // Named explicitly so the product resolves whatever the checkout's folder is called
        // (a path dependency's identity is otherwise its folder name).
        .package(name: "Strata", path: ".."),
    ],
    targets: [
        // SQLite 3, the baseline of the record workloads. Only this package links it.
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        // LMDB, a peer of the engine and record workloads (durable commits, memory-mapped reads).
        .systemLibrary(
            name: "CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"]), .brew(["lmdb"])]
        ),
        // RocksDB through its C API (`rocksdb/c.h`), a peer of the same workloads.
        .systemLibrary(
            name: "CRocksDB",
            pkgConfig: "rocksdb",
            providers: [.apt(["librocksdb-dev"]), .brew(["rocksdb"])]
        ),
        .executableTarget(
            name: "StrataBenchmarks",
            dependencies: [
                .product(name: "Strata", package: "Strata"),
                "CSQLite",
                "CLMDB",
                "CRocksDB",
            ]
        ),
        // The report generator: the README's benchmark table and the SVG charts, made from
        // results files. Foundation only, so `make bench-check` builds it without the library.
        .target(name: "BenchmarkReport"),
        .executableTarget(name: "StrataBenchmarkReport", dependencies: ["BenchmarkReport"]),
        .testTarget(name: "BenchmarkReportTests", dependencies: ["BenchmarkReport"]),
    ],
    swiftLanguageModes: [.v6]
)
