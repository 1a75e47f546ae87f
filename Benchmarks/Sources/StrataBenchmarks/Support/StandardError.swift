import Foundation

/// Messages for the person running the benchmarks; standard output is kept for results.
enum StandardError {
    static func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }
}
