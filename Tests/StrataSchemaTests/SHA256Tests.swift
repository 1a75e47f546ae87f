import Testing
import StrataSchema
import StrataTestSupport

@Suite struct SHA256Tests {
    @Test func matchesTheFIPS180TestVectors() {
        #expect(hex(SHA256.hash(Array("".utf8))) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(hex(SHA256.hash(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(hex(SHA256.hash(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)))
            == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        let long = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"
        #expect(hex(SHA256.hash(Array(long.utf8))) == "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1")
    }

    @Test func hashesAMillionBytes() {
        #expect(hex(SHA256.hash(repeatElement(UInt8(ascii: "a"), count: 1_000_000)))
            == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// Padding edges: 55 bytes fit one block with the length, 56 need a second, 64 is exactly one.
    @Test func paddingBoundaries() {
        #expect(hex(SHA256.hash(repeatElement(UInt8(ascii: "a"), count: 55)))
            == "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318")
        #expect(hex(SHA256.hash(repeatElement(UInt8(ascii: "a"), count: 56)))
            == "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a")
        #expect(hex(SHA256.hash(repeatElement(UInt8(ascii: "a"), count: 64)))
            == "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb")
    }

    /// Feeding a message in pieces (byte by byte, random splits) gives the same digest as all at once.
    @Test func piecewiseUpdatesMatchOneShot() {
        let seed = SeededRandom.seed(default: 0x5AA256)
        print("SHA256Tests.piecewiseUpdatesMatchOneShot seed: \(seed)")
        var random = SeededRandom(seed: seed)
        for length in [0, 1, 63, 64, 65, 127, 128, 129, 1000] {
            let message = random.bytes(length)
            let expected = SHA256.hash(message)
            var byteAtATime = SHA256()
            for byte in message { byteAtATime.update(CollectionOfOne(byte)) }
            #expect(byteAtATime.finalize() == expected, "length \(length), seed \(seed)")
            var pieces = SHA256()
            var start = 0
            while start < length {
                let end = min(length, start + Int.random(in: 1...70, using: &random))
                pieces.update(message[start..<end])
                start = end
            }
            #expect(pieces.finalize() == expected, "length \(length), seed \(seed)")
        }
    }
}
