extension FrameCodec {
    /// The stored payload of a page stored for partial reads (codec 3, format version 3;
    /// Docs/FileFormat.md, "Codecs"):
    ///
    ///     prefixLength:u32  blockSize:u32
    ///     blockCount × (storedLength:u32, checksum:u32)
    ///     prefix       the page's first prefixLength bytes, raw
    ///     blocks       block i: the page's bytes prefixLength + i·blockSize ..< (+ blockSize, or the end)
    ///
    /// with blockCount = ⌈(rawLength − prefixLength) / blockSize⌉. A block is one LZ4 block,
    /// or its raw bytes when bit 31 of its stored length is set (LZ4 would not make it
    /// smaller); its checksum is the CRC32C of its stored bytes. The frame header's checksum
    /// covers the table and the prefix (`headLength` bytes), so a reader checks the page's
    /// directory and the blocks it reads, and no others.
    package struct BlockLayout {
        /// The two `u32` before the table.
        package static let fixedSize = 8
        /// One table entry: stored length and checksum.
        package static let entrySize = 8
        /// Bit 31 of an entry's stored length: the block is stored raw.
        package static let rawFlag: UInt32 = 1 << 31
        /// The smallest block size a valid payload names.
        package static let minimumBlockSize = 64

        /// One block's table entry.
        package struct Entry {
            /// The block's stored bytes.
            package var storedLength: Int
            /// Whether the block is stored raw (else it is one LZ4 block).
            package var isRaw: Bool
            /// The CRC32C of the stored bytes.
            package var checksum: UInt32
        }

        /// The sizes, as the payload's two leading fields give them.
        private let shape: Shape
        private let stored: UnsafeRawBufferPointer

        package var rawLength: Int { shape.rawLength }
        package var prefixLength: Int { shape.prefixLength }
        package var blockSize: Int { shape.blockSize }
        package var blockCount: Int { shape.blockCount }
        /// The table and prefix: the stored bytes the frame header's checksum covers.
        package var headLength: Int { shape.headLength }

        /// The shape `stored` (the payload of a codec 3 frame of `rawLength` raw bytes) names,
        /// or nil when its two leading fields are invalid or its table and prefix do not fit.
        private static func shape(rawLength: Int, stored: UnsafeRawBufferPointer) -> Shape? {
            guard stored.count >= fixedSize else { return nil }
            let prefixLength = Int(UInt32(littleEndian: stored.loadUnaligned(fromByteOffset: 0, as: UInt32.self)))
            let blockSize = Int(UInt32(littleEndian: stored.loadUnaligned(fromByteOffset: 4, as: UInt32.self)))
            guard prefixLength <= rawLength, blockSize >= minimumBlockSize, blockSize <= FrameHeader.maximumRawLength else { return nil }
            let shape = Shape(rawLength: rawLength, prefixLength: prefixLength, blockSize: blockSize)
            return shape.headLength <= stored.count ? shape : nil
        }

        /// The length of the table and prefix of `stored` (the payload of a codec 3 frame of
        /// `rawLength` raw bytes), or nil when its two leading fields are invalid or the table
        /// and prefix do not fit.
        package static func headLength(rawLength: Int, stored: UnsafeRawBufferPointer) -> Int? {
            shape(rawLength: rawLength, stored: stored)?.headLength
        }

        /// Reads the layout of `stored`, a codec 3 payload of `rawLength` raw bytes, checking
        /// that the table and prefix fit and that the blocks' stored lengths fill the rest
        /// exactly, each possible for its raw size. (Checksums are checked by the reader:
        /// `FrameCodec.isHeadIntact`, `verifiedBlock`.)
        /// - Throws: `FormatError` naming the first inconsistency.
        package init(rawLength: Int, stored: UnsafeRawBufferPointer) throws {
            guard let shape = Self.shape(rawLength: rawLength, stored: stored) else {
                throw FormatError("LZ4 block table does not fit a \(stored.count)-byte payload of \(rawLength) bytes", at: FrameHeader.size)
            }
            self.shape = shape
            self.stored = stored
            // Every block but the last holds `blockSize` raw bytes: one bound for all of them.
            // (A reader checks this table for every page it opens.)
            guard shape.blockCount > 0, let base = stored.baseAddress else {
                guard shape.headLength == stored.count else {
                    throw FormatError("LZ4 blocks end at payload offset \(shape.headLength), the payload at \(stored.count)", at: FrameHeader.size)
                }
                return
            }
            let last = shape.blockCount - 1
            let lastRaw = shape.rawLength - shape.prefixLength - last * shape.blockSize
            let fullBound = LZ4Codec.bound(shape.blockSize), lastBound = LZ4Codec.bound(lastRaw)
            // Each stored length is below 2^31 and checked against what is left of the payload
            // before it is added, and the table lies within the head: the arithmetic wraps
            // rather than checks.
            let end = stored.count
            var position = shape.headLength
            var index = 0
            while index <= last {
                let length = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: Self.fixedSize &+ index &* Self.entrySize, as: UInt32.self))
                let storedLength = Int(length & ~Self.rawFlag)
                let isLast = index == last
                let possible = length & Self.rawFlag != 0 ? storedLength == (isLast ? lastRaw : shape.blockSize)
                    : storedLength > 0 && storedLength <= (isLast ? lastBound : fullBound)
                guard possible, storedLength <= end &- position else {
                    let raw = isLast ? lastRaw : shape.blockSize
                    throw FormatError("LZ4 block \(index) of \(storedLength) stored bytes impossible for \(raw) bytes at payload offset \(position)",
                                      at: FrameHeader.size + Self.fixedSize + index * Self.entrySize)
                }
                position &+= storedLength
                index &+= 1
            }
            guard position == stored.count else {
                throw FormatError("LZ4 blocks end at payload offset \(position), the payload at \(stored.count)", at: FrameHeader.size)
            }
        }

        /// The page's first `prefixLength` bytes, as stored (raw).
        package var prefix: UnsafeRawBufferPointer {
            UnsafeRawBufferPointer(rebasing: stored[(headLength - prefixLength)..<headLength])
        }

        /// Block `index`'s table entry.
        package func entry(_ index: Int) -> Entry {
            let at = Self.fixedSize + index * Self.entrySize
            let length = UInt32(littleEndian: stored.loadUnaligned(fromByteOffset: at, as: UInt32.self))
            return Entry(storedLength: Int(length & ~Self.rawFlag), isRaw: length & Self.rawFlag != 0,
                         checksum: UInt32(littleEndian: stored.loadUnaligned(fromByteOffset: at + 4, as: UInt32.self)))
        }

        /// The page bytes block `index` holds.
        package func rawRange(_ index: Int) -> Range<Int> { shape.rawRange(index) }

        /// Calls `body` with each block in order: its index, table entry and stored bytes.
        package func forEachBlock(_ body: (Int, Entry, UnsafeRawBufferPointer) throws -> Void) rethrows {
            var position = headLength
            for index in 0..<blockCount {
                let entry = self.entry(index)
                try body(index, entry, UnsafeRawBufferPointer(rebasing: stored[position..<(position + entry.storedLength)]))
                position += entry.storedLength
            }
        }

        /// The block holding page byte `offset` (≥ `prefixLength`, < `rawLength`).
        package func blockIndex(containing offset: Int) -> Int { (offset - prefixLength) / blockSize }

        /// Block `index`'s stored bytes, after checking its checksum (unless `checked`: it was).
        /// - Throws: `FormatError` when the checksum does not match.
        package func verifiedBlock(_ index: Int, checked: Bool = false) throws -> (bytes: UnsafeRawBufferPointer, entry: Entry) {
            var position = headLength
            for before in 0..<index { position += entry(before).storedLength }
            let entry = self.entry(index)
            let bytes = UnsafeRawBufferPointer(rebasing: stored[position..<(position + entry.storedLength)])
            if !checked { MemoryHint.prefetch(bytes) }
            guard checked || CRC32C.checksum(bytes) == entry.checksum else {
                throw FormatError("LZ4 block \(index) checksum mismatch", at: FrameHeader.size + position)
            }
            return (bytes, entry)
        }

        /// Expands block `index` (its stored `bytes`, described by `entry`) into `destination`
        /// — the block's raw bytes from its start, as many as `destination` holds (all of them
        /// or fewer: LZ4 stops there).
        /// - Throws: `FormatError` for malformed LZ4 data.
        package func expand(_ bytes: UnsafeRawBufferPointer, _ entry: Entry, index: Int,
                            into destination: UnsafeMutableRawBufferPointer) throws {
            let raw = rawRange(index).count
            guard destination.count <= raw else { throw FormatError("\(destination.count) bytes asked of a \(raw)-byte block") }
            guard destination.count > 0 else { return }
            if entry.isRaw {
                if let target = destination.baseAddress, let source = bytes.baseAddress {
                    target.copyMemory(from: source, byteCount: destination.count)
                }
            } else if destination.count == raw {
                try LZ4Codec.decompress(bytes, into: destination)
            } else {
                try LZ4Codec.decompressPrefix(bytes, into: destination)
            }
        }

        /// The shape of a payload being written: the sizes `BlockLayout` reads back.
        package struct Shape {
            package let rawLength: Int
            package let prefixLength: Int
            package let blockSize: Int
            package let blockCount: Int
            package let headLength: Int

            package init(rawLength: Int, prefixLength: Int, blockSize: Int) {
                self.rawLength = rawLength
                self.prefixLength = prefixLength
                self.blockSize = blockSize
                blockCount = (rawLength - prefixLength + blockSize - 1) / blockSize
                headLength = BlockLayout.fixedSize + blockCount * BlockLayout.entrySize + prefixLength
            }

            /// The page bytes block `index` holds.
            package func rawRange(_ index: Int) -> Range<Int> {
                let start = prefixLength + index * blockSize
                return start..<min(rawLength, start + blockSize)
            }

            /// The most stored bytes `write` produces.
            package var storedBound: Int {
                var bound = headLength
                for index in 0..<blockCount { bound += max(LZ4Codec.bound(rawRange(index).count), 1) }
                return bound
            }

            /// Writes `payload` (`rawLength` bytes) into `destination` (at least `storedBound`
            /// bytes) in this layout, each block compressed by `compress` (nil, or no smaller
            /// than the block: stored raw); returns the stored length.
            package func write(_ payload: UnsafeRawBufferPointer, into destination: UnsafeMutableRawBufferPointer,
                               compress: (UnsafeRawBufferPointer, UnsafeMutableRawBufferPointer) -> Int?) -> Int {
                destination.storeBytes(of: UInt32(prefixLength).littleEndian, toByteOffset: 0, as: UInt32.self)
                destination.storeBytes(of: UInt32(blockSize).littleEndian, toByteOffset: 4, as: UInt32.self)
                if prefixLength > 0, let target = destination.baseAddress, let source = payload.baseAddress {
                    (target + headLength - prefixLength).copyMemory(from: source, byteCount: prefixLength)
                }
                var position = headLength
                for index in 0..<blockCount {
                    let source = UnsafeRawBufferPointer(rebasing: payload[rawRange(index)])
                    var length: UInt32
                    if let produced = compress(source, UnsafeMutableRawBufferPointer(rebasing: destination[position...])), produced < source.count {
                        length = UInt32(produced)
                    } else {
                        if let target = destination.baseAddress, let base = source.baseAddress {
                            (target + position).copyMemory(from: base, byteCount: source.count)
                        }
                        length = UInt32(source.count) | BlockLayout.rawFlag
                    }
                    let stored = Int(length & ~BlockLayout.rawFlag)
                    let checksum = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: destination[position..<(position + stored)]))
                    let at = BlockLayout.fixedSize + index * BlockLayout.entrySize
                    destination.storeBytes(of: length.littleEndian, toByteOffset: at, as: UInt32.self)
                    destination.storeBytes(of: checksum.littleEndian, toByteOffset: at + 4, as: UInt32.self)
                    position += stored
                }
                return position
            }
        }
    }
}
