import Testing
import StrataTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// How long and from where the fuzz tests run: `STRATA_FUZZ_SEED` (a UInt64) replays a run,
/// `STRATA_FUZZ_ITERATIONS` (a multiplier, default 1) makes every campaign that many times
/// longer. Each campaign prints its seed and what it tried, in one line starting `fuzz:`, so a
/// failure can be reproduced and the default run's figures read from the log.
enum FuzzConfiguration {
    /// The seed every campaign derives its own from: `STRATA_FUZZ_SEED`, else a fixed one (so
    /// CI runs are reproducible; set the variable to explore other inputs).
    static let seed: UInt64 = {
        if let text = getenv("STRATA_FUZZ_SEED"), let value = UInt64(String(cString: text)) { return value }
        return 0x5EED_F022
    }()

    /// `STRATA_FUZZ_ITERATIONS`, at least 1.
    static let multiplier: Int = {
        if let text = getenv("STRATA_FUZZ_ITERATIONS"), let value = Int(String(cString: text)), value > 0 { return value }
        return 1
    }()

    /// A generator for the campaign `name`: the run's seed mixed with the name, so campaigns
    /// stay independent when one of them changes how many values it draws.
    static func generator(for name: String) -> (seed: UInt64, random: SeededRandom) {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325  // FNV-1a
        for byte in name.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        let campaignSeed = seed ^ hash
        return (campaignSeed, SeededRandom(seed: campaignSeed))
    }

    /// Prints a campaign's figures: `fuzz: <name> seed=<run seed> <figures>`.
    static func report(_ name: String, _ figures: KeyValuePairs<String, Int>) {
        let text = figures.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        print("fuzz: \(name) seed=\(seed) \(text) (replay: STRATA_FUZZ_SEED=\(seed) swift test -c release --filter StrataFuzzTests)")
    }
}

@Suite struct FuzzConfigurationTests {
    @Test func campaignsGetDistinctReproducibleGenerators() {
        var (seedA, a1) = FuzzConfiguration.generator(for: "a")
        var (seedA2, a2) = FuzzConfiguration.generator(for: "a")
        let (seedB, _) = FuzzConfiguration.generator(for: "b")
        #expect(seedA == seedA2)
        #expect(seedA != seedB)
        #expect(a1.next() == a2.next())
    }
}
