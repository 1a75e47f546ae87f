#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataFormat
import StrataIO
#if canImport(Glibc)
import Glibc
#endif

// libFuzzer's entry points (built with STRATA_LIBFUZZER and `-sanitize=fuzzer`, which links
// libFuzzer's own `main`). Scripts/fuzz.sh builds and runs it; Docs/Testing.md explains how.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let data, count > 0 else { return 0 }
    runFuzzInput(UnsafeRawBufferPointer(start: data, count: count))
    return 0
}

/// With `STRATA_FUZZ_WRITE_CORPUS=<folder>` set, writes the seed corpus there and exits
/// (Scripts/fuzz.sh --seed-corpus).
@_cdecl("LLVMFuzzerInitialize")
public func fuzzerInitialize(_ argc: UnsafeMutablePointer<CInt>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?) -> CInt {
    if let folder = getenv("STRATA_FUZZ_WRITE_CORPUS") {
        do {
            try writeSeedCorpus(to: String(cString: folder))
            exit(0)
        } catch {
            print("StrataFuzzer: cannot write the seed corpus: \(error)")
            exit(1)
        }
    }
    return 0
}
