#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Testing
import StrataSchema
import StrataFormat
import StrataTestSupport

/// A record with large data values between small ones, coded by its `Codable` conformance.
struct Attachment: PersistentRecord, Equatable {
    var title: String
    var payload: Data
    var thumbnail: [UInt8]
    var size: Int
    var caption: String?
}

/// The same record coded by hand (`RecordWriter`).
struct HandCodedAttachment: PersistentRecord, Equatable {
    static var entityName: String { "Attachment" }
    var attachment: Attachment

    init(_ attachment: Attachment) { self.attachment = attachment }
    init(from decoder: any Decoder) throws { attachment = try Attachment(from: decoder) }
    func encode(to encoder: any Encoder) throws { try attachment.encode(to: encoder) }

    func encode(to writer: inout RecordWriter) throws {
        writer.encode(attachment.title, forKey: "title")
        writer.encode(attachment.payload, forKey: "payload")
        try writer.encode(attachment.thumbnail, forKey: "thumbnail")
        writer.encode(attachment.size, forKey: "size")
        writer.encode(attachment.caption, forKey: "caption")
    }
}

/// Large data values (`RecordEncodingSession.splicedPayloadMinimum` bytes or more) are kept by
/// reference while a record is encoded and copied once, into the finished record — or not at
/// all when the record is taken in pieces (a bulk insert): the same bytes as a value encoded
/// the general way, whichever path, field order and size.
@Suite struct LargePayloadCodingTests {
    /// Ids in declaration order: the fields come in ascending order.
    static let inOrder = RecordLayout(attributes: [("title", 1, .null), ("payload", 2, .null), ("thumbnail", 3, .null),
                                                   ("size", 4, .null), ("caption", 5, .null)])
    /// Ids out of declaration order: the fields are reordered when the record is finished.
    static let outOfOrder = RecordLayout(attributes: [("title", 3, .null), ("payload", 1, .null), ("thumbnail", 5, .null),
                                                      ("size", 2, .null), ("caption", 4, .null)])

    static func attachment(payload: Int, thumbnail: Int, seed: UInt64) -> Attachment {
        var random = SeededRandom(seed: seed)
        return Attachment(title: "photo \(seed)", payload: Data(random.bytes(payload)), thumbnail: random.bytes(thumbnail),
                          size: payload, caption: seed % 2 == 0 ? "a caption" : nil)
    }

    /// The record's bytes the general way: its values, encoded by `RecordCodec`.
    static func reference(_ attachment: Attachment, _ layout: RecordLayout) -> [UInt8] {
        let values: [String: Value] = ["title": .string(attachment.title), "payload": .data([UInt8](attachment.payload)),
                                       "thumbnail": .data(attachment.thumbnail), "size": .int(Int64(attachment.size)),
                                       "caption": attachment.caption.map(Value.string) ?? .null]
        return RecordCodec.encode(fields: values.map { (id: layout.attributeIDs[$0.key]!, value: $0.value) })
    }

    static let sizes = [0, 5, RecordEncodingSession.splicedPayloadMinimum - 1, RecordEncodingSession.splicedPayloadMinimum,
                        RecordEncodingSession.splicedPayloadMinimum + 1, 300_007]

    @Test(arguments: [true, false])
    func largeDataEncodesToTheBytesOfItsValue(inOrder: Bool) throws {
        let layout = inOrder ? Self.inOrder : Self.outOfOrder
        let session = RecordEncodingSession(layout: layout), handSession = RecordEncodingSession(layout: layout)
        for (index, payload) in Self.sizes.enumerated() {
            for thumbnail in [3, RecordEncodingSession.splicedPayloadMinimum + 9] {
                let attachment = Self.attachment(payload: payload, thumbnail: thumbnail, seed: UInt64(index))
                let expected = Self.reference(attachment, layout)
                let what = "payload \(payload), thumbnail \(thumbnail)"
                #expect(try RecordEncoder().encode(attachment, layout: layout) == expected, "\(what)")
                #expect(try RecordEncoder().encode(HandCodedAttachment(attachment), layout: layout) == expected, "\(what), by hand")
                // A session reused from record to record, large and small in turn.
                #expect(try session.encode(attachment) == expected, "\(what), session")
                #expect(Array(try handSession.encodeInPlace(HandCodedAttachment(attachment))) == expected, "\(what), in place")
            }
        }
    }

    /// A record holding a large payload comes in pieces, its payload's straight from the
    /// caller's value (the same memory: not copied); other records come whole as before.
    @Test(arguments: [true, false])
    func piecesHoldTheCallersPayloadUncopied(inOrder: Bool) throws {
        let layout = inOrder ? Self.inOrder : Self.outOfOrder
        let session = RecordEncodingSession(layout: layout)
        for (index, payload) in (Self.sizes + [0]).enumerated() {
            let attachment = Self.attachment(payload: payload, thumbnail: 40, seed: UInt64(index))
            let expected = Self.reference(attachment, layout)
            let spliced = payload >= RecordEncodingSession.splicedPayloadMinimum
            if let bytes = try session.encodeInPlaceUnlessSpliced(HandCodedAttachment(attachment)) {
                #expect(!spliced, "payload \(payload) was assembled")
                #expect(Array(bytes) == expected, "payload \(payload)")
                continue
            }
            #expect(spliced, "payload \(payload) came in pieces")
            var joined: [UInt8] = [], shared = false
            try session.withPieces { pieces in
                for piece in pieces { joined.append(contentsOf: piece) }
                attachment.payload.withUnsafeBytes { payload in
                    shared = pieces.contains { $0.baseAddress == payload.baseAddress && $0.count == payload.count }
                }
            }
            #expect(joined == expected, "payload \(payload)")
            #expect(shared, "payload \(payload): the piece is the caller's memory")
        }
    }
}
