@_spi(Engine) import Strata

extension PageStore {
    /// Reads back a spread of the pages in `ids` and checks that each holds
    /// `pageSet.page(at: id)`. Returns how many pages were compared; throws
    /// `BenchmarkError.verificationFailed` naming the first page that is missing or differs.
    func verifyPages(_ ids: [UInt64], against pageSet: RecordPageSet, sampleCount: Int = 512) throws -> Int {
        let sample = Sample.evenlySpread(count: sampleCount, in: ids.count)
        for index in sample {
            let id = ids[index]
            guard let bytes = try read(pageID: id) else {
                throw BenchmarkError.verificationFailed("page id \(id) (written \(index + 1) of \(ids.count)) is missing")
            }
            let expected = pageSet.page(at: id)
            guard bytes == expected else {
                throw BenchmarkError.verificationFailed(
                    "page id \(id) (written \(index + 1) of \(ids.count)): \(Sample.firstDifference(bytes, expected))")
            }
        }
        return sample.count
    }

    /// Checks a store whose page ids are not known (one recovered after a writer was
    /// killed): probes a spread of ids in `0...upperBound`; every page that exists must hold
    /// `pageSet.page(at: id)`. Returns how many pages were found and compared.
    func verifyExistingPages(upTo upperBound: UInt64, against pageSet: RecordPageSet, sampleCount: Int = 512) throws -> Int {
        let probes = Sample.evenlySpread(count: sampleCount, in: Int(clamping: upperBound) + 1)
        var found = 0
        for probe in probes {
            let id = UInt64(probe)
            guard let bytes = try read(pageID: id) else { continue }
            let expected = pageSet.page(at: id)
            guard bytes == expected else {
                throw BenchmarkError.verificationFailed("page id \(id): \(Sample.firstDifference(bytes, expected))")
            }
            found += 1
        }
        return found
    }
}
