import StrataFormat
import StrataRecords
import StrataSchema

/// What a custom stage does with a record its transform rejects (throws on).
public enum RejectedRecordPolicy: Sendable, Equatable {
    /// The stage fails and the store is left as it was (the default): nothing is lost, and
    /// the failure report names the record.
    case failStage
    /// The record is kept in the store's quarantine — its old bytes, entity, identifier, stage
    /// and the error — and the stage goes on without it. `Store.quarantinedRecords()` lists
    /// them; each can be read back as the old version's type.
    case quarantine
}

/// A record a migration's transform rejected, kept as it was (`RejectedRecordPolicy.quarantine`).
public struct QuarantinedRecord: Sendable, Equatable {
    /// The entity (its name in the old version).
    public let entity: String
    /// The record's identifier in that entity.
    public let id: UInt64
    /// The stage that rejected it.
    public let stage: String
    /// What its transform threw.
    public let reason: String
    /// The catalog version the record is read with (the stage's old version).
    package let catalogVersion: UInt32
    /// The record's stored bytes in that version.
    package let bytes: [UInt8]
    /// The quarantine's key of this entry.
    let sequence: UInt64

    /// Encodes an entry: version 1, entity, id, catalog version, stage, reason, record bytes.
    package static func encode(entity: String, id: UInt64, catalogVersion: UInt32, stage: String, reason: String, bytes: [UInt8]) -> [UInt8] {
        var writer = ByteWriter(capacity: 64 + bytes.count)
        writer.append(UInt8(1))
        for text in [entity, stage, reason] {
            let utf8 = Array(text.utf8)
            writer.append(UInt32(utf8.count))
            writer.append(bytes: utf8)
        }
        writer.append(id)
        writer.append(catalogVersion)
        writer.append(UInt32(bytes.count))
        writer.append(bytes: bytes)
        return writer.bytes
    }

    /// Decodes an entry.
    /// - Throws: `StrataError.corruption` for bytes that are not one.
    package init(sequence: UInt64, entry: [UInt8]) throws {
        do {
            (entity, stage, reason, id, catalogVersion, bytes) = try entry.withUnsafeBytes { raw in
                var reader = ByteReader(raw)
                guard try reader.read(UInt8.self, "entry version") == 1 else { throw FormatError("unknown quarantine entry version", at: 0) }
                var texts: [String] = []
                for what in ["entity", "stage", "reason"] {
                    let length = Int(try reader.read(UInt32.self, "\(what) length"))
                    guard length <= reader.remaining else { throw FormatError("\(what) of \(length) bytes, \(reader.remaining) left", at: reader.position) }
                    texts.append(String(decoding: try reader.readBytes(length, what), as: UTF8.self))
                }
                let id = try reader.read(UInt64.self, "record id")
                let version = try reader.read(UInt32.self, "catalog version")
                let length = Int(try reader.read(UInt32.self, "record length"))
                guard length == reader.remaining else { throw FormatError("record of \(length) bytes, \(reader.remaining) left", at: reader.position) }
                return (texts[0], texts[1], texts[2], id, version, try reader.readBytes(length, "record"))
            }
        } catch {
            throw StrataError.corruption(file: "quarantine entry \(sequence)", offset: 0, reason: "\(error)")
        }
        self.sequence = sequence
    }
}
