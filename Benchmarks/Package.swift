// swift-tools-version:6.0
// StrataBenchmarks — Strata measured side by side with a baseline (SQLite, or copying the same
// bytes), in one run, in release mode. See README.md in this folder.
//
//   swift run -c release StrataBenchmarks [--quick | --full] [--only NAME[,NAME]] [--dir PATH] [--json PATH]
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
    ],
    swiftLanguageModes: [.v6]
)
