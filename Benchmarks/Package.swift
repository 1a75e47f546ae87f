// swift-tools-version:6.0
// StrataBenchmarks — Strata measured side by side with a baseline (SQLite, or copying the same
// bytes), in one run, in release mode. See README.md in this folder.
//
//   swift run -c release StrataBenchmarks [--quick | --full] [--only NAME[,NAME]] [--dir PATH] [--json PATH]
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
        .executableTarget(
            name: "StrataBenchmarks",
            dependencies: [
                .product(name: "Strata", package: "Strata"),
                "CSQLite",
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
