import CLZ4

/// LZ4 block compression. This is the only file in Strata that imports liblz4.
/// Docs/FileFormat.md, "Codecs".
package enum LZ4Codec {
    /// The largest input LZ4 accepts.
    package static let maximumInputSize = Int(LZ4_MAX_INPUT_SIZE)

    /// The worst-case compressed size of `count` bytes: liblz4's `LZ4_COMPRESSBOUND` (0 past
    /// `maximumInputSize`), computed here rather than called — a reader checks it for every
    /// block of a page it opens.
    @inline(__always)
    package static func bound(_ count: Int) -> Int {
        guard count >= 0, count <= maximumInputSize else { return 0 }
        return count + count / 255 + 16
    }

    /// Compresses `source` into `destination`; returns the compressed size, or nil when the
    /// result would not fit (the caller then stores the bytes raw).
    package static func compress(_ source: UnsafeRawBufferPointer, into destination: UnsafeMutableRawBufferPointer) -> Int? {
        guard source.count > 0, source.count <= maximumInputSize, let src = source.baseAddress,
              let dst = destination.baseAddress else { return nil }
        let written = LZ4_compress_default(
            src.assumingMemoryBound(to: CChar.self), dst.assumingMemoryBound(to: CChar.self),
            Int32(source.count), Int32(min(destination.count, Int(Int32.max))))
        return written > 0 ? Int(written) : nil
    }

    /// Compresses `source` into `destination` as `compress(_:into:)` does — the same bytes:
    /// liblz4's one-shot compression (`LZ4_compress_fast_extState`, which `LZ4_compress_default`
    /// runs on a state of its own) — in `compressor`'s state instead of a new one on the stack.
    /// The state is cleared at each call, so the output depends on the input alone, whatever
    /// the state compressed before: the page log's frame pipeline relies on this (its worker
    /// and the writer compress with different states, and must write the same bytes). Below
    /// 64 KiB liblz4 uses its 16-bit table here, about a quarter faster on a 4 KiB page than
    /// the streaming call with a fast reset, and it finds as many matches.
    package static func compress(_ source: UnsafeRawBufferPointer, into destination: UnsafeMutableRawBufferPointer,
                                 using compressor: LZ4Compressor) -> Int? {
        guard source.count > 0, source.count <= maximumInputSize, let src = source.baseAddress,
              let dst = destination.baseAddress else { return nil }
        let written = LZ4_compress_fast_extState(
            UnsafeMutableRawPointer(compressor.stream), src.assumingMemoryBound(to: CChar.self), dst.assumingMemoryBound(to: CChar.self),
            Int32(source.count), Int32(min(destination.count, Int(Int32.max))), 1)
        return written > 0 ? Int(written) : nil
    }

    /// Decompresses `source`, which must expand to exactly `destination.count` bytes.
    /// Throws `FormatError` for malformed input; `LZ4_decompress_safe` never reads or writes
    /// outside the two buffers, whatever the input.
    package static func decompress(_ source: UnsafeRawBufferPointer, into destination: UnsafeMutableRawBufferPointer) throws {
        guard destination.count > 0 else {
            if source.count == 0 { return }
            throw FormatError("LZ4 data for an empty page")
        }
        guard let src = source.baseAddress, let dst = destination.baseAddress, source.count > 0 else {
            throw FormatError("empty LZ4 data for a \(destination.count)-byte page")
        }
        let produced = LZ4_decompress_safe(
            src.assumingMemoryBound(to: CChar.self), dst.assumingMemoryBound(to: CChar.self),
            Int32(source.count), Int32(destination.count))
        guard produced == Int32(destination.count) else {
            throw FormatError(produced < 0
                ? "malformed LZ4 data"
                : "LZ4 data expands to \(produced) bytes, header says \(destination.count)")
        }
    }

    /// Decompresses the first `destination.count` bytes of the block `source` (LZ4
    /// `LZ4_decompress_safe_partial`, which stops decoding there), which must expand to at
    /// least that many bytes. Throws `FormatError` for malformed input; like `decompress`, it
    /// never reads or writes outside the two buffers, whatever the input.
    package static func decompressPrefix(_ source: UnsafeRawBufferPointer, into destination: UnsafeMutableRawBufferPointer) throws {
        guard destination.count > 0 else { return }
        guard let src = source.baseAddress, let dst = destination.baseAddress, source.count > 0 else {
            throw FormatError("empty LZ4 data for a \(destination.count)-byte prefix")
        }
        let produced = LZ4_decompress_safe_partial(
            src.assumingMemoryBound(to: CChar.self), dst.assumingMemoryBound(to: CChar.self),
            Int32(source.count), Int32(destination.count), Int32(destination.count))
        guard produced == Int32(destination.count) else {
            throw FormatError(produced < 0
                ? "malformed LZ4 data"
                : "LZ4 data expands to \(produced) bytes, fewer than the \(destination.count) needed")
        }
    }
}

/// A reusable LZ4 compression state (`LZ4_stream_t`, about 16 KiB), for a writer that
/// compresses many pages one after another: memory it keeps instead of a new state on the
/// stack per page. Used by one thread at a time (its owner's lock).
package final class LZ4Compressor: @unchecked Sendable {
    let stream: UnsafeMutablePointer<LZ4_stream_t>

    /// A new state; nil only when memory for it cannot be had.
    package init?() {
        guard let stream = LZ4_createStream() else { return nil }
        self.stream = stream
    }

    deinit { LZ4_freeStream(stream) }
}
